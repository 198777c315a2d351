//! A real primary and replica, and a failover mid-run, through the real
//! binary: the replication link held for a second, the primary killed, the
//! replica promoted. The plain Lua arm admits again what the promoted
//! replica never received — definite violations after the failover, with
//! witnesses, and the fault's sentence counts the admits in the lag; the
//! arm that WAITs for its replica stays exact. No node survives the run.

use crate::common;

use common::{arm, summary, text, wait_no_replicas};
use std::time::Duration;

const FAILOVER: &str = r#"
name = "failover-small"
duration = "4s"
seed = 4

[redis]
topology = "replicated"
# A timed-out decision is a fallback reject either way; a busy test
# machine's slow moment should not decide what is measured.
timeout = "200ms"

[policy]
algorithm = "sliding_log"
limit = 5
window = "2s"

[cluster]
replicas = 2

[load]
rate = 200
keys = 10
fanout = "round_robin"

[[faults]]
# The first admits (at 0–0.25 s) leave the window at 2 s: the lag from 2 s
# to 3 s admits again, and the promoted replica forgets those admits.
at = "2s"
for = "1s"
action = "redis_failover"
replication_delay = "1s"

[[arms]]
name = "plain"
mode = "redis_lua"
on_redis_error = "fail_closed"
[arms.expect]
min_definite_violations = 1

[[arms]]
name = "wait"
mode = "redis_lua"
on_redis_error = "fail_closed"
wait_replicas = 1
[arms.expect]
max_definite_violations = 0
"#;

#[test]
fn a_failover_forgets_what_was_not_replicated_and_wait_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let (out, pid) = common::run_scenario(dir.path(), FAILOVER, &[], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let s = summary(&dir.path().join("out"));

    let plain = arm(&s, "plain");
    let fault = &plain["faults"][0];
    assert_eq!(fault["applied"], true, "{fault}");
    assert_eq!(fault["fault"], "redis_failover (replication held 1s)");
    // The window is the lag: from the hold to the promotion, about 1 s.
    let held = fault["to_s"].as_f64().unwrap() - fault["from_s"].as_f64().unwrap();
    assert!((0.9..3.0).contains(&held), "{fault}");
    let phases = plain["phases"].as_array().unwrap();
    let phase = |name: &str| phases.iter().find(|p| p["name"] == name).unwrap();
    // Admits in the lag (keys whose windows freed up meanwhile)...
    let lost = phase("during 1")["admitted"].as_u64().unwrap();
    assert!(lost > 0, "{}", plain["phases"]);
    // ...admitted again after the promotion: proven violations there.
    let after = phase("after 1")["definite_violations"].as_u64().unwrap();
    assert!(after > 0, "{}", plain["phases"]);
    assert_eq!(phase("before")["definite_violations"], 0);
    let witnesses = plain["correctness"]["witnesses"].as_array().unwrap();
    let to_s = fault["to_s"].as_f64().unwrap();
    assert!(
        witnesses
            .iter()
            .any(|w| w["kind"] == "violation" && w["to_s"].as_f64().unwrap() >= to_s),
        "a violation proven after the failover: {witnesses:?}"
    );
    let table = text(&out.stdout);
    assert!(
        table.contains(&format!("{lost} admits in the replication lag")),
        "{table}"
    );

    let wait = arm(&s, "wait");
    assert_eq!(wait["correctness"]["definite_violations"], 0, "{wait}");
    // Every replica admits: waiting costs rejects while nothing is
    // acknowledged, never the whole run (a WAIT that missed its budget once
    // held every decision behind it on a shared connection; see
    // reference-api's acks.rs).
    for r in wait["per_replica"].as_array().unwrap() {
        assert!(
            r["admitted"].as_u64().unwrap() > 0,
            "{}",
            wait["per_replica"]
        );
    }
    // While nothing was acknowledged it rejected: the price of waiting.
    let rejected_in_lag = wait["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "during 1")
        .unwrap()["rejected"]
        .as_u64()
        .unwrap();
    assert!(rejected_in_lag > 0, "{}", wait["phases"]);

    let left = wait_no_replicas(pid, Duration::from_secs(5));
    assert!(left.is_empty(), "left running: {left:?}");
}
