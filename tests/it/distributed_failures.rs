//! The processes of a distributed run dying under it: a controller killed
//! mid-run, an agent killed or paused, the coordinator restarted or out of
//! memory for a while. Each case with its outcome asserted, on loopback,
//! bounded; none leaves an agent sending after its controller is gone,
//! none loses or doubles a request. (Forged messages:
//! `distributed_attacks`.)

use crate::common::{bin, text, write, Running};
use crate::distributed::{agents, TOKEN};
use crate::distributed_kit::{external, redis, run_in_background, wait_registered, Target};
use rlbench::testing::RedisServer;
use std::path::Path;
use std::time::{Duration, Instant};

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
    // A lost agent is the harness's failure, not the limiter's.
    assert_eq!(out.status.code(), Some(3), "{stdout}{err}");
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
    assert_eq!(out.status.code(), Some(3), "{stdout}{err}");
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
    // (Exit 3: the partial arm never passes, as in the run.)
    let again = text(&report.stderr);
    assert_eq!(report.status.code(), Some(3), "{again}");
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
pub(crate) fn two_agents_and_a_run(
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
