//! The coordinator as an attacker uses it: anyone who can write to it
//! forges anchors, entries, agents and work, replays an earlier run's
//! messages, floods junk and deflate bombs, or runs a second controller;
//! and the processes die under it. Each case with its outcome asserted, on
//! loopback, bounded; none lets a broken limiter's gate pass, none sends
//! load that no controller of the run asked for, none leaves an agent
//! sending after its controller is gone.

use crate::common::{bin, text, write, Running};
use crate::distributed::{agents, run, TOKEN};
use rlbench::testing::RedisServer;
use std::io::{BufRead, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Three replicas each counting alone, judged as one sliding log: the
/// fake global limit, which must fail its gate whatever is forged.
const BROKEN: &str = r#"
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

/// An HTTP server of the test's own on loopback that answers 200 to
/// everything and notes when each request came: what an agent sent, and
/// when it stopped.
struct Target {
    port: u16,
    seen: Arc<Mutex<Vec<Instant>>>,
    stop: Arc<AtomicBool>,
}

impl Target {
    fn start() -> Target {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, halt) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            while !halt.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let (s, halt) = (s.clone(), halt.clone());
                        std::thread::spawn(move || serve(conn, &s, &halt));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Target { port, seen, stop }
    }

    fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    fn last(&self) -> Option<Instant> {
        self.seen.lock().unwrap().last().copied()
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One keep-alive connection: a 200 for each request head read.
fn serve(conn: TcpStream, seen: &Mutex<Vec<Instant>>, halt: &AtomicBool) {
    let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
    let mut out = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    while !halt.load(Ordering::Relaxed) {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) => return,
            Ok(_) if line == "\r\n" => {
                seen.lock().unwrap().push(Instant::now());
                if out
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                    .is_err()
                {
                    return;
                }
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return,
        }
    }
}

/// An external target at `port`, at 100 requests/s for `duration`.
fn external(port: u16, duration: &str) -> String {
    format!(
        r#"
name = "external"
duration = "{duration}"
seed = 9

[target]
kind = "external"
urls = ["http://127.0.0.1:{port}"]
key_header = "X-Customer-Id"

[policy]
algorithm = "sliding_log"
limit = 100000
window = "1s"

[load]
rate = 100
keys = 2
timeout = "1s"

[[arms]]
name = "api"
"#
    )
}

fn redis(url: &str) -> redis::Connection {
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

/// The keys matching `pattern` (bounded: a test's coordinator is small).
fn keys(con: &mut redis::Connection, pattern: &str) -> Vec<String> {
    redis::cmd("KEYS").arg(pattern).query(con).unwrap()
}

/// `rlbench run` in a thread of its own.
fn run_in_background(
    dir: &Path,
    args: Vec<String>,
) -> std::thread::JoinHandle<std::process::Output> {
    let d = dir.to_path_buf();
    std::thread::spawn(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&d, &args)
    })
}

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
    assert!(err.contains("ignoring entries in agent"), "{err}");
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
    assert!(err.contains("ignoring agent \"0forged\""), "{err}");
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

