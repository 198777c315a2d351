//! The adversary model with real processes: a coordinator (redis-server),
//! two agents and a controller on loopback, and an attacker who can write
//! to the coordinator but has no token. It keeps every stream entry and
//! every inbox message it saw in any run, and while each run goes it does
//! random things at random times (seeded): replays a captured entry into
//! any stream, removes, trims, reorders or copies entries, writes junk and
//! oversized entries, overwrites the beat, a lease or a registration,
//! replays captured work and starts, FLUSHALLs, pauses the coordinator,
//! kills its connections. Each run has a correct arm and a broken one
//! (the target admits everything; the broken arm's policy allows 5 a
//! second per key at 50 a second per key). Asserted on every case:
//!
//! - (a) the broken arm never passes: exit 0 never happens;
//! - (c) exit 1 only on a complete trace whose broken arm has definite
//!   violations and whose correct arm none; exit 3 with a line saying
//!   why; nothing else (no 130, no panic);
//! - (b) no load without a live controller: once a run's controller is
//!   gone (and its agents' 2 s), replayed work and starts send nothing.
//!
//! `ADVERSARY_RUNS` sets the number of runs (CI: 2).

use crate::common::text;
use crate::distributed::agents;
use crate::distributed_kit::{external, keys, kill_connections, monitor, redis, spawn_run, Target};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rlbench::testing::RedisServer;
use std::io::BufRead;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Fields = Vec<(String, Vec<u8>)>;

/// Two arms on the test's target: one whose policy it keeps (it admits
/// everything, under a limit it never reaches: the kit's scenario), one
/// it breaks.
fn scenario(port: u16, seed: u64) -> String {
    external(port, "2s")
        .replace("seed = 9", &format!("seed = {seed}"))
        .replace(
            "[[arms]]\nname = \"api\"\n",
            "[[arms]]\nname = \"correct\"\n[arms.expect]\nmax_definite_violations = 0\n\n\
             [[arms]]\nname = \"broken\"\n[arms.policy]\nlimit = 5\n\
             [arms.expect]\nmax_definite_violations = 0\n",
        )
}

/// What the attacker has seen: stream entries, inbox pushes, and the
/// values of the keys that decide (beats, leases, registrations).
#[derive(Default)]
struct Seen {
    entries: Vec<Fields>,
    pushes: Vec<(String, String)>,
    values: Vec<(String, String)>,
}

