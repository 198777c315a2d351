//! Load agents (`rlbench agent`) and a controller (`rlbench run --agents`)
//! as separate processes on loopback, coordinated through a real
//! redis-server: the merged verdict of three-replicas matches one
//! machine's, the agents' segments add up to the schedule, a skewed agent
//! clock is harmless with offsets measured and misjudged without, and a
//! killed agent leaves a partial, clearly marked run.

use crate::common::{arm, bin, exited, rlbench, summary, text, write, Running};
use rlbench::testing::RedisServer;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The secret the tests' controllers and agents share (from the
/// environment, as the README advises).
pub(crate) const TOKEN: &str = "rlbench-test-token-0123456789";

/// Agents named `prefix0`, `prefix1`, ... at `url`; `shifted`: the index
/// whose own wall clock is 250 ms ahead. What each prints goes to
/// `dir/NAME.log` (a pipe nobody reads could fill and stall it).
pub(crate) fn agents(
    dir: &Path,
    url: &str,
    n: usize,
    prefix: &str,
    shifted: Option<usize>,
) -> Vec<Running> {
    (0..n)
        .map(|i| {
            let name = format!("{prefix}{i}");
            let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
            let mut cmd = std::process::Command::new(bin());
            cmd.args(["agent", "--coordinator", url, "--name", &name])
                .env("RLBENCH_COORDINATOR_TOKEN", TOKEN)
                .current_dir(dir)
                .stdout(log.try_clone().unwrap())
                .stderr(log);
            if shifted == Some(i) {
                cmd.env("RLBENCH_TEST_AGENT_CLOCK_SHIFT_MS", "250");
            }
            Running(Some(cmd.spawn().expect("rlbench agent starts")))
        })
        .collect()
}

/// `rlbench run ARGS`, its agents' placements on the time line checked
/// against this host's monotonic clock (`RLBENCH_TEST_CLOCK_TRUTH`).
/// With agents, and unless the test says otherwise, the clock bound is
/// 200 ms: debug-built agents on two shared cores see round trips of tens
/// of ms to the coordinator (the default allows 10).
pub(crate) fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut extra: Vec<&str> = Vec::new();
    if args.contains(&"--agents") && !args.contains(&"--max-clock-uncertainty") {
        extra = vec!["--max-clock-uncertainty", "200ms"];
    }
    std::process::Command::new(bin())
        .arg("run")
        .args(args)
        .args(extra)
        .current_dir(dir)
        .env("RLBENCH_TEST_CLOCK_TRUTH", "1")
        .env("RLBENCH_COORDINATOR_TOKEN", TOKEN)
        .output()
        .expect("rlbench runs")
}

/// Every agent's times were placed within their bound, for each arm:
/// the clock check ran (`n` lines a run) and found none beyond.
fn placed_within_bounds(out: &std::process::Output, n: usize) {
    let err = text(&out.stderr);
    let checks: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("clock check of agent"))
        .collect();
    assert_eq!(checks.len(), n, "{err}");
    for c in checks {
        assert!(c.contains(": 0 of "), "{c}");
    }
}

/// The `seq`s of an arm's trace, through `rlbench export`, each with the
/// agent that sent it.
fn seqs(dir: &Path, out: &str, arm_name: &str) -> Vec<(u64, Option<u64>)> {
    let o = rlbench(
        &["export", out, "--arm", arm_name, "--format", "jsonl"],
        dir,
    );
    exited(&o, 0);
    text(&o.stdout)
        .lines()
        .map(|l| {
            let v = serde_json::from_str::<serde_json::Value>(l).unwrap();
            (v["seq"].as_u64().unwrap(), v["agent"].as_u64())
        })
        .collect()
}

