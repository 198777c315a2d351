//! The coordinator misbehaving under a correct limiter's run, on
//! loopback with real processes: paused for 5 s (SIGSTOP), its clients'
//! connections killed again and again, the controller's beat overwritten
//! by someone without the token. None may make the run fail as if the
//! limiter were broken (exit 1): it is complete and passes, or partial
//! with exit 3 and a line naming the coordinator.

use crate::common::text;
use crate::distributed_failures::two_agents_and_a_run;
use crate::distributed_kit::{kill_connections, redis, Target};
use rlbench::testing::RedisServer;
use std::time::{Duration, Instant};

/// Waits until the load is under way (the target saw `n` requests).
fn under_way(target: &Target, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while target.count() < n {
        assert!(Instant::now() < deadline, "the load never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Passed on a complete trace, or partial (exit 3) naming the coordinator.
fn passed_or_blamed_on_the_coordinator(out: &std::process::Output, dir: &std::path::Path) {
    let err = text(&out.stderr);
    let s = crate::common::summary(&dir.join("out"));
    match out.status.code() {
        Some(0) => assert_eq!(s["partial"], false, "{err}"),
        Some(3) => {
            assert_eq!(s["partial"], true, "{err}");
            let why = s["partial_reason"].as_str().unwrap_or("");
            assert!(
                why.contains("coordinator") || why.contains("stream"),
                "{why}\n{err}"
            );
        }
        other => panic!("exit {other:?}: a correct limiter failed\n{err}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_paused_for_five_seconds_never_fails_a_correct_limiter() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = Target::start();
    let (controller, _agents) = two_agents_and_a_run(d, &coordinator.url, target.port, "8s");
    under_way(&target, 150);
    coordinator.pause();
    std::thread::sleep(Duration::from_secs(5));
    coordinator.resume();
    let out = controller.join().unwrap();
    passed_or_blamed_on_the_coordinator(&out, d);
    let err = text(&out.stderr);
    assert!(
        !err.contains("was lost"),
        "no agent is lost to a stall\n{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_killed_again_and_again_never_fail_a_correct_limiter() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = Target::start();
    let (controller, _agents) = two_agents_and_a_run(d, &coordinator.url, target.port, "6s");
    under_way(&target, 100);
    let mut con = redis(&coordinator.url);
    let mut kills = 0;
    while !controller.is_finished() && kills < 20 {
        kill_connections(&mut con);
        kills += 1;
        std::thread::sleep(Duration::from_millis(250));
    }
    let out = controller.join().unwrap();
    assert!(
        kills >= 5,
        "the run ended before the connections were killed"
    );
    passed_or_blamed_on_the_coordinator(&out, d);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_beat_overwritten_without_the_token_blames_the_coordinator() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = Target::start();
    let (controller, _agents) = two_agents_and_a_run(d, &coordinator.url, target.port, "4s");
    under_way(&target, 50);
    let mut con = redis(&coordinator.url);
    // Once: the controller writes its beat again within half a second.
    let beats: Vec<String> = redis::cmd("KEYS")
        .arg("rlbench:coord:beat:*")
        .query(&mut con)
        .unwrap();
    assert!(!beats.is_empty(), "the controller beats");
    for b in &beats {
        let _: () = redis::cmd("SET")
            .arg(b)
            .arg("forged")
            .query(&mut con)
            .unwrap();
    }
    let out = controller.join().unwrap();
    passed_or_blamed_on_the_coordinator(&out, d);
    let err = text(&out.stderr);
    assert!(!err.contains("was lost"), "{err}");
}

/// An agent's registration overwritten by someone without the token,
/// faster than the agent signs it again, for longer than the controller
/// waits for a missing one: the run is partial (exit 3) and says the
/// coordinator held a registration not signed with the token — the agent
/// is not simply "lost".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_registration_is_blamed_on_the_coordinator() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = Target::start();
    let (controller, _agents) = two_agents_and_a_run(d, &coordinator.url, target.port, "14s");
    under_way(&target, 50);
    let mut con = redis(&coordinator.url);
    let deadline = Instant::now() + Duration::from_secs(13);
    while !controller.is_finished() && Instant::now() < deadline {
        let _: () = redis::cmd("HSET")
            .arg("rlbench:coord:agent:kept-1")
            .arg("registration")
            .arg("forged")
            .query(&mut con)
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = controller.join().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let s = crate::common::summary(&d.join("out"));
    let why = s["partial_reason"].as_str().unwrap_or("");
    assert!(
        why.contains("kept-1") && why.contains("not signed with the token"),
        "{why}\n{err}"
    );
}
