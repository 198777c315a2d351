//! Scenario validation: every bad input names its line and column.

use super::super::{parse, Mode};
use crate::gate::{Bound, Figure};
use crate::load::pick::Fanout;
use crate::load::schedule::Shape;
use reference_api::{Policy, Rate};
use std::time::Duration;

mod distributed;
mod external;
mod faults;
mod load;
mod metrics;
mod policy;
mod redis;
mod spoof;
mod target_kinds;

pub(super) const GOOD: &str = r#"
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
    // Below the trace's microsecond it would be a window of 0.
    let e = error_of(&GOOD.replace("window = \"2s\"", "window = \"1ns\""));
    assert!(e.contains("window \"1ns\": must be at least 1 µs"), "{e}");
    assert!(parse(
        "s.toml",
        &GOOD.replace("window = \"2s\"", "window = \"1us\"")
    )
    .is_ok());
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
fn clock_rates_are_simulated_per_arm_and_declared_in_checks() {
    let text = GOOD.replace(
        "name = \"local\"\nmode = \"local\"",
        "name = \"local\"\nmode = \"local\"\nclock_rate_ppm = -5000",
    );
    let s = parse("s.toml", &text).unwrap();
    assert_eq!(s.arms[1].clock_rate_ppm, -5_000);
    assert_eq!(s.arms[0].clock_rate_ppm, 0);
    assert_eq!(s.checks.clock_rate_ppm, None);
    let e = error_of(&text.replace("-5000", "200000"));
    assert!(
        e.contains("clock_rate_ppm must be between -100000 and 100000, got 200000"),
        "{e}"
    );
    let declared = format!("{GOOD}\n[checks]\nclock_rate_ppm = 700\n");
    assert_eq!(
        parse("s.toml", &declared).unwrap().checks.clock_rate_ppm,
        Some(700)
    );
    let e = error_of(&declared.replace("= 700", "= -1"));
    assert!(
        e.contains("clock_rate_ppm must be between 0 and 100000"),
        "{e}"
    );
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
fn arms_choose_which_rate_limit_headers_the_replicas_send() {
    use reference_api::config::HeaderStyle;
    let s = parse("s.toml", GOOD).unwrap();
    assert!(
        s.arms
            .iter()
            .all(|a| a.ratelimit_headers == HeaderStyle::Ietf),
        "the default"
    );
    for (value, style) in [
        ("ietf", HeaderStyle::Ietf),
        ("x_ratelimit", HeaderStyle::XRateLimit),
        ("both", HeaderStyle::Both),
    ] {
        let text = GOOD.replace(
            "name = \"local\"\nmode = \"local\"",
            &format!("name = \"local\"\nmode = \"local\"\nratelimit_headers = \"{value}\""),
        );
        let s = parse("s.toml", &text).unwrap();
        assert_eq!(s.arms[1].ratelimit_headers, style, "{value}");
        assert_eq!(s.arms[0].ratelimit_headers, HeaderStyle::Ietf, "{value}");
    }
    let text = GOOD.replace(
        "name = \"local\"\nmode = \"local\"",
        "name = \"local\"\nmode = \"local\"\nratelimit_headers = \"x-ratelimit\"",
    );
    let e = error_of(&text);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains(
            "s.toml:29:21: unknown ratelimit_headers \"x-ratelimit\", expected ietf, x_ratelimit or both"
        ),
        "{e}"
    );
    // A value of the wrong type is pointed at, as every key's is.
    let e = error_of(&text.replace("\"x-ratelimit\"", "true"));
    assert!(
        e.contains("s.toml:29:21: invalid type: boolean `true`, expected a string"),
        "{e}"
    );
}

/// Every policy `rlbench probe` may propose (analyze::fit) is written as
/// a scenario reads it back: the same policy, counting rejects or not.
#[test]
fn policies_the_fit_writes_read_back_as_they_were() {
    use crate::analyze::fit::{candidates, Glance};
    for c in candidates(Glance {
        burst: 10,
        per_second: 2.0,
    })
    .into_iter()
    .enumerate()
    .filter(|(i, c)| i % 37 == 0 || c.chunked)
    .map(|(_, c)| c)
    {
        let text = c.inline();
        let (policy, timing) =
            crate::scenario::inline_policy(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(policy, c.policy, "{text}");
        assert_eq!(timing.count_rejected, c.count_rejected, "{text}");
        assert_eq!(timing.chunked_refill, c.chunked, "{text}");
        assert!(!timing.chunks_on_epoch, "{text}");
    }
}
