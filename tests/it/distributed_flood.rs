//! What an attacker writes cannot make the controller big: its agents'
//! streams flooded mid-run with tens of thousands of junk entries, entries
//! just under the size an agent's entry may have, and entries of tens of
//! MiB, the controller's peak resident memory (VmHWM) stays within
//! [`RSS_BUDGET_MIB`], and the run still ends as its limiter deserves.

use crate::common::{text, write};
use crate::distributed::agents;
use crate::distributed_kit::{external, keys, redis, spawn_run, wait_registered, Target};
use rlbench::testing::RedisServer;
use std::time::{Duration, Instant};

/// The controller's stated memory budget under a flood (MiB): a read
/// takes at most 8 MiB and one 2 MiB entry, a chunk inflates to at most
/// 16 MiB, an entry past 2 MiB is never sent to it at all (a debug build
/// peaked at 50 MiB here; reading this flood's entries whole, as it once
/// did, would pass 128).
const RSS_BUDGET_MIB: u64 = 128;

/// The process's peak resident memory (KiB), from /proc.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_junk_and_huge_entries_leaves_the_controller_within_its_budget() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = Target::start();
    let _agents = agents(d, &coordinator.url, 2, "flood-", None);
    let mut con = redis(&coordinator.url);
    wait_registered(&mut con, "flood-1");
    let path = write(d, "e.toml", &external(target.port, "4s"));
    let mut controller = spawn_run(
        d,
        &[
            path.to_str().unwrap(),
            "--agents",
            "2",
            "--coordinator",
            &coordinator.url,
            "--max-clock-uncertainty",
            "200ms",
            "--out",
            "out",
            "-q",
        ],
    );
    let pid = controller.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut streams = Vec::new();
    while streams.len() < 2 {
        assert!(Instant::now() < deadline, "the streams never appeared");
        streams = keys(&mut con, "rlbench:coord:run:*");
        std::thread::sleep(Duration::from_millis(20));
    }
    let just_under = vec![1u8; 1_900_000];
    let huge = vec![2u8; 32 * 1024 * 1024];
    let mut peak = 0;
    for s in &streams {
        for body in [&just_under; 8].into_iter().chain([&huge; 3]) {
            let _: String = redis::cmd("XADD")
                .arg(s)
                .arg("*")
                .arg("kind")
                .arg("chunk")
                .arg("counts")
                .arg("1 1 0 0")
                .arg("body")
                .arg(&body[..])
                .arg("seq")
                .arg("9")
                .arg("prev")
                .arg("")
                .arg("mac")
                .arg("00")
                .query(&mut con)
                .unwrap();
            peak = peak.max(peak_kib(pid).unwrap_or(0));
        }
        for _ in 0..5 {
            let mut pipe = redis::pipe();
            for i in 0..10_000 {
                pipe.cmd("XADD").arg(s).arg("*").arg("junk").arg(i).ignore();
            }
            let _: () = pipe.query(&mut con).unwrap();
            peak = peak.max(peak_kib(pid).unwrap_or(0));
        }
    }
    while controller.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline + Duration::from_secs(60),
            "the run never ended"
        );
        peak = peak.max(peak_kib(pid).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = controller.wait_with_output().unwrap();
    let err = text(&out.stderr);
    // (Shown only when the test fails.)
    for i in 0..2 {
        let log = std::fs::read_to_string(d.join(format!("flood-{i}.log")));
        eprintln!("agent flood-{i}:\n{}", log.unwrap_or_default());
    }
    assert!(peak > 0, "the controller's memory was never read");
    eprintln!("controller peak RSS under the flood: {} MiB", peak / 1024);
    assert!(
        peak / 1024 <= RSS_BUDGET_MIB,
        "{} MiB > {RSS_BUDGET_MIB} MiB\n{err}",
        peak / 1024
    );
    // Nothing of it was taken: a correct limiter passes on a complete trace.
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("larger than any entry of an agent"), "{err}");
    assert!(err.lines().count() < 20, "{err}");
}
