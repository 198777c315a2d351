//! What the distributed tests share: a target of their own that notes
//! each request and when it came (what an agent sent, and when it
//! stopped), a scenario aimed at it, and looks into the coordinator — its
//! keys, an agent's registration, an eavesdropper's copy of an inbox.

use crate::distributed::run;
use rlbench::testing::RedisServer;
use std::io::{BufRead, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// An HTTP server of the test's own on loopback that answers 200 to
/// everything and notes when each request came: what an agent sent, and
/// when it stopped.
pub(crate) struct Target {
    pub(crate) port: u16,
    seen: Arc<Mutex<Vec<Instant>>>,
    stop: Arc<AtomicBool>,
}

impl Target {
    pub(crate) fn start() -> Target {
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

    pub(crate) fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    pub(crate) fn last(&self) -> Option<Instant> {
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
pub(crate) fn external(port: u16, duration: &str) -> String {
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

pub(crate) fn redis(url: &str) -> redis::Connection {
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

/// The keys matching `pattern` (bounded: a test's coordinator is small).
pub(crate) fn keys(con: &mut redis::Connection, pattern: &str) -> Vec<String> {
    redis::cmd("KEYS").arg(pattern).query(con).unwrap()
}

/// `rlbench run` in a thread of its own.
pub(crate) fn run_in_background(
    dir: &Path,
    args: Vec<String>,
) -> std::thread::JoinHandle<std::process::Output> {
    let d = dir.to_path_buf();
    std::thread::spawn(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&d, &args)
    })
}

/// Waits (10 s at most) until the agent `name` registered.
pub(crate) fn wait_registered(con: &mut redis::Connection, name: &str) {
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
pub(crate) fn capture_inbox(
    server: &RedisServer,
    inbox: &str,
) -> std::thread::JoinHandle<Vec<String>> {
    let inbox = inbox.to_string();
    let all = capture_pushes(server, &inbox);
    std::thread::spawn(move || {
        all.join()
            .unwrap()
            .into_iter()
            .filter(|(k, _)| *k == inbox)
            .map(|(_, v)| v)
            .collect()
    })
}

/// Everything pushed to a list whose key starts with `prefix` (key and
/// value), as [`capture_inbox`] watches.
pub(crate) fn capture_pushes(
    server: &RedisServer,
    prefix: &str,
) -> std::thread::JoinHandle<Vec<(String, String)>> {
    let mut child = monitor(server);
    let stdout = child.stdout.take().unwrap();
    let inbox = format!("\"RPUSH\" \"{prefix}");
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
                    found.extend(pushed(&line[at..]));
                    until.get_or_insert(Instant::now() + Duration::from_secs(5));
                }
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        found
    })
}

/// `redis-cli monitor` on `server`, its output piped: every command the
/// coordinator runs, as an eavesdropper sees it.
pub(crate) fn monitor(server: &RedisServer) -> std::process::Child {
    let password = server
        .url
        .split_once("://:")
        .and_then(|(_, rest)| rest.split_once('@'))
        .map(|(p, _)| p.to_string())
        .unwrap_or_default();
    std::process::Command::new("redis-cli")
        .args([
            "-p",
            &server.port.to_string(),
            "--no-auth-warning",
            "-a",
            &password,
            "monitor",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("redis-cli runs")
}

/// `rlbench run ARGS` in `dir` with the tests' token, its output piped,
/// not waited for (its pid is the test's to watch).
pub(crate) fn spawn_run(dir: &Path, args: &[&str]) -> std::process::Child {
    std::process::Command::new(crate::common::bin())
        .arg("run")
        .args(args)
        .env("RLBENCH_COORDINATOR_TOKEN", crate::distributed::TOKEN)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("rlbench runs")
}

/// Kills every other client's connection to the coordinator.
pub(crate) fn kill_connections(con: &mut redis::Connection) {
    let _: redis::RedisResult<i64> = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .arg("SKIPME")
        .arg("yes")
        .query(con);
}

/// A MONITOR line's `"RPUSH" "KEY" "VALUE"` (from `"RPUSH"` on): the key
/// and the value.
pub(crate) fn pushed(rpush: &str) -> Option<(String, String)> {
    let rest = rpush.strip_prefix("\"RPUSH\" ")?;
    let key = unquote(rest);
    let value_at = rest.get(1..)?.find("\" \"")? + 3;
    Some((key, unquote(rest.get(value_at..)?)))
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
