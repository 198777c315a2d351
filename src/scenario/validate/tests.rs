//! Scenario validation: every bad input names its line and column.

use super::super::{parse, Mode};
use crate::gate::{Bound, Figure};
use crate::load::pick::Fanout;
use crate::load::schedule::{Shape, Stage};
use reference_api::{Policy, Rate};
use std::time::Duration;

mod external;
mod faults;

const GOOD: &str = r#"
name = "demo"
duration = "5s"
seed = 7

[policy]
algorithm = "sliding_log"
limit = 10
window = "2s"

[cluster]
replicas = 3

[load]
rate = 200
keys = 4

[[arms]]
name = "single"
mode = "local"
replicas = 1
[arms.expect]
max_definite_violations = 0
max_over_admission_ratio = 1.05

[[arms]]
name = "local"
mode = "local"
[arms.expect]
min_over_admission_ratio = 2.5
"#;

fn error_of(text: &str) -> String {
    parse("s.toml", text).unwrap_err().to_string()
}

#[test]
fn a_good_scenario_becomes_engine_types() {
    let s = parse("s.toml", GOOD).unwrap();
    assert_eq!(s.name, "demo");
    assert_eq!(s.duration, Duration::from_secs(5));
    assert_eq!(s.seed, 7);
    assert_eq!(
        s.policy,
        Policy::SlidingLog {
            limit: 10,
            window_us: 2_000_000
        }
    );
    assert_eq!(s.load.shape, Shape::Constant { rate: 200.0 });
    assert_eq!(s.load.keys, 4);
    assert_eq!(s.arms.len(), 2);
    assert_eq!(s.arms[0].replicas, 1);
    assert_eq!(s.arms[1].replicas, 3, "arms inherit [cluster] replicas");
    assert_eq!(s.arms[1].mode, Mode::Local);
    assert_eq!(s.arms[1].fanout, Fanout::RoundRobin);
    assert_eq!(s.arms[1].key_header, "X-Customer-Id");
    let e = &s.arms[1].expect[0];
    assert_eq!(
        (e.figure, e.bound, e.value),
        (Figure::OverAdmissionRatio, Bound::AtLeast, 2.5)
    );
}

#[test]
fn a_misspelled_key_names_line_column_and_the_expected_keys() {
    let text = GOOD.replace("rate = 200", "rte = 200");
    let e = error_of(&text);
    assert!(e.starts_with("s.toml:15:1: unknown field `rte`"), "{e}");
    assert!(e.contains("expected"), "{e}");
}

#[test]
fn a_misspelled_expectation_is_an_error() {
    let text = GOOD.replace("max_definite_violations", "max_definite_violation");
    let e = error_of(&text);
    assert!(
        e.starts_with("s.toml:23:1: unknown field `max_definite_violation`"),
        "{e}"
    );
}

#[test]
fn bad_durations_point_at_the_value() {
    let e = error_of(&GOOD.replace("duration = \"5s\"", "duration = \"5\""));
    assert!(
        e.starts_with("s.toml:3:12: \"5\": expected a duration"),
        "{e}"
    );
    let e = error_of(&GOOD.replace("window = \"2s\"", "window = \"2 fortnights\""));
    assert!(e.starts_with("s.toml:9:10:"), "{e}");
}

#[test]
fn wrong_types_say_what_was_expected() {
    let e = error_of(&GOOD.replace("limit = 10", "limit = \"ten\""));
    assert!(e.starts_with("s.toml:8:9:"), "{e}");
    assert!(e.contains("invalid type"), "{e}");
}

#[test]
fn impossible_values_are_rejected() {
    let e = error_of(&GOOD.replace("replicas = 3", "replicas = 0"));
    assert!(
        e.starts_with("s.toml:12:12: replicas must be between 1 and 64, got 0"),
        "{e}"
    );
    let e = error_of(&GOOD.replace("rate = 200", "rate = -5"));
    assert!(e.starts_with("s.toml:15:8: rate must be above 0"), "{e}");
    let e = error_of(&GOOD.replace("limit = 10", "limit = 0"));
    assert!(e.contains("limit must be between 1"), "{e}");
    let e = error_of(&GOOD.replace(
        "max_over_admission_ratio = 1.05",
        "max_over_admission_ratio = -1.0",
    ));
    assert!(e.contains("at least 0"), "{e}");
}

#[test]
fn parameters_must_fit_the_algorithm() {
    let e = error_of(&GOOD.replace("window = \"2s\"", "window = \"2s\"\nburst = 3"));
    assert!(
        e.contains("\"burst\" is not a parameter of sliding_log"),
        "{e}"
    );
    let e = error_of(&GOOD.replace("limit = 10\n", ""));
    assert!(e.contains("sliding_log needs \"limit\""), "{e}");
    let e = error_of(&GOOD.replace("sliding_log", "leaky"));
    assert!(
        e.starts_with("s.toml:7:13: unknown algorithm \"leaky\""),
        "{e}"
    );
}

