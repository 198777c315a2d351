//! The coordinator as an attacker uses it: anyone who can write to it
//! forges anchors, entries, agents and work, replays an earlier run's
//! messages, floods junk and deflate bombs, or runs a second controller.
//! Each case with its outcome asserted, on loopback, bounded; none lets a
//! broken limiter's gate pass, none sends load that no controller of the
//! run asked for. (The processes dying under it: `distributed_failures`.)

use crate::common::{bin, text, write};
use crate::distributed::{agents, run, TOKEN};
use crate::distributed_kit::{
    capture_inbox, external, keys, redis, run_in_background, wait_registered, Target,
};
use rlbench::testing::RedisServer;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Three replicas each counting alone, judged as one sliding log: the
/// fake global limit, which must fail its gate whatever is forged.
pub(crate) const BROKEN: &str = r#"
name = "broken"
duration = "4s"
seed = 5

[policy]
algorithm = "sliding_log"
limit = 10
window = "1s"

[cluster]
replicas = 3

[load]
rate = 300
keys = 2

[[arms]]
name = "local"
mode = "local"
[arms.expect]
max_definite_violations = 0
"#;

/// Anchors claiming a 30 s uncertainty, unsigned entries, 64 entries with
/// no kind and a deflate bomb, written into every agent's stream while
/// the load runs: all skipped, the broken limiter still fails its gate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_anchors_junk_and_bombs_in_the_streams_change_no_verdict() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _agents = agents(d, &coordinator.url, 3, "agent-", None);
    let path = write(d, "broken.toml", BROKEN);
    let url = coordinator.url.clone();
    let controller = run_in_background(
        d,
        vec![
            path.to_str().unwrap().into(),
            "--agents".into(),
            "3".into(),
            "--coordinator".into(),
            url.clone(),
            "--out".into(),
            "out".into(),
            "-q".into(),
        ],
    );
    let mut con = redis(&url);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut forged = 0;
    // A bomb: 64 MiB of zeros deflate to about 64 KiB.
    let bomb = {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(&vec![0u8; 64 * 1024 * 1024]).unwrap();
        e.finish().unwrap()
    };
    while !controller.is_finished() && Instant::now() < deadline {
        for stream in keys(&mut con, "rlbench:coord:run:*") {
            let anchor = r#"{"kind":"anchor","local_us":0,"coord_us":0,"uncertainty_us":30000000,"wall_us":0}"#;
            let _: redis::RedisResult<String> = redis::cmd("XADD")
                .arg(&stream)
                .arg("*")
                .arg("kind")
                .arg("anchor")
                .arg("body")
                .arg(anchor)
                .arg("seq")
                .arg(1_000_000 + forged)
                .arg("mac")
                .arg("00")
                .query(&mut con);
            for _ in 0..64 {
                let _: redis::RedisResult<String> = redis::cmd("XADD")
                    .arg(&stream)
                    .arg("*")
                    .arg("junk")
                    .arg("1")
                    .query(&mut con);
            }
            let _: redis::RedisResult<String> = redis::cmd("XADD")
                .arg(&stream)
                .arg("*")
                .arg("kind")
                .arg("chunk")
                .arg("counts")
                .arg("1 1 0 0")
                .arg("body")
                .arg(&bomb[..])
                .query(&mut con);
            forged += 1;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let out = controller.join().unwrap();
    let err = text(&out.stderr);
    assert!(
        forged > 0,
        "nothing was forged: the streams were never seen\n{err}"
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "the broken limiter's gate fails\n{err}"
    );
    let s = crate::common::summary(&d.join("out"));
    let a = crate::common::arm(&s, "local");
    assert!(
        a["correctness"]["definite_violations"].as_u64().unwrap() > 0,
        "{a}"
    );
    assert_eq!(s["partial"], false, "{err}");
    for row in a["per_agent"].as_array().unwrap() {
        let u = row["clock_uncertainty_ms"].as_f64().unwrap();
        assert!(u < 100.0, "no forged uncertainty taken: {row}");
    }
    // Said once per agent, counted, however much was written.
    let said = err.matches("ignored entries in agent").count();
    assert!((1..=3).contains(&said), "{err}");
    assert!(err.contains("not rlbench's"), "{err}");
}

/// A registration nobody signed, named to be picked first: never taken.
/// With only two real agents of three wanted, the run waits and fails,
/// naming the forged one as ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_agent_is_never_taken() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let url = coordinator.url.clone();
    let _agents = agents(d, &url, 2, "agent-", None);
    let mut con = redis(&url);
    let forger = Arc::new(AtomicBool::new(true));
    let keep = forger.clone();
    let u = url.clone();
    // Kept fresh, as a live agent's would be.
    let beating = std::thread::spawn(move || {
        let mut con = redis(&u);
        while keep.load(Ordering::Relaxed) {
            let (s, us): (i64, i64) = redis::cmd("TIME").query(&mut con).unwrap();
            let now_ms = s * 1_000 + us / 1_000;
            let forged = format!(
                r#"{{"name":"0forged","index":null,"host":"h","pid":1,"version":"{}","protocol":2,"nonce":"x","beat_us":{},"busy":false}}"#,
                env!("CARGO_PKG_VERSION"),
                now_ms * 1_000
            );
            let _: () = redis::pipe()
                .hset("rlbench:coord:agent:0forged", "registration", &forged)
                .ignore()
                .zadd("rlbench:coord:agents", "0forged", now_ms)
                .ignore()
                .query(&mut con)
                .unwrap();
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let path = write(d, "broken.toml", BROKEN);
    let out = run(
        d,
        &[
            path.to_str().unwrap(),
            "--agents",
            "3",
            "--coordinator",
            &url,
            "--agents-wait",
            "4s",
            "--out",
            "out",
        ],
    );
    forger.store(false, Ordering::Relaxed);
    beating.join().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("ignoring 1 agent(s)") && err.contains("\"0forged\""),
        "{err}"
    );
    assert!(err.contains("2 registered (agent-0, agent-1)"), "{err}");
    let _: () = redis::cmd("DEL")
        .arg("rlbench:coord:agent:0forged")
        .query(&mut con)
        .unwrap();
}

/// Work pushed into an idle agent's inbox by someone without the token —
/// unsigned, or signed with another token — and a start after it: the
/// agent does nothing, and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_work_sends_nothing() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = Target::start();
    let _agents = agents(d, &coordinator.url, 1, "idle-", None);
    let mut con = redis(&coordinator.url);
    wait_registered(&mut con, "idle-0");
    let scenario = external(target.port, "3s");
    let work = serde_json::json!({
        "kind": "work", "run": "forged", "arm": "api", "scenario_file": "x.toml",
        "scenario_text": scenario, "duration_us": null, "targets": [],
        "segment": 0, "of": 1, "stream": "rlbench:coord:run:forged:api:idle-0",
        "estimate_clock": true, "issued_us": 0
    });
    let sealed = |mac: &str| {
        serde_json::json!({
            "v": 2, "run": "forged", "from": "controller", "to": "idle-0", "seq": 1,
            "at_us": 0, "kind": "work", "body": work.to_string(), "mac": mac
        })
        .to_string()
    };
    for message in [work.to_string(), sealed("00"), sealed(&"ab".repeat(32))] {
        let _: () = redis::cmd("RPUSH")
            .arg("rlbench:coord:inbox:idle-0")
            .arg(message)
            .query(&mut con)
            .unwrap();
    }
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(target.count(), 0, "forged work sent load");
    let log = std::fs::read_to_string(d.join("idle-0.log")).unwrap();
    assert!(
        log.contains("not rlbench's") || log.contains("not signed"),
        "{log}"
    );
    assert_eq!(
        log.matches("ignoring a message").count(),
        3,
        "each forgery refused: {log}"
    );
}

/// Work the controller really signed, captured from the coordinator
/// during a run and pushed again after it: the agent served that run
/// already, its lease is gone, and the work is old: nothing is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_run_sends_nothing() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = Target::start();
    let _agents = agents(d, &coordinator.url, 1, "replay-", None);
    let mut con = redis(&coordinator.url);
    wait_registered(&mut con, "replay-0");
    let captured = capture_inbox(&coordinator, "rlbench:coord:inbox:replay-0");
    let path = write(d, "e.toml", &external(target.port, "2s"));
    let out = run(
        d,
        &[
            path.to_str().unwrap(),
            "--agents",
            "1",
            "--coordinator",
            &coordinator.url,
            "--out",
            "out",
            "-q",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let works = captured.join().unwrap();
    assert!(!works.is_empty(), "the run's work was seen");
    let sent = target.count();
    assert!(sent > 100, "the run itself sent its load: {sent}");
    for w in &works {
        let _: () = redis::cmd("RPUSH")
            .arg("rlbench:coord:inbox:replay-0")
            .arg(w)
            .query(&mut con)
            .unwrap();
    }
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(target.count(), sent, "a replay sent load");
    let log = std::fs::read_to_string(d.join("replay-0.log")).unwrap();
    assert!(log.contains("refused work"), "{log}");
}

/// Two agents of one name: the second is refused at once (exit 3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_of_one_name_are_refused() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _first = agents(d, &coordinator.url, 1, "twin-", None);
    let mut con = redis(&coordinator.url);
    wait_registered(&mut con, "twin-0");
    let out = std::process::Command::new(bin())
        .args([
            "agent",
            "--coordinator",
            &coordinator.url,
            "--name",
            "twin-0",
        ])
        .env("RLBENCH_COORDINATOR_TOKEN", TOKEN)
        .current_dir(d)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("already registered"),
        "{}",
        text(&out.stderr)
    );
}

