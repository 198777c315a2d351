//! `[[faults]]` validation: each action with its own keys, in order,
//! within the run, every bad value named with its line and column.

use super::{error_of, GOOD};
use crate::scenario::parse;
use std::time::Duration;

/// GOOD with a Redis arm and `faults` appended.
fn with_faults(faults: &str) -> String {
    format!("{GOOD}\n[[arms]]\nname = \"shared\"\nmode = \"redis_lua\"\n{faults}")
}

#[test]
fn faults_parse_in_order_with_their_actions() {
    use crate::faults::{Fault, FaultAction};
    let s = parse(
        "s.toml",
        &with_faults(
            r#"
[[faults]]
at = "1s"
for = "500ms"
action = "redis_down"
[[faults]]
at = "2s"
for = "1s"
action = "redis_down"
variant = "restart"
[[faults]]
at = "3s"
for = "1s"
action = "replica_restart"
[[faults]]
at = "4s"
for = "1s"
action = "redis_latency"
delay = "20ms"
jitter = "0ms"
"#,
        ),
    )
    .unwrap();
    assert_eq!(
        s.faults,
        [
            Fault {
                at: Duration::from_secs(1),
                lasts: Duration::from_millis(500),
                action: FaultAction::RedisDown { restart: false },
            },
            Fault {
                at: Duration::from_secs(2),
                lasts: Duration::from_secs(1),
                action: FaultAction::RedisDown { restart: true },
            },
            Fault {
                at: Duration::from_secs(3),
                lasts: Duration::from_secs(1),
                action: FaultAction::ReplicaRestart { replica: 0 },
            },
            Fault {
                at: Duration::from_secs(4),
                lasts: Duration::from_secs(1),
                action: FaultAction::RedisLatency {
                    delay: Duration::from_millis(20),
                    jitter: Duration::ZERO,
                },
            },
        ]
    );
    assert!(parse("s.toml", GOOD).unwrap().faults.is_empty());
}

#[test]
fn bad_faults_say_what_and_where() {
    let fault = |body: &str| error_of(&with_faults(&format!("[[faults]]\n{body}\n")));
    // Past the end of the run; the boundary (ending exactly at it) is fine.
    let e = fault("at = \"4s\"\nfor = \"2s\"\naction = \"redis_down\"");
    assert!(e.contains("after the run"), "{e}");
    assert!(parse(
        "s.toml",
        &with_faults("[[faults]]\nat = \"4s\"\nfor = \"1s\"\naction = \"redis_down\"\n")
    )
    .is_ok());
    let e = fault("at = \"1s\"\nfor = \"1s\"\naction = \"unplug\"");
    assert!(
        e.contains("unknown action \"unplug\", expected redis_down"),
        "{e}"
    );
    let e = fault("at = \"1s\"\nfor = \"1s\"\naction = \"redis_down\"\nvariant = \"nap\"");
    assert!(e.contains("unknown variant \"nap\""), "{e}");
    let e = fault("at = \"1s\"\nfor = \"1s\"\naction = \"replica_restart\"\nvariant = \"pause\"");
    assert!(
        e.contains("\"variant\" does not apply to replica_restart"),
        "{e}"
    );
    // The single arm has one replica: replica 1 does not exist there.
    let e = fault("at = \"1s\"\nfor = \"1s\"\naction = \"replica_restart\"\nreplica = 1");
    assert!(
        e.contains("replica 1 does not exist in arm \"single\""),
        "{e}"
    );
    let e = fault("at = \"1s\"\nfor = \"1s\"\naction = \"redis_down\"\nreplica = 0");
    assert!(
        e.contains("\"replica\" does not apply to redis_down"),
        "{e}"
    );
    let e = fault("at = \"1s\"\nfor = \"1s\"\naction = \"redis_latency\"");
    assert!(e.contains("redis_latency needs \"delay\""), "{e}");
    let e = fault("at = \"1s\"\nfor = \"1s\"\naction = \"redis_down\"\ndelay = \"5ms\"");
    assert!(e.contains("\"delay\" does not apply to redis_down"), "{e}");
    let e = fault("at = \"1s\"\nfor = \"1s\"\naction = \"redis_latency\"\ndelay = \"fast\"");
    assert!(e.contains("\"fast\""), "{e}");
    let e = fault(
        "at = \"1s\"\nfor = \"1s\"\naction = \"redis_latency\"\ndelay = \"50s\"\njitter = \"20s\"",
    );
    assert!(e.contains("at most 60s"), "{e}");
    let e = fault("at = \"1s\"\nfor = \"1s\"\naction = \"clock_step\"");
    assert!(e.contains("clock_step needs \"step\""), "{e}");
    let e = fault("at = \"1s\"\nfor = \"1s\"\naction = \"clock_step\"\nstep = \"soon\"");
    assert!(e.contains("\"soon\""), "{e}");
    let e = fault("at = \"1s\"\nfor = \"1s\"\naction = \"clock_step\"\nstep = \"+2h\"");
    assert!(e.contains("at most one hour"), "{e}");
    let e = fault("at = \"1s\"\nfor = \"1s\"\naction = \"redis_down\"\nstep = \"+1s\"");
    assert!(e.contains("\"step\" does not apply to redis_down"), "{e}");
    assert_eq!(
        parse(
            "s.toml",
            &with_faults("[[faults]]\nat = \"1s\"\nfor = \"1s\"\naction = \"clock_step\"\nstep = \"-500ms\"\n")
        )
        .unwrap()
        .faults[0]
            .action,
        crate::faults::FaultAction::ClockStep {
            replica: 0,
            step_us: -500_000
        }
    );
    let e = fault("at = \"1s\"\nuntil = \"2s\"\naction = \"redis_down\"");
    assert!(e.contains("unknown field `until`"), "{e}");
    let e = error_of(&with_faults(
        "[[faults]]\nat = \"1s\"\nfor = \"2s\"\naction = \"redis_down\"\n[[faults]]\nat = \"2s\"\nfor = \"1s\"\naction = \"redis_down\"\n",
    ));
    assert!(e.contains("not overlap"), "{e}");
    let e = error_of(
        &with_faults("[[faults]]\nat = \"1s\"\nfor = \"1s\"\naction = \"redis_down\"\n").replace(
            "[load]",
            "[redis]\nurl = \"redis://127.0.0.1:6379\"\n\n[load]",
        ),
    );
    assert!(e.contains("remove [redis] url"), "{e}");
    // Errors point at the line of the bad value.
    let e = fault("at = \"1s\"\nfor = \"1s\"\naction = \"unplug\"");
    let line = with_faults("").lines().count() + 4;
    assert!(
        e.starts_with(&format!("s.toml:{line}:")),
        "{e} (line {line})"
    );
}