#[test]
fn every_algorithm_parses_its_parameters() {
    let with = |policy: &str| {
        let start = GOOD.find("[policy]").unwrap();
        let end = GOOD.find("[cluster]").unwrap();
        let text = format!("{}[policy]\n{policy}\n\n{}", &GOOD[..start], &GOOD[end..]);
        parse("s.toml", &text).map(|s| s.policy)
    };
    assert_eq!(
        with("algorithm = \"token_bucket\"\ncapacity = 5\nrefill = \"10/1s\"").unwrap(),
        Policy::TokenBucket {
            capacity: 5,
            refill: Rate {
                count: 10,
                per_us: 1_000_000
            }
        }
    );
    assert_eq!(
        with("algorithm = \"gcra\"\nrate = \"100/m\"\nburst = 2").unwrap(),
        Policy::Gcra {
            rate: Rate {
                count: 100,
                per_us: 60_000_000
            },
            burst: 2
        }
    );
    assert_eq!(
        with("algorithm = \"sliding_window\"\nlimit = 4\nwindow = \"1s\"\nsegments = 4").unwrap(),
        Policy::SlidingWindow {
            limit: 4,
            window_us: 1_000_000,
            segments: 4
        }
    );
    assert!(
        with("algorithm = \"sliding_window\"\nlimit = 4\nwindow = \"1s\"\nsegments = 7")
            .unwrap_err()
            .to_string()
            .contains("equal whole-microsecond segments")
    );
    assert!(with("algorithm = \"gcra\"\nrate = \"fast\"\nburst = 2").is_err());
}

#[test]
fn arms_need_unique_safe_names_and_known_modes() {
    let e = error_of(&GOOD.replace("name = \"local\"", "name = \"single\""));
    assert!(e.contains("arm \"single\" is defined twice"), "{e}");
    let e = error_of(&GOOD.replace("name = \"local\"", "name = \"../x\""));
    assert!(e.contains("arm name \"../x\""), "{e}");
    let e = error_of(&GOOD.replace(
        "mode = \"local\"\nreplicas = 1",
        "mode = \"global\"\nreplicas = 1",
    ));
    assert!(e.starts_with("s.toml:20:8: unknown mode \"global\""), "{e}");
}

#[test]
fn broken_toml_is_located_too() {
    let e = error_of("name = \"x\"\nduration = \n");
    assert!(e.starts_with("s.toml:2:"), "{e}");
    let e = error_of("name = \"x\"\n");
    assert!(e.contains("missing field"), "{e}");
}

#[test]
fn arms_may_patch_or_replace_the_policy() {
    let text = GOOD.replace(
        "[[arms]]\nname = \"local\"\nmode = \"local\"\n",
        "[[arms]]\nname = \"local\"\nmode = \"local\"\n[arms.policy]\nlimit = 20\n\n\
         [[arms]]\nname = \"bucket\"\nmode = \"redis_lua\"\n[arms.policy]\nalgorithm = \"token_bucket\"\ncapacity = 3\nrefill = \"1/s\"\n",
    );
    let s = parse("s.toml", &text).unwrap();
    assert_eq!(
        s.arms[0].policy, s.policy,
        "no [arms.policy]: the scenario's"
    );
    assert_eq!(
        s.arms[1].policy,
        Policy::SlidingLog {
            limit: 20,
            window_us: 2_000_000
        }
    );
    assert_eq!(
        s.arms[2].policy,
        Policy::TokenBucket {
            capacity: 3,
            refill: Rate {
                count: 1,
                per_us: 1_000_000
            }
        }
    );
    let bad = text.replace("limit = 20", "burst = 2");
    assert!(error_of(&bad).contains("\"burst\" is not a parameter of sliding_log"));
}

#[test]
fn redis_arms_take_a_clock_skews_and_an_error_policy() {
    use reference_api::config::{ClockSource, OnError};
    let text = GOOD
        .replace("replicas = 3", "replicas = 3\nclock_skew = [\"0ms\", \"+400ms\", \"-400ms\"]")
        .replace(
            "name = \"local\"\nmode = \"local\"",
            "name = \"local\"\nmode = \"redis_lua\"\nclock = \"redis\"\non_redis_error = \"fail_closed\"",
        );
    let s = parse("s.toml", &text).unwrap();
    let arm = &s.arms[1];
    assert_eq!(arm.mode, Mode::RedisLua);
    assert_eq!(arm.clock, ClockSource::Redis);
    assert_eq!(arm.on_redis_error, OnError::FailClosed);
    assert_eq!(arm.clock_skew_us, [0, 400_000, -400_000]);
    assert!(arm.clocks_aligned(), "Redis' clock ignores the skews");
    assert_eq!(s.arms[0].on_redis_error, OnError::FailOpen, "the default");
    assert!(s.arms[0].clocks_aligned(), "one replica, and its skew is 0");
    assert_eq!(s.redis.timeout, Duration::from_millis(50));
    assert_eq!(s.redis.url, None);

    let e = error_of(&text.replace("mode = \"redis_lua\"", "mode = \"local\""));
    assert!(
        e.contains("clock = \"redis\" needs mode redis_naive or redis_lua"),
        "{e}"
    );
    let e = error_of(&text.replace("\"+400ms\"", "\"+400 parsecs\""));
    assert!(e.contains("expected an offset"), "{e}");
    let e = error_of(&text.replace("fail_closed", "fail_sideways"));
    assert!(e.contains("expected fail_open or fail_closed"), "{e}");
    let e = error_of(&format!("{text}\n[redis]\nurl = \"http://x\"\n"));
    assert!(e.contains("expected a url like"), "{e}");
}