/// The expectation rows of an arm that failed.
fn failed(a: &serde_json::Value) -> Vec<String> {
    a["expect"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["passed"] == false)
        .map(|e| e["detail"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_agents_judge_three_replicas_as_one_machine_does() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _agents = agents(d, &coordinator.url, 3, "agent-", None);
    let scenario = root().join("scenarios/three-replicas.toml");
    let scenario = scenario.to_str().unwrap();
    let arms = ["--arm", "local", "--arm", "redis-lua", "-q"];
    let mut merged = vec![scenario, "--out", "merged", "--agents", "3"];
    merged.extend(["--coordinator", &coordinator.url]);
    merged.extend(arms);
    let out = run(d, &merged);
    let mut alone = vec![scenario, "--out", "alone"];
    alone.extend(arms);
    let one = run(d, &alone);
    let (m, s) = (summary(&d.join("merged")), summary(&d.join("alone")));
    assert_eq!(m["partial"], false, "{}", text(&out.stderr));
    placed_within_bounds(&out, 6);
    // First the trace: the union of the agents' events is exactly the
    // schedule (a lost event would make a reject look false).
    for name in ["local", "redis-lua"] {
        let a = arm(&m, name);
        let scheduled = a["rate"]["scheduled"].as_u64().unwrap();
        let sent = seqs(d, "merged", name);
        let got: BTreeSet<u64> = sent.iter().map(|&(seq, _)| seq).collect();
        assert_eq!(got, (0..scheduled).collect::<BTreeSet<_>>(), "{name}");
        assert_eq!(sent.len() as u64, scheduled, "{name}: each once");
        // Agent i sent the schedule's indexes i modulo 3.
        assert!(sent.iter().all(|&(seq, agent)| agent == Some(seq % 3)));
        // One machine's export names no agent, and its lanes (which
        // claim requests as they fall due) sent each exactly once.
        let alone = seqs(d, "alone", name);
        assert!(alone.iter().all(|(_, agent)| agent.is_none()));
        let one = arm(&s, name)["rate"]["scheduled"].as_u64().unwrap();
        let got: BTreeSet<u64> = alone.iter().map(|&(seq, _)| seq).collect();
        assert_eq!(got, (0..one).collect::<BTreeSet<_>>(), "{name}");
        assert_eq!(alone.len() as u64, one, "{name} alone: each once");
        assert_eq!(a["requests"]["sent"].as_u64(), Some(scheduled));
        let rows = a["per_agent"].as_array().expect("per-agent rows");
        assert_eq!(rows.len(), 3);
        let sent: u64 = rows.iter().map(|r| r["sent"].as_u64().unwrap()).sum();
        assert_eq!(sent, scheduled);
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(
                (r["segment"].as_u64(), r["of"].as_u64()),
                (Some(i as u64), Some(3))
            );
            assert_eq!(r["agent"], format!("agent-{i}"));
            let u = r["clock_uncertainty_ms"].as_f64().unwrap();
            assert!(u > 0.0 && u < 100.0, "{r}");
        }
        // The same schedule, up to where its bursts fall: they straddle
        // the policy's epoch-aligned window edges, and a run whose end
        // meets an edge keeps part of that edge's burst (300 requests).
        let alone = arm(&s, name)["rate"]["scheduled"].as_u64().unwrap();
        assert!(
            alone.abs_diff(scheduled) < 300,
            "one machine's schedule is the same up to one burst: {alone} vs {scheduled}"
        );
    }
    for (which, sum) in [("merged", &m), ("one machine", &s)] {
        // The fake global limit: proven, well over (about three times on
        // an idle machine; under CPU burners ratios of 1.9 were seen).
        let local = arm(sum, "local");
        let c = &local["correctness"];
        assert!(
            c["over_admission_ratio"].as_f64().unwrap() >= 1.5,
            "{which}: {c}"
        );
        assert!(
            c["definite_violations"].as_u64().unwrap() > 0,
            "{which}: {c}"
        );
        // The fix: exactly right, across three replicas and three agents.
        let lua = arm(sum, "redis-lua");
        let c = &lua["correctness"];
        assert_eq!(c["definite_violations"], 0, "{which}: {c}");
        assert!(failed(lua).is_empty(), "{which}: {:?}", failed(lua));
        // No false reject, unless Redis did not answer a replica within
        // 50 ms (the scenario's fail_closed: on a busy machine it happens,
        // and a script that ran after its replica gave up leaves an admit
        // nobody saw, which makes later rejects false too): those are the
        // limiter's, and the run says so.
        let fell_back = lua["redis_errors"]["failed_closed"].as_u64().unwrap_or(0);
        if fell_back == 0 {
            assert_eq!(c["false_rejects"], 0, "{which}: {c}");
        }
    }
    // One gate, the same, but for what the merged run may prove less of:
    // `local` expects a RateLimit header contradiction shown, which needs
    // the sends of the agents (each feeding its own replica) ordered
    // within a millisecond; on this machine's two cores, shared by three
    // debug-built agents, the replicas and other tests, they often are
    // not. And its requests, widened by each agent's clock bound, leave a
    // correct limiter more room (U), so its ratio may fall just under the
    // scenario's 2 (1.977 seen on a busy machine). Those expectations are
    // claims of detection, not of soundness: the fake is still proven
    // above (definite > 0, ratio ≥ 1.5).
    let undetected = |sum: &serde_json::Value| {
        failed(arm(sum, "local")).iter().all(|f| {
            f.starts_with("remaining_contradictions") || f.starts_with("over_admission_ratio")
        })
    };
    assert!(undetected(&m), "merged: {:?}", failed(arm(&m, "local")));
    if out.status.code() != one.status.code() {
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(!failed(arm(&m, "local")).is_empty());
    }
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
}

const SKEW: &str = r#"
name = "skew"
duration = "4s"
seed = 3

[policy]
algorithm = "sliding_log"
limit = 10
window = "1s"

[cluster]
replicas = 3

[load]
rate = 300
keys = 2

# A busy machine (three debug-built agents, the replicas, other tests on
# two cores) can keep Redis from answering within the default 50 ms; the
# replica would then admit without it (fail_open), a violation of the
# limiter's own making. A second keeps this test about clocks.
[redis]
timeout = "1s"

[[arms]]
name = "lua"
mode = "redis_lua"
[arms.expect]
max_definite_violations = 0
max_false_reject_ratio = 0
"#;

/// One agent's wall clock 250 ms ahead: measured against the coordinator's,
/// harmless; trusted, its requests land 250 ms off and a correct limiter
/// is misjudged both ways.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skewed_agent_clock_is_measured_away_and_misjudges_when_trusted() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _agents = agents(d, &coordinator.url, 3, "a", Some(2));
    let path = write(d, "skew.toml", SKEW);
    let path = path.to_str().unwrap();
    let url = coordinator.url.as_str();
    let base = [path, "--agents", "3", "--coordinator", url, "-q"];

    let mut args = base.to_vec();
    args.extend(["--out", "measured"]);
    let out = run(d, &args);
    exited(&out, 0);
    placed_within_bounds(&out, 3);
    let s = summary(&d.join("measured"));
    let lua = arm(&s, "lua");
    assert_eq!(lua["correctness"]["definite_violations"], 0);
    assert_eq!(lua["correctness"]["false_rejects"], 0);
    let rows = lua["per_agent"].as_array().unwrap();
    let offset = rows[2]["clock_offset_ms"].as_f64().unwrap();
    assert!(
        (offset + 250.0).abs() < 20.0,
        "a2 shows its clock ahead: {offset}"
    );
    assert_eq!(rows[2]["clock_estimated"], true);

    let mut args = base.to_vec();
    args.extend(["--out", "trusted", "--trust-agent-clocks"]);
    let out = run(d, &args);
    exited(&out, 1);
    let s = summary(&d.join("trusted"));
    let c = &arm(&s, "lua")["correctness"];
    assert!(
        c["definite_violations"].as_u64().unwrap() > 0 && c["false_rejects"].as_u64().unwrap() > 0,
        "a correct limiter misjudged both ways: {c}"
    );
    assert_eq!(arm(&s, "lua")["per_agent"][2]["clock_estimated"], false);
}

