//! The replays that once worked, kept as regression cases, on loopback
//! with real processes: an agent's signed entries of a correct arm,
//! captured as they passed through the coordinator and spliced into the
//! same agent's stream of a later, broken arm of the same run (which once
//! turned the broken arm green); and a run's signed work and lease,
//! replayed to a new agent process of the same name (which once made an
//! idle agent send its whole segment with no controller running).

use crate::common::write;
use crate::distributed::{agents, run};
use crate::distributed_attacks::BROKEN;
use crate::distributed_kit::{capture_pushes, external, keys, redis, wait_registered, Target};
use rlbench::testing::RedisServer;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A correct arm, then the attacks' broken one (three replicas each
/// counting alone): the second must fail its gate whatever is spliced
/// into its streams.
fn two_arms() -> String {
    BROKEN
        .replace("duration = \"4s\"", "duration = \"3s\"")
        .replace(
            "[[arms]]\nname = \"local\"",
            "[[arms]]\nname = \"correct\"\nmode = \"redis_lua\"\n[arms.expect]\n\
         max_definite_violations = 0\n\n[[arms]]\nname = \"candidate\"",
        )
}

type Fields = Vec<(String, Vec<u8>)>;

/// Every entry of the streams matching `pattern`, as fast as they can be
/// read before the controller removes them, by agent (the stream key's
/// last part), until `stop`.
fn eavesdrop(
    url: String,
    pattern: &'static str,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<BTreeMap<String, Vec<(String, Fields)>>> {
    std::thread::spawn(move || {
        let mut con = redis(&url);
        let mut seen: BTreeMap<String, Vec<(String, Fields)>> = BTreeMap::new();
        let deadline = Instant::now() + Duration::from_secs(90);
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            for key in keys(&mut con, pattern) {
                let agent = key.rsplit(':').next().unwrap().to_string();
                let got: redis::RedisResult<Vec<(String, Fields)>> = redis::cmd("XRANGE")
                    .arg(&key)
                    .arg("-")
                    .arg("+")
                    .query(&mut con);
                let list = seen.entry(agent).or_default();
                for (id, fields) in got.unwrap_or_default() {
                    if !list.iter().any(|(i, _)| *i == id) {
                        list.push((id, fields));
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        seen
    })
}

/// An agent's signed entries of the run's correct arm, captured, and
/// written into its stream of the broken arm among its own:
/// none is taken (each is signed for another arm), the broken limiter
/// fails its gate on a complete trace (exit 1), and what was ignored is
/// said once per agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_earlier_arms_entries_spliced_into_a_broken_arm_never_turn_it_green() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _agents = agents(d, &coordinator.url, 3, "sp-", None);
    let path = write(d, "two.toml", &two_arms());
    let url = coordinator.url.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let captured = eavesdrop(url.clone(), "rlbench:coord:run:*:correct:*", stop.clone());
    let splicing = {
        let (url, stop) = (url.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut con = redis(&url);
            let mut spliced = 0usize;
            let mut done: std::collections::BTreeSet<String> = Default::default();
            let mut captured = Some(captured);
            let mut seen = BTreeMap::new();
            let deadline = Instant::now() + Duration::from_secs(90);
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                let streams = keys(&mut con, "rlbench:coord:run:*:candidate:*");
                if !streams.is_empty() {
                    if let Some(c) = captured.take() {
                        stop.store(true, Ordering::Relaxed);
                        seen = c.join().unwrap();
                        stop.store(false, Ordering::Relaxed);
                    }
                }
                for key in streams {
                    let agent = key.rsplit(':').next().unwrap().to_string();
                    if !done.insert(key.clone()) {
                        continue;
                    }
                    for (_, fields) in seen.get(&agent).into_iter().flatten() {
                        let mut cmd = redis::cmd("XADD");
                        cmd.arg(&key).arg("*");
                        for (f, v) in fields {
                            cmd.arg(f).arg(&v[..]);
                        }
                        let _: redis::RedisResult<String> = cmd.query(&mut con);
                        spliced += 1;
                    }
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            (spliced, seen.values().map(Vec::len).sum::<usize>())
        })
    };
    let out = run(
        d,
        &[
            path.to_str().unwrap(),
            "--agents",
            "3",
            "--coordinator",
            &url,
            "--out",
            "out",
            "-q",
        ],
    );
    stop.store(true, Ordering::Relaxed);
    let (spliced, captured) = splicing.join().unwrap();
    let err = crate::common::text(&out.stderr);
    assert!(captured > 0 && spliced > 0, "nothing was spliced\n{err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    let s = crate::common::summary(&d.join("out"));
    assert_eq!(s["partial"], false, "{err}");
    let correct = crate::common::arm(&s, "correct");
    assert_eq!(correct["correctness"]["definite_violations"], 0, "{err}");
    let candidate = crate::common::arm(&s, "candidate");
    assert!(
        candidate["correctness"]["definite_violations"]
            .as_u64()
            .unwrap()
            > 0,
        "{candidate}\n{err}"
    );
    assert!(
        err.contains("not signed by this agent for this arm"),
        "{err}"
    );
}

/// A run's work captured from an agent's inbox and its signed lease read
/// from the coordinator; the agent then replaced by a new process of the
/// same name, the lease put back (and, another time, a lease nobody
/// signed) and the work pushed again within its 30 s: the new agent
/// sends nothing, and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_replayed_to_a_new_agent_of_the_same_name_sends_nothing() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = Target::start();
    let mut first = agents(d, &coordinator.url, 1, "again-", None);
    let mut con = redis(&coordinator.url);
    wait_registered(&mut con, "again-0");
    // The work, and the run's start and end, as they pass.
    let captured = capture_pushes(&coordinator, "rlbench:coord:inbox:again-0");
    let lease_key = "rlbench:coord:lease:again-0";
    let leases = {
        let url = coordinator.url.clone();
        std::thread::spawn(move || {
            let mut con = redis(&url);
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                let held: Option<String> =
                    redis::cmd("GET").arg(lease_key).query(&mut con).unwrap();
                if let Some(h) = held {
                    return Some(h);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            None
        })
    };
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
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        crate::common::text(&out.stderr)
    );
    let works = captured.join().unwrap();
    let lease = leases.join().unwrap().expect("the run leased the agent");
    assert!(
        works
            .iter()
            .any(|(k, _)| k == "rlbench:coord:inbox:again-0"),
        "the run's work was seen: {works:?}"
    );
    assert!(
        works.iter().any(|(k, _)| k.contains(":run:")),
        "the run's start was seen: {works:?}"
    );
    let sent = target.count();
    assert!(sent > 100, "the run itself sent its load: {sent}");
    // The first agent stopped as an operator would (SIGTERM: it lets its
    // name go), and a new one started under that name.
    let mut child = first[0].0.take().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    child.wait().unwrap();
    let _second = agents(d, &coordinator.url, 1, "again-", None);
    std::thread::sleep(Duration::from_millis(300));
    wait_registered(&mut con, "again-0");
    for held in [lease.as_str(), "{\"run\":\"whatever\"}"] {
        let _: () = redis::cmd("SET")
            .arg(lease_key)
            .arg(held)
            .query(&mut con)
            .unwrap();
        for (inbox, m) in &works {
            let _: () = redis::cmd("RPUSH")
                .arg(inbox)
                .arg(m)
                .query(&mut con)
                .unwrap();
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    assert_eq!(target.count(), sent, "a replay sent load");
    let log = std::fs::read_to_string(d.join("again-0.log")).unwrap();
    assert!(log.contains("refused work"), "{log}");
}