#[test]
fn redis_naive_only_implements_three_algorithms() {
    let text = GOOD
        .replace(
            "algorithm = \"sliding_log\"\nlimit = 10\nwindow = \"2s\"",
            "algorithm = \"gcra\"\nrate = \"5/s\"\nburst = 2",
        )
        .replace(
            "name = \"local\"\nmode = \"local\"",
            "name = \"local\"\nmode = \"redis_naive\"",
        );
    let e = error_of(&text);
    assert!(
        e.contains("redis_naive implements sliding_log, fixed_window and token_bucket, not gcra"),
        "{e}"
    );
}

#[test]
fn schedules_take_their_own_keys() {
    let with = |load: &str| {
        let text = GOOD.replace("rate = 200\nkeys = 4\n", load);
        parse("s.toml", &text).map(|s| s.load.shape)
    };
    assert_eq!(
        with("schedule = \"poisson\"\nrate = 50\n").unwrap(),
        Shape::Poisson { rate: 50.0 }
    );
    assert_eq!(
        with("schedule = \"stages\"\n[[load.stages]]\ntarget = 100\nduration = \"2s\"\n").unwrap(),
        Shape::Stages {
            from: 0.0,
            stages: vec![Stage {
                target: 100.0,
                over: Duration::from_secs(2)
            }]
        }
    );
    match with("schedule = \"bursts\"\nburst = 30\n").unwrap() {
        Shape::Bursts {
            per_edge,
            spread,
            window,
        } => {
            assert_eq!((per_edge, spread), (30, Duration::from_millis(20)));
            assert_eq!(window, Duration::from_secs(2), "the policy's window");
        }
        other => panic!("{other:?}"),
    }
    let e = with("schedule = \"bursts\"\nrate = 5\nburst = 3\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"rate\" does not apply to the bursts schedule"),
        "{e}"
    );
    let e = with("schedule = \"poisson\"\n").unwrap_err().to_string();
    assert!(e.contains("needs \"rate\""), "{e}");
    let e = with("schedule = \"jittery\"\nrate = 5\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown schedule \"jittery\""), "{e}");
    let e = with("rate = 5\nburst = 3\n").unwrap_err().to_string();
    assert!(
        e.contains("\"burst\" does not apply to the constant schedule"),
        "{e}"
    );
}

#[test]
fn key_distributions_and_fanouts_parse_with_their_parameters() {
    use super::super::KeyDistribution;
    let with = |extra: &str| {
        let text = GOOD.replace("keys = 4\n", &format!("keys = 4\n{extra}\n"));
        parse("s.toml", &text).map(|s| (s.load.key_distribution, s.arms[1].fanout))
    };
    assert_eq!(
        with("").unwrap(),
        (KeyDistribution::Uniform, Fanout::RoundRobin)
    );
    assert_eq!(
        with("key_distribution = \"zipf\"\nzipf_s = 1.2").unwrap().0,
        KeyDistribution::Zipf { s: 1.2 }
    );
    assert_eq!(
        with("key_distribution = \"hot\"").unwrap().0,
        KeyDistribution::Hot { share: 0.5 }
    );
    assert_eq!(with("fanout = \"sticky\"").unwrap().1, Fanout::Sticky);
    assert_eq!(with("fanout = \"single\"").unwrap().1, Fanout::Single);
    let e = with("key_distribution = \"hot\"\nhot_share = 1.5")
        .unwrap_err()
        .to_string();
    assert!(e.contains("hot_share must be between 0 and 1"), "{e}");
    let e = with("zipf_s = 2.0").unwrap_err().to_string();
    assert!(
        e.contains("\"zipf_s\" does not apply to key_distribution = \"uniform\""),
        "{e}"
    );
    let e = with("key_distribution = \"pareto\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown key_distribution \"pareto\""), "{e}");
    let e = with("fanout = \"nearest\"").unwrap_err().to_string();
    assert!(
        e.contains("expected round_robin, random, sticky or single"),
        "{e}"
    );
}

