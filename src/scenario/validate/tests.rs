//! Scenario validation: every bad input names its line and column.

use super::super::{parse, Mode};
use crate::gate::{Bound, Figure};
use crate::load::pick::Fanout;
use crate::load::schedule::Shape;
use reference_api::{Policy, Rate};
use std::time::Duration;

mod external;
mod faults;
mod load;
mod policy;

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
fn redis_topology_is_single_or_a_cluster_of_masters() {
    use crate::stack::Managed;
    use reference_api::config::Topology;
    let text = GOOD.replace(
        "name = \"local\"\nmode = \"local\"",
        "name = \"local\"\nmode = \"redis_lua\"",
    );
    let s = parse("s.toml", &text).unwrap();
    assert_eq!(s.redis.topology, Topology::Single, "the default");
    assert_eq!(s.managed_redis(&s.arms[1]), Some(Managed::Single));
    assert_eq!(s.managed_redis(&s.arms[0]), None, "a local arm needs none");

    let with = |redis: &str| format!("{text}\n[redis]\n{redis}\n");
    let s = parse("s.toml", &with("topology = \"cluster\"")).unwrap();
    assert_eq!(s.redis.topology, Topology::Cluster);
    assert_eq!(
        s.managed_redis(&s.arms[1]),
        Some(Managed::Cluster { masters: 3 }),
        "three masters unless told"
    );
    let s = parse("s.toml", &with("topology = \"cluster\"\nmasters = 1")).unwrap();
    assert_eq!(
        s.managed_redis(&s.arms[1]),
        Some(Managed::Cluster { masters: 1 })
    );
    let s = parse(
        "s.toml",
        &with("topology = \"cluster\"\nurl = \"redis://127.0.0.1:7000\""),
    )
    .unwrap();
    assert_eq!(
        s.managed_redis(&s.arms[1]),
        None,
        "the cluster at url is used"
    );

    let e = error_of(&with("topology = \"ring\""));
    assert!(
        e.contains("topology \"ring\": expected \"single\", \"cluster\" or \"replicated\""),
        "{e}"
    );
    assert!(e.contains("s.toml:"), "{e}");
    let e = error_of(&with("masters = 3"));
    assert!(e.contains("only a cluster has masters"), "{e}");
    let e = error_of(&with("topology = \"cluster\"\nmasters = 17"));
    assert!(
        e.contains("masters must be between 1 and 16, got 17"),
        "{e}"
    );
    let e = error_of(&with("topology = \"cluster\"\nmasters = 0"));
    assert!(e.contains("between 1 and 16, got 0"), "{e}");
    let e = error_of(&with(
        "topology = \"cluster\"\nurl = \"redis://127.0.0.1:7000\"\nmasters = 3",
    ));
    assert!(e.contains("the cluster at [redis] url has its own"), "{e}");
    let e = error_of(&format!(
        "{}\n[[faults]]\nat = \"1s\"\nfor = \"1s\"\naction = \"redis_down\"\n",
        with("topology = \"cluster\"")
    ));
    assert!(
        e.contains("a cluster's masters cannot be stopped yet"),
        "{e}"
    );
    let e = error_of(&format!(
        "{}\n[[faults]]\nat = \"1s\"\nfor = \"1s\"\naction = \"redis_latency\"\ndelay = \"5ms\"\n",
        with("topology = \"cluster\"")
    ));
    assert!(e.contains("it is for topology = \"single\""), "{e}");
}