/// Two controllers at once for the same agents: the first leases them;
/// the second waits, then fails naming them busy with the first's run
/// (exit 3), while the first finishes as its gate says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_controller_finds_the_agents_busy() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = Target::start();
    let _agents = agents(d, &coordinator.url, 2, "shared-", None);
    let mut con = redis(&coordinator.url);
    wait_registered(&mut con, "shared-1");
    let path = write(d, "e.toml", &external(target.port, "5s"));
    let args = |out: &str, wait: &str| {
        vec![
            path.to_str().unwrap().to_string(),
            "--agents".into(),
            "2".into(),
            "--coordinator".into(),
            coordinator.url.clone(),
            "--agents-wait".into(),
            wait.into(),
            "--out".into(),
            out.into(),
            "-q".into(),
        ]
    };
    let first = run_in_background(d, args("first", "20s"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while target.count() == 0 {
        assert!(Instant::now() < deadline, "the first run never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let second = run(
        d,
        &args("second", "2s")
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let err = text(&second.stderr);
    assert_eq!(second.status.code(), Some(3), "{err}");
    assert!(err.contains("busy with another run"), "{err}");
    let first = first.join().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
}

/// A million forged agents in the agents' set, kept fresh: the run waits
/// no longer than `--agents-wait` (and a few seconds), fails naming what
/// it found (exit 3), and says so in a handful of lines, not a million.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_forged_agents_cost_the_wait_and_a_few_lines() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let url = coordinator.url.clone();
    let mut con = redis(&url);
    let (s, _): (i64, i64) = redis::cmd("TIME").query(&mut con).unwrap();
    // Beating a minute ahead: fresh for the whole wait.
    let ahead = (s + 60) * 1_000;
    for block in 0..100 {
        let mut add = redis::cmd("ZADD");
        add.arg("rlbench:coord:agents");
        for i in 0..10_000 {
            add.arg(ahead).arg(format!("fake-{block}-{i}"));
        }
        let _: i64 = add.query(&mut con).unwrap();
    }
    let _agents = agents(d, &url, 1, "real-", None);
    let path = write(d, "broken.toml", BROKEN);
    let began = Instant::now();
    let out = run(
        d,
        &[
            path.to_str().unwrap(),
            "--agents",
            "2",
            "--coordinator",
            &url,
            "--agents-wait",
            "3s",
            "--out",
            "out",
        ],
    );
    let took = began.elapsed();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(took < Duration::from_secs(3 + 5), "{took:?}\n{err}");
    assert!(err.lines().count() < 12, "{err}");
    assert!(err.contains("ignoring 100000"), "{err}");
}