/// Keeps what passes through the coordinator: stream entries by polling
/// (before the controller removes them), inbox pushes by MONITOR.
fn eavesdrop(server: &RedisServer, seen: Arc<Mutex<Seen>>, stop: Arc<AtomicBool>) {
    let url = server.url.clone();
    let (s, halt) = (seen.clone(), stop.clone());
    std::thread::spawn(move || {
        let Ok(client) = redis::Client::open(url) else {
            return;
        };
        while !halt.load(Ordering::Relaxed) {
            let Ok(mut con) = client.get_connection() else {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            };
            for key in keys_or_none(&mut con, "rlbench:coord:run:*") {
                let got: redis::RedisResult<Vec<(String, Fields)>> = redis::cmd("XRANGE")
                    .arg(&key)
                    .arg("-")
                    .arg("+")
                    .arg("COUNT")
                    .arg(64)
                    .query(&mut con);
                let mut s = s.lock().unwrap();
                for (_, fields) in got.unwrap_or_default() {
                    if s.entries.len() < 4_000 && !s.entries.contains(&fields) {
                        s.entries.push(fields);
                    }
                }
            }
            for pattern in [
                "rlbench:coord:beat:*",
                "rlbench:coord:lease:*",
                "rlbench:coord:agent:*",
            ] {
                for key in keys_or_none(&mut con, pattern) {
                    let v: redis::RedisResult<Option<String>> = if pattern.contains("agent:") {
                        redis::cmd("HGET")
                            .arg(&key)
                            .arg("registration")
                            .query(&mut con)
                    } else {
                        redis::cmd("GET").arg(&key).query(&mut con)
                    };
                    if let Ok(Some(v)) = v {
                        let mut s = s.lock().unwrap();
                        if s.values.len() < 2_000 && !s.values.iter().any(|(_, x)| *x == v) {
                            s.values.push((key.clone(), v));
                        }
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let mut child = monitor(server);
    std::thread::spawn(move || {
        let out = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(at) = line.find("\"RPUSH\" \"rlbench:coord:inbox:") {
                    if let Some(pushed) = crate::distributed_kit::pushed(&line[at..]) {
                        let mut s = seen.lock().unwrap();
                        if s.pushes.len() < 2_000 {
                            s.pushes.push(pushed);
                        }
                    }
                }
            }
        });
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
        let _ = reader.join();
    });
}

fn keys_or_none(con: &mut redis::Connection, pattern: &str) -> Vec<String> {
    redis::cmd("KEYS")
        .arg(pattern)
        .query(con)
        .unwrap_or_default()
}

/// One random thing the attacker does to the coordinator.
fn attack(rng: &mut SmallRng, server: &RedisServer, seen: &Mutex<Seen>) -> &'static str {
    let Ok(mut con) = redis::Client::open(server.url.as_str()).and_then(|c| c.get_connection())
    else {
        return "none (no connection)";
    };
    let streams = keys_or_none(&mut con, "rlbench:coord:run:*");
    let stream = (!streams.is_empty()).then(|| streams[rng.random_range(0..streams.len())].clone());
    let entries = |con: &mut redis::Connection, n: usize| -> Vec<(String, Fields)> {
        stream.as_ref().map_or_else(Vec::new, |s| {
            redis::cmd("XRANGE")
                .arg(s)
                .arg("-")
                .arg("+")
                .arg("COUNT")
                .arg(n)
                .query(con)
                .unwrap_or_default()
        })
    };
    let xadd = |con: &mut redis::Connection, fields: &Fields| {
        if let Some(s) = &stream {
            let mut cmd = redis::cmd("XADD");
            cmd.arg(s).arg("*");
            for (f, v) in fields {
                cmd.arg(f).arg(&v[..]);
            }
            let _: redis::RedisResult<String> = cmd.query(con);
        }
    };
    let del = |con: &mut redis::Connection, id: &str| {
        if let Some(s) = &stream {
            let _: redis::RedisResult<i64> = redis::cmd("XDEL").arg(s).arg(id).query(con);
        }
    };
    match rng.random_range(0..100) {
        0..=24 => {
            let e = {
                let s = seen.lock().unwrap();
                (!s.entries.is_empty())
                    .then(|| s.entries[rng.random_range(0..s.entries.len())].clone())
            };
            if let Some(e) = e {
                xadd(&mut con, &e);
            }
            "replay an entry"
        }
        25..=34 => {
            let got = entries(&mut con, 8);
            if !got.is_empty() {
                del(&mut con, &got[rng.random_range(0..got.len())].0);
            }
            "delete an entry"
        }
        35..=39 => {
            if let Some(s) = &stream {
                let _: redis::RedisResult<i64> = redis::cmd("XTRIM")
                    .arg(s)
                    .arg("MAXLEN")
                    .arg(rng.random_range(0..3))
                    .query(&mut con);
            }
            "trim a stream"
        }
        40..=49 => {
            let got = entries(&mut con, 2);
            if got.len() == 2 {
                del(&mut con, &got[0].0);
                del(&mut con, &got[1].0);
                xadd(&mut con, &got[1].1);
                xadd(&mut con, &got[0].1);
            }
            "reorder two entries"
        }
        50..=59 => {
            if let Some((_, f)) = entries(&mut con, 4).pop() {
                xadd(&mut con, &f);
            }
            "copy an entry"
        }
        60..=64 => {
            let big = rng.random_bool(0.3);
            let body = if big {
                vec![7u8; 3 * 1024 * 1024]
            } else {
                b"junk".to_vec()
            };
            xadd(
                &mut con,
                &vec![
                    ("kind".to_string(), b"chunk".to_vec()),
                    ("body".to_string(), body),
                    ("seq".to_string(), b"1".to_vec()),
                ],
            );
            "junk"
        }
        65..=74 => {
            let v = {
                let s = seen.lock().unwrap();
                (!s.values.is_empty())
                    .then(|| s.values[rng.random_range(0..s.values.len())].clone())
            };
            if let Some((key, old)) = v {
                // Its own older value, another key's, or junk.
                let value = if rng.random_bool(0.3) {
                    "forged".to_string()
                } else {
                    old
                };
                let _: redis::RedisResult<()> = if key.contains(":agent:") {
                    redis::cmd("HSET")
                        .arg(&key)
                        .arg("registration")
                        .arg(value)
                        .query(&mut con)
                } else {
                    redis::cmd("SET").arg(&key).arg(value).query(&mut con)
                };
            }
            "overwrite a key"
        }
        75..=84 => {
            let p = {
                let s = seen.lock().unwrap();
                (!s.pushes.is_empty())
                    .then(|| s.pushes[rng.random_range(0..s.pushes.len())].clone())
            };
            if let Some((inbox, m)) = p {
                let _: redis::RedisResult<i64> =
                    redis::cmd("RPUSH").arg(inbox).arg(m).query(&mut con);
            }
            "replay a message"
        }
        85..=89 => {
            kill_connections(&mut con);
            "kill connections"
        }
        90..=96 => {
            server.pause();
            std::thread::sleep(Duration::from_millis(rng.random_range(300..2_000)));
            server.resume();
            "pause the coordinator"
        }
        _ => {
            let _: redis::RedisResult<()> = redis::cmd("FLUSHALL").query(&mut con);
            "FLUSHALL"
        }
    }
}

fn runs() -> u64 {
    std::env::var("ADVERSARY_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2)
}

/// The run's outcome held to the invariants; a line of what happened.
fn judged(out: &std::process::Output, folder: &Path, did: &[&str]) {
    let err = text(&out.stderr);
    let why = || format!("after {did:?}\n{err}");
    assert!(!err.contains("panicked"), "{}", why());
    match out.status.code() {
        Some(1) => {
            let s = crate::common::summary(folder);
            assert_eq!(s["partial"], false, "exit 1 on a partial trace {}", why());
            let broken = crate::common::arm(&s, "broken");
            let correct = crate::common::arm(&s, "correct");
            assert!(
                broken["correctness"]["definite_violations"].as_u64() > Some(0),
                "{}",
                why()
            );
            assert_eq!(
                correct["correctness"]["definite_violations"],
                0,
                "{}",
                why()
            );
            assert_eq!(correct["correctness"]["false_rejects"], 0, "{}", why());
        }
        Some(3) => {
            assert!(
                err.lines().any(|l| l.starts_with("rlbench:")),
                "exit 3 with no line saying why {}",
                why()
            );
            if folder.join("summary.json").exists() {
                let s = crate::common::summary(folder);
                if s["partial"] == true {
                    assert!(s["partial_reason"].as_str().is_some_and(|r| !r.is_empty()));
                }
            }
        }
        other => panic!("exit {other:?}: the broken arm passed, or worse {}", why()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attacker_at_the_coordinator_never_gets_a_wrong_verdict_or_unasked_load() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = Target::start();
    let mut pool = agents(d, &coordinator.url, 2, "adv-", None);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let stop = Arc::new(AtomicBool::new(false));
    eavesdrop(&coordinator, seen.clone(), stop.clone());
    let base: u64 = std::env::var("ADVERSARY_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(59);
    let (mut exits, mut ops) = (std::collections::BTreeMap::new(), 0usize);
    for case in 0..runs() {
        let seed = base + case;
        let mut rng = SmallRng::seed_from_u64(seed);
        let path = d.join(format!("s{case}.toml"));
        std::fs::write(&path, scenario(target.port, seed)).unwrap();
        let folder = d.join(format!("out{case}"));
        let mut controller = spawn_run(
            d,
            &[
                path.to_str().unwrap(),
                "--agents",
                "2",
                "--coordinator",
                &coordinator.url,
                "--agents-wait",
                "15s",
                "--max-clock-uncertainty",
                "200ms",
                "-q",
                "--out",
                folder.to_str().unwrap(),
            ],
        );
        let mut did = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(90);
        // Let it hire its agents, then attack until it ends.
        std::thread::sleep(Duration::from_millis(rng.random_range(200..1_500)));
        while controller.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "a run took over 90 s: {did:?}");
            did.push(attack(&mut rng, &coordinator, &seen));
            std::thread::sleep(Duration::from_millis(rng.random_range(50..600)));
        }
        let out = controller.wait_with_output().unwrap();
        judged(&out, &folder, &did);
        *exits.entry(out.status.code()).or_insert(0) += 1;
        ops += did.len();
        // (b): the controller is gone; within its agents' 2 s they stop.
        // Then every captured message replayed sends nothing.
        std::thread::sleep(Duration::from_millis(2_500));
        let before = target.count();
        let pushes = seen.lock().unwrap().pushes.clone();
        let mut con = redis(&coordinator.url);
        for (inbox, m) in &pushes {
            let _: redis::RedisResult<i64> = redis::cmd("RPUSH").arg(inbox).arg(m).query(&mut con);
        }
        std::thread::sleep(Duration::from_millis(2_500));
        assert_eq!(
            target.count(),
            before,
            "load with no controller after replaying {} messages (case {case}, {did:?})",
            pushes.len()
        );
        // The agents serve on (registered again after a FLUSHALL).
        for a in &mut pool {
            assert!(
                a.0.as_mut().unwrap().try_wait().unwrap().is_none(),
                "an agent exited"
            );
        }
        let _ = keys(&mut con, "rlbench:coord:inbox:*");
    }
    stop.store(true, Ordering::Relaxed);
    eprintln!("adversary: {} runs, {ops} attacks, exits {exits:?}", runs());
    drop(pool);
}