#[test]
fn redis_figures_are_bounded_only_on_redis_arms() {
    let text = GOOD.replace(
        "min_over_admission_ratio = 2.5",
        "min_over_admission_ratio = 2.5\nmax_redis_bytes_per_key = 500",
    );
    let e = error_of(&text);
    assert!(
        e.contains("redis_* expectations need mode redis_naive or redis_lua (this arm is local)"),
        "{e}"
    );
    assert!(e.contains("s.toml:"), "{e}");
    let s = parse(
        "s.toml",
        &text.replace(
            "name = \"local\"\nmode = \"local\"",
            "name = \"local\"\nmode = \"redis_lua\"",
        ),
    )
    .unwrap();
    assert_eq!(s.arms[1].expect.len(), 2);
    assert_eq!(s.arms[1].expect[1].figure, Figure::RedisBytesPerKey);
    assert_eq!(s.arms[1].expect[1].bound, Bound::AtMost);
    let e = error_of(
        &text
            .replace(
                "mode = \"local\"\n[arms.expect]\nmin",
                "mode = \"redis_lua\"\n[arms.expect]\nmin",
            )
            .replace(
                "max_redis_bytes_per_key = 500",
                "max_redis_bytes_per_key = -1",
            ),
    );
    assert!(
        e.contains("max_redis_bytes_per_key must be between 0 and"),
        "{e}"
    );
}

#[test]
fn a_failover_needs_a_primary_and_replica_and_waits_need_replicas() {
    use crate::faults::FaultAction;
    use crate::stack::Managed;
    let text = GOOD.replace(
        "name = \"local\"\nmode = \"local\"",
        "name = \"local\"\nmode = \"redis_lua\"",
    );
    let replicated = format!("{text}\n[redis]\ntopology = \"replicated\"\n");
    let fault = |body: &str| {
        format!("{replicated}\n[[faults]]\nat = \"1s\"\nfor = \"2s\"\naction = \"redis_failover\"\n{body}")
    };
    let s = parse("s.toml", &fault("replication_delay = \"1s\"\n")).unwrap();
    assert_eq!(s.managed_redis(&s.arms[1]), Some(Managed::Replicated));
    assert_eq!(
        s.faults[0].action,
        FaultAction::RedisFailover {
            replication_delay: Duration::from_secs(1)
        }
    );
    let s = parse("s.toml", &fault("")).unwrap();
    assert_eq!(
        s.faults[0].action,
        FaultAction::RedisFailover {
            replication_delay: Duration::ZERO
        },
        "no delay: the failover at once"
    );
    // The boundary: the whole window held.
    assert!(parse("s.toml", &fault("replication_delay = \"2s\"\n")).is_ok());
    let e = error_of(&fault("replication_delay = \"3s\"\n"));
    assert!(
        e.contains("replication_delay of at most the fault's \"for\""),
        "{e}"
    );
    let e = error_of(&fault("replication_delay = \"soon\"\n"));
    assert!(e.contains("\"soon\""), "{e}");
    let e = error_of(&fault("variant = \"pause\"\n"));
    assert!(
        e.contains("\"variant\" does not apply to redis_failover"),
        "{e}"
    );
    let e = error_of(&fault("").replace("topology = \"replicated\"", "topology = \"single\""));
    assert!(e.contains("redis_failover promotes the replica"), "{e}");
    let e = error_of(&fault("").replace(
        "topology = \"replicated\"",
        "topology = \"replicated\"\nurl = \"redis://127.0.0.1:6379\"",
    ));
    assert!(e.contains("without url"), "{e}");
    let e = error_of(&format!(
        "{replicated}\n[[faults]]\nat = \"1s\"\nfor = \"1s\"\naction = \"redis_down\"\nreplication_delay = \"1s\"\n"
    ));
    assert!(
        e.contains("\"replication_delay\" does not apply to redis_down"),
        "{e}"
    );
    let e = error_of(&format!(
        "{replicated}\n[[faults]]\nat = \"1s\"\nfor = \"1s\"\naction = \"redis_down\"\n"
    ));
    assert!(e.contains("fail over with redis_failover"), "{e}");

    // wait_replicas: Redis arms on a primary with a replica, 0 or 1.
    let waiting = |scenario: &str, n: &str| {
        scenario.replace(
            "mode = \"redis_lua\"",
            &format!("mode = \"redis_lua\"\nwait_replicas = {n}"),
        )
    };
    let s = parse("s.toml", &waiting(&replicated, "1")).unwrap();
    assert_eq!(s.arms[1].wait_replicas, 1);
    assert_eq!(s.arms[0].wait_replicas, 0);
    let e = error_of(&waiting(&replicated, "2"));
    assert!(
        e.contains("wait_replicas must be between 0 and 1, got 2"),
        "{e}"
    );
    let e = error_of(&waiting(&text, "1"));
    assert!(e.contains("topology = \"replicated\""), "{e}");
    let e = error_of(&replicated.replace(
        "name = \"single\"\nmode = \"local\"",
        "name = \"single\"\nmode = \"local\"\nwait_replicas = 1",
    ));
    assert!(
        e.contains("wait_replicas needs mode redis_naive or redis_lua"),
        "{e}"
    );
}

