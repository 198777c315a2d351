//! Nothing unsent goes unsaid: a generator that cannot send its whole
//! schedule (here every slot of `max_in_flight` is held by a target that
//! never answers) counts what it never sent, says why, and the arm fails
//! its gate with that reason — `scheduled` stays the scenario's schedule.
//! (No request got a decision, so the run is the environment's failure:
//! exit 3.)

use crate::common::{arm, rlbench, summary, text, write};
use std::net::TcpListener;
use std::time::Duration;

#[test]
fn a_schedule_cut_short_at_the_deadline_is_counted_and_fails_the_gate() {
    // Accepts connections and never answers: every request waits out its
    // timeout, so the four slots stay full to the run's end.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = std::thread::spawn(move || {
        let mut conns = Vec::new();
        listener.set_nonblocking(true).unwrap();
        let until = std::time::Instant::now() + Duration::from_secs(20);
        while std::time::Instant::now() < until {
            if let Ok((c, _)) = listener.accept() {
                conns.push(c);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let scenario = format!(
        r#"
name = "stuck"
duration = "2s"
seed = 1

[target]
kind = "external"
urls = ["http://127.0.0.1:{port}"]
key_header = "X-Customer-Id"

[policy]
algorithm = "sliding_log"
limit = 10
window = "1s"

[load]
rate = 100
keys = 2
timeout = "1s"
max_in_flight = 4

[[arms]]
name = "api"
[arms.expect]
max_error_ratio = 1.0
"#
    );
    let path = write(dir.path(), "s.toml", &scenario);
    let out = rlbench(
        &["run", path.to_str().unwrap(), "--out", "out", "-q"],
        dir.path(),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // No request got a decision (all timed out): the environment's
    // failure, exit 3, with what to check.
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert!(
        stderr.contains("arm api: none of its") && stderr.contains("timeout ×"),
        "{stderr}"
    );
    let s = summary(&dir.path().join("out"));
    let a = arm(&s, "api");
    let rate = &a["rate"];
    assert_eq!(
        rate["scheduled"], 200,
        "the schedule is the scenario's: {rate}"
    );
    let behind = rate["not_sent"]["behind"].as_u64().unwrap();
    let sent = a["requests"]["sent"].as_u64().unwrap();
    assert_eq!(sent + behind, 200, "sent or counted: {a}");
    assert!(behind > 100, "{rate}");
    let failures: Vec<String> = s["gate"]["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    assert!(
        failures.iter().any(|f| f.contains("not_sent_ratio")
            && f.contains(&format!("{behind} of 200 requests never sent"))
            && f.contains("max_in_flight full")),
        "{failures:?}"
    );
    assert!(stdout.contains("not sent in api:"), "{stdout}");
    drop(held);
}