#[test]
fn closed_loop_takes_workers_and_a_think_time() {
    let with = |load: &str| {
        let text = GOOD.replace("rate = 200\nkeys = 4\n", load);
        parse("s.toml", &text).map(|s| s.load.shape)
    };
    assert_eq!(
        with("schedule = \"closed\"\nconcurrency = 8\nthink_time = \"5ms\"\n").unwrap(),
        Shape::Closed {
            concurrency: 8,
            think: Duration::from_millis(5)
        }
    );
    assert_eq!(
        with("schedule = \"closed\"\nconcurrency = 1\n").unwrap(),
        Shape::Closed {
            concurrency: 1,
            think: Duration::ZERO
        }
    );
    let e = with("schedule = \"closed\"\n").unwrap_err().to_string();
    assert!(e.contains("needs \"concurrency\""), "{e}");
    let e = with("schedule = \"closed\"\nconcurrency = 2\nrate = 5\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"rate\" does not apply to the closed schedule"),
        "{e}"
    );
    let e = with("rate = 5\nconcurrency = 2\n").unwrap_err().to_string();
    assert!(
        e.contains("\"concurrency\" does not apply to the constant schedule"),
        "{e}"
    );
}

#[test]
fn an_inline_policy_is_a_policy_table_on_one_line() {
    use crate::scenario::inline_policy;
    assert_eq!(
        inline_policy(r#"algorithm = "sliding_log", limit = 10, window = "1s""#)
            .unwrap()
            .0,
        Policy::SlidingLog {
            limit: 10,
            window_us: 1_000_000
        }
    );
    assert_eq!(
        inline_policy(r#"algorithm = "token_bucket", capacity = 5, refill = "10/1s""#)
            .unwrap()
            .0,
        Policy::TokenBucket {
            capacity: 5,
            refill: Rate {
                count: 10,
                per_us: 1_000_000
            }
        }
    );
    for (bad, says) in [
        (r#"limit = 10, window = "1s""#, "name the algorithm"),
        (
            r#"algorithm = "sliding_log", limit = 10"#,
            "needs \"window\"",
        ),
        (
            r#"algorithm = "sliding_log", limit = 10, window = "1s", burst = 2"#,
            "\"burst\"",
        ),
        (r#"algorithm = "sliding_log", limt = 10"#, "limt"),
        ("algorithm = sliding_log", "--policy"),
    ] {
        let e = inline_policy(bad).unwrap_err().to_string();
        assert!(e.starts_with("--policy: "), "{e}");
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn the_aspnetcore_preset_states_each_limiter_with_its_heartbeat() {
    use crate::scenario::{inline_policy, PolicyTiming};
    let (p, t) = inline_policy(
        r#"preset = "aspnetcore", limiter = "sliding_window", permit_limit = 10, window = "2s", segments_per_window = 4"#,
    )
    .unwrap();
    assert_eq!(
        p,
        Policy::SlidingWindow {
            limit: 10,
            window_us: 2_000_000,
            segments: 4
        }
    );
    assert_eq!(
        t,
        PolicyTiming {
            lateness_us: 100_000,
            chunked_refill: false,
            one_clock: true
        }
    );
    let (p, t) = inline_policy(
        r#"preset = "aspnetcore", limiter = "token_bucket", token_limit = 10, tokens_per_period = 5, replenishment_period = "1s", replenish_lateness = "20ms""#,
    )
    .unwrap();
    assert_eq!(
        p,
        Policy::TokenBucket {
            capacity: 10,
            refill: Rate {
                count: 5,
                per_us: 1_000_000
            }
        }
    );
    assert_eq!(
        t,
        PolicyTiming {
            lateness_us: 20_000,
            chunked_refill: true,
            one_clock: true
        }
    );
    let (_, t) = inline_policy(
        r#"algorithm = "fixed_window", limit = 3, window = "1s", replenish_lateness = "5ms""#,
    )
    .unwrap();
    assert_eq!((t.lateness_us, t.one_clock), (5_000, false));
    for (bad, says) in [
        (
            r#"preset = "aspnetcore", permit_limit = 10, window = "1s""#,
            "needs \"limiter\"",
        ),
        (
            r#"preset = "aspnetcore", limiter = "fixed_window", permit_limit = 10"#,
            "needs \"window\"",
        ),
        (
            r#"preset = "aspnetcore", limiter = "fixed_window", permit_limit = 10, window = "1s", token_limit = 3"#,
            "\"token_limit\" is not a parameter",
        ),
        (
            r#"preset = "aspnetcore", limiter = "concurrency", permit_limit = 10"#,
            "unknown ASP.NET Core limiter",
        ),
    ] {
        let e = inline_policy(bad).unwrap_err().to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}