#[test]
fn deadline_aware_is_for_lua_arms() {
    let text = GOOD.replace(
        "name = \"local\"\nmode = \"local\"",
        "name = \"local\"\nmode = \"redis_lua\"\ndeadline_aware = true",
    );
    let s = parse("s.toml", &text).unwrap();
    assert!(s.arms[1].deadline_aware);
    assert!(!s.arms[0].deadline_aware);
    let e = error_of(&text.replace("mode = \"redis_lua\"", "mode = \"redis_naive\""));
    assert!(e.contains("deadline_aware needs mode redis_lua"), "{e}");
    let e = error_of(&text.replace("deadline_aware = true", "deadline_aware = \"yes\""));
    assert!(e.contains("s.toml:"), "{e}");
}

#[test]
fn batched_arms_lease_fixed_windows_within_one_window() {
    let fixed = GOOD
        .replace(
            "algorithm = \"sliding_log\"",
            "algorithm = \"fixed_window\"",
        )
        .replace(
            "name = \"local\"\nmode = \"local\"",
            "name = \"local\"\nmode = \"redis_batched\"\nlease = 5\nlease_ttl = \"1s\"",
        );
    let s = parse("s.toml", &fixed).unwrap();
    let arm = &s.arms[1];
    assert_eq!(arm.mode, Mode::RedisBatched);
    assert_eq!((arm.lease, arm.lease_ttl), (5, Duration::from_secs(1)));
    assert_eq!(crate::app::plan::lease_bound(arm), Some(10 + 3 * 4));
    assert_eq!(crate::app::plan::lease_bound(&s.arms[0]), None);
    // The boundary: a lease spent for the whole 2 s window is fine.
    assert!(parse(
        "s.toml",
        &fixed.replace("lease_ttl = \"1s\"", "lease_ttl = \"2s\"")
    )
    .is_ok());
    let e = error_of(&fixed.replace("lease_ttl = \"1s\"", "lease_ttl = \"3s\""));
    assert!(
        e.contains("lease_ttl of at most the policy's window"),
        "{e}"
    );
    let e = error_of(&fixed.replace("lease = 5", "lease = 0"));
    assert!(
        e.contains("lease must be between 1 and 10000, got 0"),
        "{e}"
    );
    let e = error_of(&fixed.replace(
        "algorithm = \"fixed_window\"",
        "algorithm = \"sliding_log\"",
    ));
    assert!(
        e.contains("redis_batched leases fixed_window admits, not sliding_log"),
        "{e}"
    );
    let e = error_of(&fixed.replace("mode = \"redis_batched\"", "mode = \"redis_lua\""));
    assert!(e.contains("lease needs mode redis_batched"), "{e}");
    let e = error_of(&fixed.replace("lease = 5", "lease = 5\nclock = \"redis\""));
    assert!(e.contains("spends leases on the replica's clock"), "{e}");
    let e = error_of(&GOOD.replace(
        "min_over_admission_ratio = 2.5",
        "min_over_admission_ratio = 2.5\nmax_lease_bound_violations = 0",
    ));
    assert!(
        e.contains("max_lease_bound_violations needs mode redis_batched"),
        "{e}"
    );
}