/// The controller killed with SIGKILL mid-run: its agents stop sending
/// within 2 s of its last beat (plus a look every quarter second), and,
/// started with `--once`, exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_stop_within_two_seconds_of_a_killed_controller() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = Target::start();
    let mut once: Vec<Running> = (0..2)
        .map(|i| {
            let name = format!("once-{i}");
            let log = std::fs::File::create(d.join(format!("{name}.log"))).unwrap();
            Running(Some(
                std::process::Command::new(bin())
                    .args([
                        "agent",
                        "--coordinator",
                        &coordinator.url,
                        "--name",
                        &name,
                        "--once",
                    ])
                    .env("RLBENCH_COORDINATOR_TOKEN", TOKEN)
                    .current_dir(d)
                    .stdout(log.try_clone().unwrap())
                    .stderr(log)
                    .spawn()
                    .unwrap(),
            ))
        })
        .collect();
    let mut con = redis(&coordinator.url);
    wait_registered(&mut con, "once-1");
    let path = write(d, "e.toml", &external(target.port, "30s"));
    let mut controller = Running(Some(
        std::process::Command::new(bin())
            .args([
                "run",
                path.to_str().unwrap(),
                "--agents",
                "2",
                "--coordinator",
                &coordinator.url,
                "--out",
                "out",
                "-q",
                "--max-clock-uncertainty",
                "200ms",
            ])
            .env("RLBENCH_COORDINATOR_TOKEN", TOKEN)
            .current_dir(d)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    ));
    let deadline = Instant::now() + Duration::from_secs(30);
    while target.count() < 200 {
        assert!(Instant::now() < deadline, "the load never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut child = controller.0.take().unwrap();
    child.kill().unwrap();
    let killed = Instant::now();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_secs(5));
    let last = target.last().unwrap();
    let after = last.saturating_duration_since(killed);
    assert!(
        after < Duration::from_millis(2_800),
        "an agent sent {after:?} after its controller was killed"
    );
    // And with --once, they exit (within a few seconds more).
    let deadline = Instant::now() + Duration::from_secs(10);
    for a in &mut once {
        let child = a.0.as_mut().unwrap();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(status.success(), "{status}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "an agent with --once outlived its run"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let log = std::fs::read_to_string(d.join("once-0.log")).unwrap();
    assert!(log.contains("stopped beating"), "{log}");
}

/// Waits (10 s at most) until the agent `name` registered.
fn wait_registered(con: &mut redis::Connection, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let score: Option<f64> = redis::cmd("ZSCORE")
            .arg("rlbench:coord:agents")
            .arg(name)
            .query(con)
            .unwrap();
        if score.is_some() {
            return;
        }
        assert!(Instant::now() < deadline, "agent {name} never registered");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Everything pushed to `inbox` while the thread runs (until a message
/// arrives and 5 s pass), as the coordinator's MONITOR shows it: an
/// eavesdropper's copy of the controller's signed messages.
fn capture_inbox(server: &RedisServer, inbox: &str) -> std::thread::JoinHandle<Vec<String>> {
    let port = server.port.to_string();
    let password = server
        .url
        .split_once("://:")
        .and_then(|(_, rest)| rest.split_once('@'))
        .map(|(p, _)| p.to_string())
        .unwrap_or_default();
    let mut child = std::process::Command::new("redis-cli")
        .args(["-p", &port, "--no-auth-warning", "-a", &password, "monitor"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("redis-cli runs");
    let stdout = child.stdout.take().unwrap();
    let inbox = format!("\"RPUSH\" \"{inbox}\" ");
    std::thread::spawn(move || {
        let mut found = Vec::new();
        let mut until: Option<Instant> = None;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let give_up = Instant::now() + Duration::from_secs(60);
        while until.map_or(true, |u| Instant::now() < u) && Instant::now() < give_up {
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
                if let Some(at) = line.find(&inbox) {
                    found.push(unquote(&line[at + inbox.len()..]));
                    until.get_or_insert(Instant::now() + Duration::from_secs(5));
                }
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        found
    })
}

/// A redis-cli quoted string (`"…"` with `\"`, `\\` and `\xHH`) as its bytes.
fn unquote(quoted: &str) -> String {
    let inner = quoted.trim().trim_start_matches('"');
    let mut out = Vec::new();
    let mut chars = inner.bytes().peekable();
    while let Some(c) = chars.next() {
        match c {
            b'"' => break,
            b'\\' => match chars.next() {
                Some(b'x') => {
                    let h: Vec<u8> = chars.by_ref().take(2).collect();
                    out.push(u8::from_str_radix(std::str::from_utf8(&h).unwrap(), 16).unwrap());
                }
                Some(b'n') => out.push(b'\n'),
                Some(b'r') => out.push(b'\r'),
                Some(b't') => out.push(b'\t'),
                Some(other) => out.push(other),
                None => break,
            },
            other => out.push(other),
        }
    }
    String::from_utf8(out).unwrap()
}

/// An agent killed with SIGKILL in the first of two arms: that arm is
/// partial and names it, a survivor sends its segment's requests due from
/// shortly after it was found lost, what it never sent before then is
/// counted as lost (not as a generator behind), and the second arm is
/// split among the survivors, whole. Exit 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_agent_leaves_the_next_arm_to_the_survivors() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = Target::start();
    let scenario = format!(
        "{}\n[[arms]]\nname = \"again\"\n",
        external(target.port, "8s")
    );
    let (controller, mut three) =
        three_agents_under_load(d, &coordinator.url, "kill-", &scenario, &target);
    let mut killed = three[2].0.take().unwrap();
    killed.kill().unwrap();
    killed.wait().unwrap();
    let out = controller.join().unwrap();
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}{err}");
    let s = crate::common::summary(&d.join("out"));
    assert_eq!(s["partial"], true);
    assert!(
        s["partial_reason"].as_str().unwrap().contains("kill-2"),
        "{}",
        s["partial_reason"]
    );
    assert!(
        s["partial_reason"]
            .as_str()
            .unwrap()
            .contains("took its segment over"),
        "{}",
        s["partial_reason"]
    );
    let first = crate::common::arm(&s, "api");
    let rate = &first["rate"];
    let not_sent = |why: &str| rate["not_sent"][why].as_u64().unwrap_or(0);
    assert!(not_sent("lost") > 0, "{rate}");
    // The lost agent's segment from when it was found lost on: sent by
    // a survivor, which counts them in its own.
    let rows = first["per_agent"].as_array().unwrap();
    let row = |name: &str| rows.iter().find(|r| r["agent"] == name).unwrap();
    let taken = &row("kill-2")["taken_over"];
    let by = taken["by"].as_str().unwrap_or_else(|| panic!("{rows:?}"));
    let other = if by == "kill-0" { "kill-1" } else { "kill-0" };
    let requests = taken["requests"].as_u64().unwrap();
    assert!(requests > 0, "{taken}");
    assert!(
        taken["from_s"].as_f64().unwrap() > row("kill-2")["lost_at_s"].as_f64().unwrap(),
        "{rows:?}"
    );
    let sent = |name: &str| row(name)["sent"].as_u64().unwrap();
    // Two survivors' own segments differ by at most one request.
    assert!(
        sent(by) + not_sent("behind") + not_sent("stopped") + 1 >= sent(other) + requests,
        "{by} sent {} and {other} {}: {rows:?} {rate}",
        sent(by),
        sent(other)
    );
    // Every request of the schedule is in the trace or counted as not sent.
    let total: u64 = rows.iter().map(|r| r["sent"].as_u64().unwrap()).sum();
    assert_eq!(
        total + not_sent("lost") + not_sent("behind") + not_sent("stopped"),
        rate["scheduled"].as_u64().unwrap(),
        "{rows:?} {rate}"
    );
    assert_eq!(
        first["rate"]["generator_saturated"], false,
        "{}",
        first["rate"]
    );
    assert!(!stdout.contains("generator saturated"), "{stdout}");
    let again = crate::common::arm(&s, "again");
    let rows = again["per_agent"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "the survivors: {rows:?}");
    let sent: u64 = rows.iter().map(|r| r["sent"].as_u64().unwrap()).sum();
    assert_eq!(sent, again["rate"]["scheduled"].as_u64().unwrap(), "whole");
    assert!(again["rate"]["not_sent"].is_null(), "{}", again["rate"]);
}

/// An agent paused (SIGSTOP) past the heartbeat timeout and woken again:
/// found lost, its segment taken over by a survivor and itself told to
/// stop; whatever both sent while it caught up is in the trace once (the
/// trace reads back whole), and the woken agent serves on. Exit 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_agent_found_lost_is_stopped_and_each_request_is_kept_once() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = Target::start();
    let scenario = external(target.port, "9s");
    let (controller, mut three) =
        three_agents_under_load(d, &coordinator.url, "nap-", &scenario, &target);
    let pid = Pid::from_raw(three[2].0.as_ref().unwrap().id() as i32);
    kill(pid, Signal::SIGSTOP).unwrap();
    std::thread::sleep(Duration::from_millis(5_500));
    kill(pid, Signal::SIGCONT).unwrap();
    let out = controller.join().unwrap();
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}{err}");
    let s = crate::common::summary(&d.join("out"));
    assert_eq!(s["partial"], true);
    let first = crate::common::arm(&s, "api");
    let rows = first["per_agent"].as_array().unwrap();
    let napped = rows.iter().find(|r| r["agent"] == "nap-2").unwrap();
    assert!(napped["lost_at_s"].as_f64().is_some(), "{rows:?}");
    assert!(
        napped["taken_over"]["requests"].as_u64().unwrap_or(0) > 0,
        "{rows:?}\n{err}"
    );
    // The trace holds each request once: it reads back, and what it holds
    // is at most what the target saw (a request both agents sent reached
    // the target twice and the trace once).
    let report = std::process::Command::new(bin())
        .args(["report", d.join("out").to_str().unwrap()])
        .current_dir(d)
        .output()
        .unwrap();
    // (Exit 1: the partial arm fails its gate again, as in the run.)
    let again = text(&report.stderr);
    assert_eq!(report.status.code(), Some(1), "{again}");
    assert!(!again.contains("a second event"), "{again}");
    let traced: u64 = rows.iter().map(|r| r["sent"].as_u64().unwrap()).sum();
    assert!(
        traced as usize <= target.count(),
        "{traced} > {}",
        target.count()
    );
    // Woken, it was stopped, ended its arm and still serves.
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        three[2].0.as_mut().unwrap().try_wait().unwrap().is_none(),
        "the paused agent exited"
    );
    let _ = &mut three;
}

/// Three agents named `prefix`0..2 and `rlbench run` of `scenario` over
/// them, in the background, once the target has seen 100 requests:
/// (controller, agents).
fn three_agents_under_load(
    d: &Path,
    url: &str,
    prefix: &str,
    scenario: &str,
    target: &Target,
) -> (std::thread::JoinHandle<std::process::Output>, Vec<Running>) {
    let three = agents(d, url, 3, prefix, None);
    let mut con = redis(url);
    wait_registered(&mut con, &format!("{prefix}2"));
    let path = write(d, "e.toml", scenario);
    let controller = run_in_background(
        d,
        vec![
            path.to_str().unwrap().into(),
            "--agents".into(),
            "3".into(),
            "--coordinator".into(),
            url.into(),
            "--out".into(),
            "out".into(),
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while target.count() < 100 {
        assert!(Instant::now() < deadline, "the load never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    (controller, three)
}

/// `rlbench run` with two agents on an external target, in the
/// background, once they registered: (controller, agents).
fn two_agents_and_a_run(
    d: &Path,
    url: &str,
    port: u16,
    duration: &str,
) -> (std::thread::JoinHandle<std::process::Output>, Vec<Running>) {
    let agents = agents(d, url, 2, "kept-", None);
    let mut con = redis(url);
    wait_registered(&mut con, "kept-1");
    let path = write(d, "e.toml", &external(port, duration));
    let controller = run_in_background(
        d,
        vec![
            path.to_str().unwrap().into(),
            "--agents".into(),
            "2".into(),
            "--coordinator".into(),
            url.into(),
            "--out".into(),
            "out".into(),
            "-q".into(),
        ],
    );
    (controller, agents)
}

/// The coordinator killed and started again mid-run (its data gone): the
/// run ends — never as "interrupted" (130) — and when events were lost it
/// is partial and an environment failure (3); the agents keep serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_restarted_mid_run_is_an_environment_failure_not_an_interrupt() {
    let mut coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = Target::start();
    let (controller, mut agents) = two_agents_and_a_run(d, &coordinator.url, target.port, "6s");
    let deadline = Instant::now() + Duration::from_secs(30);
    while target.count() < 150 {
        assert!(Instant::now() < deadline, "the load never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    coordinator.kill().await;
    coordinator.restart("rlbench-test").await.unwrap();
    let out = controller.join().unwrap();
    let err = text(&out.stderr);
    let code = out.status.code();
    assert!(matches!(code, Some(0 | 3)), "{code:?}\n{err}");
    let s = crate::common::summary(&d.join("out"));
    if code == Some(3) {
        assert_eq!(s["partial"], true, "{err}");
    } else {
        assert_eq!(s["partial"], false, "{err}");
    }
    // The agents survived the restart: still running, registered again.
    for a in &mut agents {
        assert!(
            a.0.as_mut().unwrap().try_wait().unwrap().is_none(),
            "an agent exited"
        );
    }
    let mut con = redis(&coordinator.url);
    wait_registered(&mut con, "kept-0");
}

/// The coordinator out of memory for two seconds mid-run (every write
/// refused): the agents' writes are tried again, every event arrives,
/// and the run passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_out_of_memory_for_a_while_loses_nothing() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = Target::start();
    let (controller, _agents) = two_agents_and_a_run(d, &coordinator.url, target.port, "6s");
    let deadline = Instant::now() + Duration::from_secs(30);
    while target.count() < 150 {
        assert!(Instant::now() < deadline, "the load never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut con = redis(&coordinator.url);
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg("noeviction")
        .query(&mut con)
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("1")
        .query(&mut con)
        .unwrap();
    // Refused: the coordinator is full.
    let full: redis::RedisResult<()> = redis::cmd("SET").arg("probe").arg("x").query(&mut con);
    assert!(full.is_err(), "the coordinator did not refuse writes");
    std::thread::sleep(Duration::from_secs(2));
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("0")
        .query(&mut con)
        .unwrap();
    let out = controller.join().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let s = crate::common::summary(&d.join("out"));
    assert_eq!(s["partial"], false, "{err}");
    let a = crate::common::arm(&s, "api");
    assert_eq!(
        a["requests"]["sent"], a["rate"]["scheduled"],
        "{}",
        a["rate"]
    );
}
