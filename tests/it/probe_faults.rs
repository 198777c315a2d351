//! `rlbench probe` on limiters with the bugs teams ship, and what the
//! starter it writes does with them: a time-to-live refreshed on every
//! request (stricter than the intent: its stuck keys are named), a
//! check-then-write race inside one process (caught by the starter's
//! bursts arm), and a table that keeps only so many keys (nginx's
//! smallest zone; caught by the starter's many-keys arm).

use crate::common::{rlbench, summary, text};
use crate::probe::probe;

/// A counter whose time-to-live is refreshed on every request (limit 10,
/// 2 s; `ttl_refresh.rs`): stricter than the fixed window of 10 per 2 s
/// its authors meant, since a client that keeps sending is refused for
/// ever. Probed with that intent, the probe says the limiter does not
/// keep it, and the starter declares the intent; its run then fails on
/// false rejects alone, the arm's line says so ("refused N requests the
/// policy allows"), and the keys hint names the keys kept shut and asks
/// about a TTL refreshed on each hit — not whether the limiter keys on
/// the header.
#[test]
fn a_limiter_refreshing_its_ttl_on_every_request_is_named_by_its_stuck_keys() {
    let (port, _server) = crate::ttl_refresh::start();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}/limited");
    let intent = r#"algorithm = "fixed_window", limit = 10, window = "2s""#;
    let (out, stdout) = probe(
        dir.path(),
        &[
            &url,
            "--policy",
            intent,
            "--max-time",
            "40s",
            "--write",
            "ttl",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("key: header X-Customer-Id"), "{stdout}");
    let starter = std::fs::read_to_string(dir.path().join("ttl.toml")).unwrap();
    assert!(
        starter.contains("# the policy you declared (--policy)"),
        "{starter}"
    );
    let run = rlbench(
        &["run", "ttl.toml", "--duration", "8s", "--out", "out", "-q"],
        dir.path(),
    );
    let stdout = text(&run.stdout);
    assert_eq!(run.status.code(), Some(1), "{starter}\n{stdout}");
    let s = summary(&dir.path().join("out"));
    let c = &crate::common::arm(&s, "api")["correctness"];
    assert_eq!(c["definite_violations"], 0, "{stdout}");
    assert!(c["false_rejects"].as_u64().unwrap() > 0, "{stdout}");
    assert!(stdout.contains("requests the policy allows"), "{stdout}");
    assert!(stdout.contains("were refused without a break"), "{stdout}");
    assert!(stdout.contains("a TTL refreshed on each hit"), "{stdout}");
    assert!(!stdout.contains("does your limiter key on"), "{stdout}");
}

/// The reference API's `redis_naive` mode on one replica: read the
/// window's count, then write it back, as two commands — a race between
/// one key's concurrent requests, inside one process. The starter's
/// steady arm sends each key's requests far apart and is not what proves
/// it; its bursts arm, each key's requests together at the window's
/// edges, proves admits past the policy.
#[test]
fn a_race_inside_one_process_is_caught_by_the_starters_bursts_arm() {
    let dir = tempfile::tempdir().unwrap();
    let (_served, urls) =
        crate::served::serve_mode(dir.path(), 1, "redis_naive", "fixed_window", "1s");
    let (out, stdout) = probe(dir.path(), &[&urls[0], "-m", "POST", "--write", "race"]);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let starter = std::fs::read_to_string(dir.path().join("race.toml")).unwrap();
    assert!(starter.contains("schedule = \"bursts\""), "{starter}");
    let run = rlbench(
        &["run", "race.toml", "--duration", "6s", "--out", "out", "-q"],
        dir.path(),
    );
    let stdout = text(&run.stdout);
    assert_eq!(run.status.code(), Some(1), "{starter}\n{stdout}");
    let s = summary(&dir.path().join("out"));
    let bursts = &crate::common::arm(&s, "bursts")["correctness"];
    assert!(
        bursts["definite_violations"].as_u64().unwrap() > 0,
        "{starter}\n{stdout}"
    );
}

/// nginx `limit_req` with the smallest zone it takes (32k: about 190
/// keys' states; when it is full nginx frees the least recently used):
/// a real limiter that keeps only so many keys and admits a forgotten
/// one afresh. The probe sends a few keys at a time and sees a correct
/// bucket; the starter's many-keys arm sweeps a thousand keys between
/// blocks of one key past its limit, and proves admits past the policy. nginx's usual zone
/// (1m, thousands of states) passes the same arm in
/// `probe::nginx_with_a_burst_is_found_and_its_starter_passes_twice`.
#[test]
fn a_limiter_that_keeps_only_so_many_keys_is_caught_by_the_starters_keys_arm() {
    let port = crate::common::free_port();
    let prefix = tempfile::tempdir().unwrap();
    let conf = format!(
        r#"
worker_processes 1;
events {{ worker_connections 1024; }}
error_log stderr warn;
http {{
    access_log off;
    limit_req_zone $http_x_customer_id zone=small:32k rate=1r/s;
    server {{
        listen 127.0.0.1:{port};
        location = /limited {{ limit_req zone=small burst=5 nodelay; root html; }}
    }}
}}
"#
    );
    let _nginx = crate::external::start_nginx(prefix.path(), &conf, &[port]);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}/limited");
    let (out, stdout) = probe(dir.path(), &[&url, "--write", "small"]);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("key: header X-Customer-Id"), "{stdout}");
    let starter = std::fs::read_to_string(dir.path().join("small.toml")).unwrap();
    assert!(starter.contains("name = \"keys\""), "{starter}");
    let flat = starter
        .lines()
        .map(|l| l.trim_start_matches("# "))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        flat.contains("it catches a limiter that keeps only its last"),
        "{starter}"
    );
    let run = rlbench(
        &[
            "run",
            "small.toml",
            "--duration",
            "5s",
            "--out",
            "out",
            "-q",
        ],
        dir.path(),
    );
    let stdout = text(&run.stdout);
    assert_eq!(run.status.code(), Some(1), "{starter}\n{stdout}");
    assert!(
        stdout.contains("keys across arms: arm keys sent"),
        "{stdout}"
    );
    let s = summary(&dir.path().join("out"));
    for (arm, proven) in [("api", false), ("bursts", false), ("keys", true)] {
        let c = &crate::common::arm(&s, arm)["correctness"];
        assert_eq!(
            c["definite_violations"].as_u64().unwrap() > 0,
            proven,
            "{arm}: {stdout}"
        );
        assert_eq!(c["false_rejects"], 0, "{arm}: {stdout}");
    }
}