/// An agent killed mid-run: the controller notices its heartbeat stop, the
/// run is partial, names it, and exits 3 (the harness failed, not the
/// limiter); the others' events are kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_agent_makes_a_partial_clearly_marked_run() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut agents = agents(d, &coordinator.url, 3, "k", None);
    // 8 s: the agent is killed about 1 s in and found lost 3 s later
    // (the heartbeat's timeout), which leaves the others 4 s to take its
    // requests over even when a busy machine is slow to notice (at 6 s
    // and a kill 2 s in, CI once found it lost only at the run's end).
    let path = write(d, "s.toml", &SKEW.replace("\"4s\"", "\"8s\""));
    let url = coordinator.url.clone();
    let d2 = d.to_path_buf();
    let controller = std::thread::spawn(move || {
        let p = d2.join("s.toml");
        run(
            &d2,
            &[
                p.to_str().unwrap(),
                "--agents",
                "3",
                "--coordinator",
                &url,
                "--out",
                "out",
                "-q",
            ],
        )
    });
    // Once the load runs (its spool is there), kill the last agent.
    let spool = d.join("out/events/lua.agents");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !spool.exists() {
        assert!(Instant::now() < deadline, "the load never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(1));
    let mut killed = agents[2].0.take().unwrap();
    killed.kill().unwrap();
    killed.wait().unwrap();
    let out = controller.join().unwrap();
    exited(&out, 3);
    let _ = path;
    let s = summary(&d.join("out"));
    assert_eq!(s["partial"], true);
    let why = s["partial_reason"].as_str().unwrap();
    assert!(why.contains("agent k2 (segment 2 of 3) was lost"), "{why}");
    let rows = arm(&s, "lua")["per_agent"].as_array().unwrap().clone();
    assert!(rows[2]["lost_at_s"].as_f64().unwrap() > 0.0);
    assert!(rows[0]["lost_at_s"].is_null() && rows[1]["lost_at_s"].is_null());
    // The others' segments arrived whole: 8 s at 300/s, a third each; one
    // of them also sent the lost one's requests due from shortly after it
    // was found lost.
    let taken = &rows[2]["taken_over"];
    let requests = taken["requests"]
        .as_u64()
        .unwrap_or_else(|| panic!("{rows:?}"));
    assert!(requests > 0, "{taken}");
    for r in &rows[..2] {
        let own = if r["agent"] == taken["by"] {
            800 + requests
        } else {
            800
        };
        assert_eq!(r["sent"].as_u64(), Some(own), "{r}");
    }
    assert!(text(&out.stderr).contains("partial") || text(&out.stderr).contains("lost"));
}
