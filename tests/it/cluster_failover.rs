//! A Redis Cluster loses a master mid-run, through the real binary: 3
//! masters with a replica each, the first master killed and its replica
//! promoted (CLUSTER FAILOVER TAKEOVER). The cluster client follows: the
//! promoted node serves scripts after it, and the arm keeps deciding. The
//! verdict stays sound: a definite violation, if any increment was lost in
//! flight, can only be on a key of the killed master's slots and after the
//! kill. No node survives the run.

use crate::common;

use common::{arm, summary, text, wait_no_replicas};
use std::time::Duration;

const FAILOVER: &str = r#"
name = "cluster-failover-small"
duration = "4s"
seed = 5

[redis]
topology = "cluster"
masters = 3
replicas_per_master = 1
# A timed-out decision is a fallback reject: keep a busy test machine from
# turning a slow moment into one.
timeout = "1s"

[policy]
algorithm = "sliding_log"
limit = 5
window = "1s"

[cluster]
replicas = 2

[load]
rate = 300
keys = 30
fanout = "round_robin"
timeout = "3s"

[[faults]]
at = "1500ms"
for = "1s"
action = "redis_failover"

[[arms]]
name = "lua"
mode = "redis_lua"
on_redis_error = "fail_closed"
"#;

/// Redis Cluster's key hash: CRC16-XMODEM (Redis' cluster specification).
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The slot of a customer's keys: rlbench hash-tags them `{customer}`.
fn slot(customer: &str) -> u16 {
    crc16(customer.as_bytes()) % 16_384
}

#[test]
fn the_slot_hash_is_redis_own() {
    // The specification's test vector, and two slots `CLUSTER KEYSLOT`
    // gives on Redis 7.
    assert_eq!(crc16(b"123456789"), 0x31C3);
    assert_eq!(slot("foo"), 12182);
    assert_eq!(slot("customer-0000"), slot("customer-0000"));
}

#[test]
fn a_killed_master_is_replaced_by_its_replica_and_the_verdict_stays_sound() {
    let dir = tempfile::tempdir().unwrap();
    let (out, pid) = common::run_scenario(dir.path(), FAILOVER, &[], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let s = summary(&dir.path().join("out"));
    let lua = arm(&s, "lua");

    let fault = &lua["faults"][0];
    assert_eq!(fault["applied"], true, "{fault}");
    assert_eq!(fault["fault"], "redis_failover");
    let (from_s, to_s) = (
        fault["from_s"].as_f64().unwrap(),
        fault["to_s"].as_f64().unwrap(),
    );
    // From the kill to the promotion: a TAKEOVER, not a node timeout.
    assert!(
        (1.4..2.5).contains(&from_s) && to_s >= from_s && to_s - from_s < 1.0,
        "{fault}"
    );

    // Read after the load: the killed master is gone, so five nodes — two
    // masters, the promoted replica, two replicas that stayed replicas.
    let nodes = lua["redis"]["nodes"].as_array().expect("redis nodes");
    assert_eq!(nodes.len(), 5, "{}", lua["redis"]);
    let scripts: Vec<u64> = nodes
        .iter()
        .map(|n| n["script_calls"].as_u64().unwrap())
        .collect();
    // Masters first, then replicas in their masters' order: the promoted
    // node (the first master's replica) ran scripts, which a replica
    // cannot — decisions reached it after the failover.
    assert!(scripts[0] > 0 && scripts[1] > 0, "{scripts:?}");
    assert!(
        scripts[2] > 0,
        "the promoted node served nothing: {scripts:?}"
    );
    assert_eq!(&scripts[3..], &[0, 0], "replicas run no scripts");

    // The arm kept deciding after the failover, on every master's keys.
    let phases = lua["phases"].as_array().unwrap();
    let after = phases.iter().find(|p| p["name"] == "after 1").unwrap();
    assert!(after["admitted"].as_u64().unwrap() > 100, "{after}");
    assert_eq!(lua["requests"]["errors"], 0, "{}", lua["requests"]);

    // Sound: every proven violation is on a key of the killed master's
    // slots (0-5460 of 3 even ranges), proven over a span reaching past
    // the kill; on the other masters' keys nothing was lost.
    let witnesses = lua["correctness"]["witnesses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for w in witnesses.iter().filter(|w| w["kind"] == "violation") {
        let key = w["key"].as_str().unwrap();
        assert!(
            slot(key) <= 5460,
            "a violation on {key}, not the killed master's: {w}"
        );
        assert!(
            w["to_s"].as_f64().unwrap() >= from_s,
            "a violation before the kill: {w}"
        );
    }
    let before = phases.iter().find(|p| p["name"] == "before").unwrap();
    assert_eq!(before["definite_violations"], 0, "{before}");

    let table = text(&out.stdout);
    assert!(
        table.contains("the replica was promoted")
            && table.contains("ms after the primary was killed"),
        "{table}"
    );
    let left = wait_no_replicas(pid, Duration::from_secs(5));
    assert!(left.is_empty(), "left running: {left:?}");
}
