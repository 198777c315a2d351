//! Redis modes end to end through the real binary: rlbench starts its own
//! redis-server, the naive arm over-admits, the Lua arm holds the limit,
//! nothing (replica or redis-server) survives the run, and a missing
//! redis-server is one clear line and exit 3.

use crate::common;

use common::{text, wait_no_replicas, write};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Duration;

const RACE: &str = r#"
name = "race-small"
duration = "3s"
seed = 7

[policy]
algorithm = "fixed_window"
limit = 10
window = "1s"

[cluster]
replicas = 3

[load]
schedule = "bursts"
burst = 100
burst_spread = "10ms"
keys = 1

[[arms]]
name = "naive"
mode = "redis_naive"
[arms.expect]
min_definite_violations = 1

[[arms]]
name = "lua"
mode = "redis_lua"
clock = "redis"
# Redis trouble on a busy test machine becomes rejects, never admits.
on_redis_error = "fail_closed"
[arms.expect]
max_definite_violations = 0
max_over_admission_ratio = 1.02
max_error_ratio = 0.0
"#;

fn run(
    dir: &std::path::Path,
    scenario: &str,
    env: &[(&str, &str)],
    extra: &[&str],
) -> (std::process::Output, u32) {
    common::run_scenario(dir, scenario, env, extra)
}

#[test]
fn the_naive_arm_races_the_lua_arm_holds_and_nothing_survives() {
    let dir = tempfile::tempdir().unwrap();
    let (out, pid) = run(dir.path(), RACE, &[], &[]);
    common::exited(&out, 0);
    common::none_left(pid, Duration::from_secs(2));
    let s: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/summary.json")).unwrap(),
    )
    .unwrap();
    let arm = |n: &str| {
        s["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == n)
            .unwrap()
            .clone()
    };
    let naive = arm("naive");
    assert!(
        naive["correctness"]["definite_violations"]
            .as_u64()
            .unwrap()
            >= 1
    );
    assert_eq!(naive["mode"], "redis_naive");
    let lua = arm("lua");
    assert_eq!(lua["correctness"]["definite_violations"], 0);
    // Redis too slow on a busy machine is counted, and fails closed: each
    // such decision is a reject, never an admit (0 definite above).
    let redis_errors = lua["redis_errors"]["total"].as_u64().unwrap();
    let per_replica: u64 = lua["per_replica"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["redis_errors"].as_u64().unwrap())
        .sum();
    assert_eq!(per_replica, redis_errors, "{lua}");
    assert!(
        redis_errors <= lua["requests"]["rejected"].as_u64().unwrap(),
        "{lua}"
    );
    assert!(lua["requests"]["admitted"].as_u64().unwrap() > 0);
}

/// A local arm first, then a Redis one: the preflight stops the run before
/// any load, with one line that names the binary and the fix.
const LOCAL_THEN_REDIS: &str = r#"
name = "preflight"
duration = "10s"

[policy]
algorithm = "sliding_log"
limit = 5
window = "1s"

[load]
rate = 100
keys = 2

[[arms]]
name = "single"
mode = "local"

[[arms]]
name = "shared"
mode = "redis_lua"
"#;

#[test]
fn a_missing_redis_server_is_exit_3_before_any_load_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let (out, pid) = run(
        dir.path(),
        LOCAL_THEN_REDIS,
        &[("PATH", "/nonexistent")],
        &[],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("arm shared needs redis-server, which is not on PATH"),
        "{err}"
    );
    assert!(err.contains("apt-get install redis-server"), "{err}");
    assert!(err.contains("[redis] url"), "{err}");
    assert!(
        !err.contains("interrupted") && !err.contains("panicked"),
        "{err}"
    );
    // Nothing ran: the 10 s local arm was never started, no report written.
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert!(!dir.path().join("out/summary.json").exists());
    assert!(text(&out.stdout).is_empty(), "{}", text(&out.stdout));
    assert!(wait_no_replicas(pid, Duration::from_secs(2)).is_empty());
}

#[test]
fn an_unreachable_redis_url_is_exit_3_before_any_load() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let scenario = LOCAL_THEN_REDIS.replace(
        "[load]",
        &format!("[redis]\nurl = \"redis://127.0.0.1:{port}\"\n\n[load]"),
    );
    let (out, pid) = run(dir.path(), &scenario, &[], &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(wait_no_replicas(pid, Duration::from_secs(2)).is_empty());
    assert!(
        err.contains(&format!("cannot reach Redis at redis://127.0.0.1:{port}")),
        "{err}"
    );
    assert!(!dir.path().join("out/summary.json").exists());
}

#[test]
fn a_panic_with_redis_up_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let (out, pid) = run(
        dir.path(),
        RACE,
        &[("RLBENCH_TEST_PANIC_AFTER_UP", "1")],
        &["--arm", "lua"],
    );
    assert_eq!(out.status.code(), Some(101), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("4 process(es) up"),
        "{}",
        text(&out.stderr)
    );
    let left = wait_no_replicas(pid, Duration::from_secs(2));
    assert!(left.is_empty(), "survivors: {left:?}");
}

#[test]
fn redis_server_and_replicas_die_when_rlbench_is_killed_outright() {
    let dir = tempfile::tempdir().unwrap();
    let light = RACE
        .replace("duration = \"3s\"", "duration = \"60s\"")
        .replace("burst = 100", "burst = 5");
    let path = write(dir.path(), "s.toml", &light);
    let mut child = Command::new(common::bin())
        .args([
            "run",
            path.to_str().unwrap(),
            "--arm",
            "lua",
            "-q",
            "--out",
            "out",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while common::replicas_of(pid).len() < 4 {
        assert!(
            std::time::Instant::now() < deadline,
            "redis-server and replicas never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let left = wait_no_replicas(pid, Duration::from_secs(5));
    assert!(left.is_empty(), "outlived a killed rlbench: {left:?}");
}

/// A Redis URL where something accepts connections but never answers: the
/// preflight passes, the arm's replicas cannot start. The run says which arm
/// stopped it and why — not "interrupted" — and its partial report too.
#[test]
fn an_arm_that_cannot_start_stops_the_run_and_the_report_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    // Accept and hold connections without a word, until the test ends.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in silent.incoming().flatten().take(64) {
            held.push(c);
        }
    });
    let scenario = LOCAL_THEN_REDIS
        .replace("duration = \"10s\"", "duration = \"2s\"")
        .replace(
            "[load]",
            &format!("[redis]\nurl = \"redis://127.0.0.1:{port}\"\n\n[load]"),
        );
    let (out, pid) = run(dir.path(), &scenario, &[], &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("stopped: arm shared could not start: "),
        "{err}"
    );
    assert!(!err.contains("interrupted"), "{err}");
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("partial: stopped: arm shared could not start"),
        "{stdout}"
    );
    let s: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(s["partial"], true);
    assert!(s["partial_reason"]
        .as_str()
        .unwrap()
        .starts_with("stopped: arm shared could not start"));
    assert_eq!(s["arms"][0]["name"], "single", "the arm before it is kept");
    assert!(wait_no_replicas(pid, Duration::from_secs(2)).is_empty());
}
