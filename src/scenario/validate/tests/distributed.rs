//! `[distributed]`: agents, the coordinator's URL, the wait; a closed
//! loop refused.

use super::{error_of, GOOD};
use crate::scenario::{parse, Distributed, DEFAULT_AGENTS_WAIT};
use std::time::Duration;

fn with(table: &str) -> String {
    format!("{GOOD}\n[distributed]\n{table}\n")
}

#[test]
fn agents_coordinator_and_wait_are_read() {
    let s = parse(
        "s.toml",
        &with(
            "agents = 3\ncoordinator = \"redis://127.0.0.1:6390\"\nwait = \"20s\"\n\
             max_clock_uncertainty = \"2ms\"",
        ),
    )
    .unwrap();
    assert_eq!(
        s.distributed,
        Some(Distributed {
            agents: 3,
            coordinator: Some("redis://127.0.0.1:6390".into()),
            wait: Duration::from_secs(20),
            max_clock_uncertainty: Duration::from_millis(2),
        })
    );
    let s = parse("s.toml", &with("agents = 2")).unwrap();
    let d = s.distributed.unwrap();
    assert_eq!((d.coordinator, d.wait), (None, DEFAULT_AGENTS_WAIT));
    assert_eq!(
        d.max_clock_uncertainty,
        crate::scenario::spec::DEFAULT_MAX_CLOCK_UNCERTAINTY
    );
    assert_eq!(parse("s.toml", GOOD).unwrap().distributed, None);
}

#[test]
fn bad_values_name_their_line() {
    let lines = GOOD.lines().count() + 3;
    let e = error_of(&with("agents = 0"));
    assert!(e.starts_with(&format!("s.toml:{lines}:")), "{e}");
    assert!(e.contains("agents"), "{e}");
    let e = error_of(&with("coordinator = \"http://x:1\"\nagents = 2"));
    assert!(e.contains("expected a url like \"redis://"), "{e}");
    // A password in a bad URL is never echoed.
    let e = error_of(&with("coordinator = \"redis://:hunter2@[::1\"\nagents = 2"));
    assert!(!e.contains("hunter2"), "{e}");
    let e = error_of(&with("agnets = 2"));
    assert!(e.contains("unknown field `agnets`"), "{e}");
    let e = error_of(&with("coordinator = \"redis://127.0.0.1:1\""));
    assert!(e.contains("needs agents"), "{e}");
}

#[test]
fn a_closed_loop_has_no_schedule_to_split() {
    let closed = GOOD.replace("rate = 200", "schedule = \"closed\"\nconcurrency = 8");
    let e = error_of(&format!("{closed}\n[distributed]\nagents = 2\n"));
    assert!(e.contains("closed loop"), "{e}");
}
