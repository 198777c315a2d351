//! End to end through the real binary: real replica processes, real HTTP,
//! the summary contract, the gate's exit codes, and no process left behind
//! on any exit path (normal end, gate failure, Ctrl-C, panic, SIGKILL).

use crate::common;

use common::{arm, rlbench, run_single, summary, text, wait_no_replicas, write};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;
use std::time::{Duration, Instant};

#[test]
fn a_run_shows_the_fake_global_and_passes_its_gate() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "s.toml", &common::small_scenario("3s", ""));
    let child = common::spawn(dir.path(), &["run", path.to_str().unwrap(), "--quiet"], &[]);
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        wait_no_replicas(pid, Duration::from_secs(2)).is_empty(),
        "replicas left behind"
    );

    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("single") && stdout.contains("local"),
        "{stdout}"
    );
    let latest = dir.path().join("reports/small/latest");
    assert!(stdout.contains("reports/small/"), "{stdout}");
    let s = summary(&latest);
    assert_eq!(s["schema"], "rlbench.summary/v1");
    assert_eq!(s["partial"], false);
    assert_eq!(s["gate"]["passed"], true);

    let single = arm(&s, "single");
    let c = &single["correctness"];
    assert_eq!(c["definite_violations"], 0);
    let ratio = c["over_admission_ratio"].as_f64().unwrap();
    assert!(
        (0.9..=1.05).contains(&ratio),
        "single over-admission {ratio}"
    );
    assert_eq!(single["requests"]["sent"], 900);
    assert_eq!(single["requests"]["errors"], 0);

    let local = arm(&s, "local");
    let ratio = local["correctness"]["over_admission_ratio"]
        .as_f64()
        .unwrap();
    assert!((2.0..=3.4).contains(&ratio), "local over-admission {ratio}");
    assert!(
        local["correctness"]["definite_violations"]
            .as_u64()
            .unwrap()
            > 0
    );
    let per_replica = local["per_replica"].as_array().unwrap();
    assert_eq!(per_replica.len(), 3);
    assert!(
        per_replica.iter().all(|r| r["sent"] == 300),
        "round-robin: {per_replica:?}"
    );
    for field in ["p50", "p90", "p99", "p999", "max"] {
        assert!(
            local["latency_ms"][field].as_f64().unwrap() > 0.0,
            "{field}"
        );
    }

    for arm_name in ["single", "local"] {
        let hgrm = std::fs::read_to_string(latest.join(format!("{arm_name}.hgrm"))).unwrap();
        assert!(
            hgrm.contains("Percentile") && hgrm.contains("Total count    =          900]"),
            "{hgrm}"
        );
        assert!(latest.join(format!("{arm_name}.service.hgrm")).is_file());
    }
    // The serialized histogram holds every request and matches the figures.
    use base64::Engine;
    let encoded = local["histograms"]["latency_us"].as_str().unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap();
    let h: hdrhistogram::Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .unwrap();
    assert_eq!(h.len(), 900);
    let p99 = local["latency_ms"]["p99"].as_f64().unwrap();
    assert!((h.value_at_quantile(0.99) as f64 / 1000.0 - p99).abs() < 1e-9);
    let replica_h = local["per_replica"][1]["histograms"]["service_us"]
        .as_str()
        .unwrap();
    assert!(!replica_h.is_empty());

    // The trace is kept in binary; `rlbench export` gives it as CSV or JSON Lines.
    assert!(latest.join("events/local.trace").is_file());
    let export = rlbench(
        &["export", latest.to_str().unwrap(), "--arm", "local"],
        dir.path(),
    );
    assert!(export.status.success(), "{}", text(&export.stderr));
    let events = text(&export.stdout);
    assert!(
        events.starts_with("arm,seq,key,replica,intended_us,sent_us,done_us,status,outcome,error,"),
        "{}",
        &events[..200]
    );
    assert_eq!(events.lines().count(), 901);
    let export = rlbench(
        &["export", latest.to_str().unwrap(), "--format", "jsonl"],
        dir.path(),
    );
    let lines: Vec<Value> = text(&export.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Both arms, in the run's order.
    assert_eq!(lines.len(), 1800);
    assert_eq!(lines[0]["arm"], "single");
    assert_eq!(lines[1799]["arm"], "local");
    assert!(lines
        .iter()
        .all(|l| l["outcome"] == "admitted" || l["outcome"] == "rejected"));
    let bad = rlbench(
        &["export", latest.to_str().unwrap(), "--format", "xml"],
        dir.path(),
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("invalid value 'xml' for '--format <FORMAT>'"));
    let bad = rlbench(
        &["export", latest.to_str().unwrap(), "--arm", "nope"],
        dir.path(),
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("--arm \"nope\": the run has single, local"),
        "{}",
        text(&bad.stderr)
    );

    // The reference API's headers: on every answer, exact for one replica,
    // and each replica's own count (so contradicted) across three.
    let h = &single["headers"];
    assert_eq!(h["conventions"]["ratelimit"]["present"], 900, "{h}");
    assert_eq!(h["conventions"]["ratelimit"]["malformed"], 0, "{h}");
    assert!(h["remaining"]["checked"].as_u64().unwrap() > 0, "{h}");
    assert_eq!(h["remaining"]["contradicted"], 0, "{h}");
    assert_eq!(h["findings"].as_array().unwrap().len(), 0, "{h}");
    let probes = h["retry_after_probes"].as_array().unwrap();
    assert_eq!(probes.len(), 2, "{h}");
    assert!(probes.iter().all(|p| p["result"] == "admitted"), "{h}");
    let h = &local["headers"];
    assert!(h["remaining"]["contradicted"].as_u64().unwrap() > 0, "{h}");
    assert!(stdout.contains("headers of local:"), "{stdout}");
}

/// `latest` is the last run of every arm: a run of some arms points a
/// link of its own (`latest-single`), so `explain …/latest --arm local`
/// still reads a folder that has that arm.
#[test]
fn a_run_of_one_arm_leaves_latest_to_the_runs_of_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "s.toml", &common::small_scenario("2s", ""));
    let s = path.to_str().unwrap();
    let all = rlbench(&["run", s, "-q"], dir.path());
    assert_eq!(all.status.code(), Some(0), "{}", text(&all.stderr));
    let reports = dir.path().join("reports/small");
    let first = std::fs::read_link(reports.join("latest")).unwrap();
    let one = rlbench(
        &["run", s, "-q", "--arm", "single", "--duration", "1s"],
        dir.path(),
    );
    assert_eq!(one.status.code(), Some(0), "{}", text(&one.stderr));
    assert_eq!(std::fs::read_link(reports.join("latest")).unwrap(), first);
    let single = std::fs::read_link(reports.join("latest-single")).unwrap();
    assert_ne!(single, first);
    assert!(reports.join(&single).join("summary.json").is_file());
    let explained = rlbench(
        &["explain", "reports/small/latest", "--arm", "local"],
        dir.path(),
    );
    assert_eq!(
        explained.status.code(),
        Some(0),
        "{}",
        text(&explained.stderr)
    );
}

#[test]
fn a_failed_expectation_exits_1_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let text_ = common::small_scenario("2s", "min_over_admission_ratio = 2.0");
    let path = write(dir.path(), "s.toml", &text_);
    let out_dir = dir.path().join("out");
    let out = rlbench(
        &[
            "run",
            path.to_str().unwrap(),
            "--arm",
            "single",
            "--out",
            out_dir.to_str().unwrap(),
            "-q",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("expectation failed: single: over_admission_ratio"),
        "{err}"
    );
    assert!(err.contains("< min 2"), "{err}");
    let s = summary(&out_dir);
    assert_eq!(s["gate"]["passed"], false);
    assert_eq!(s["arms"].as_array().unwrap().len(), 1, "--arm runs one arm");
    let failed: Vec<&Value> = arm(&s, "single")["expect"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["passed"] == false)
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["figure"], "over_admission_ratio");
    let junit = std::fs::read_to_string(out_dir.join("junit.xml")).unwrap();
    assert!(
        junit.contains("<testsuite name=\"small/single\" tests=\"6\""),
        "{junit}"
    );
    assert!(junit.contains("failures=\"1\""), "{junit}");
    assert!(
        junit.contains("<failure message=\"over_admission_ratio"),
        "{junit}"
    );
    assert!(junit.contains("&lt; min 2"), "{junit}");
}

#[test]
fn ctrl_c_stops_the_run_writes_a_partial_report_and_leaves_no_replica() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "s.toml", &common::small_scenario("60s", ""));
    let out_dir = dir.path().join("out");
    let args = [
        "run",
        path.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "-q",
    ];
    let child = common::spawn(dir.path(), &args, &[]);
    let pid = child.id();
    let events = out_dir.join("events/single.trace");
    common::wait_started(pid, &events);
    std::thread::sleep(Duration::from_millis(1_500));
    kill(Pid::from_raw(pid as i32), Signal::SIGINT).unwrap();
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?} to stop",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(
        wait_no_replicas(pid, Duration::from_secs(2)).is_empty(),
        "replicas left behind"
    );
    let s = summary(&out_dir);
    assert_eq!(s["partial"], true);
    let single = arm(&s, "single");
    assert_eq!(single["partial"], true);
    let sent = single["requests"]["sent"].as_u64().unwrap();
    assert!(sent > 100 && sent < 18_000, "sent {sent}");
    assert!(text(&out.stderr).contains("interrupted"));
}

#[test]
fn a_panic_leaves_no_replica_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "s.toml", &common::small_scenario("30s", ""));
    let args = ["run", path.to_str().unwrap(), "--arm", "local", "-q"];
    let child = common::spawn(dir.path(), &args, &[("RLBENCH_TEST_PANIC_AFTER_UP", "1")]);
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(101),
        "a panic: {}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).contains("3 process(es) up"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        wait_no_replicas(pid, Duration::from_secs(2)).is_empty(),
        "replicas left behind"
    );
}

#[test]
fn replicas_exit_when_rlbench_is_killed_outright() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "s.toml", &common::small_scenario("60s", ""));
    let mut child = common::spawn(
        dir.path(),
        &["run", path.to_str().unwrap(), "--arm", "local", "-q"],
        &[],
    );
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(20);
    while common::replicas_of(pid).len() < 3 {
        assert!(Instant::now() < deadline, "replicas never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    let left = wait_no_replicas(pid, Duration::from_secs(5));
    assert!(
        left.is_empty(),
        "replicas outlived a killed rlbench: {left:?}"
    );
}

#[test]
fn report_rebuilds_the_same_figures_from_the_run_folder_alone() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = common::run_small(dir.path(), "2s");
    let path = dir.path().join("s.toml");
    let original = std::fs::read_to_string(out_dir.join("summary.json")).unwrap();
    std::fs::remove_file(out_dir.join("summary.json")).unwrap();
    // The scenario it ran from may change or vanish; the folder has a copy.
    std::fs::remove_file(&path).unwrap();

    let again = rlbench(&["report", out_dir.to_str().unwrap()], dir.path());
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    let rebuilt = std::fs::read_to_string(out_dir.join("summary.json")).unwrap();
    assert_eq!(rebuilt, original, "the same figures, byte for byte");
    assert!(text(&again.stdout).contains("single"));

    // compare: a run against itself, then against a worse copy.
    let summary = out_dir.join("summary.json");
    let same = rlbench(
        &[
            "compare",
            summary.to_str().unwrap(),
            summary.to_str().unwrap(),
            "--max-regression",
            "5%",
        ],
        dir.path(),
    );
    assert_eq!(same.status.code(), Some(0), "{}", text(&same.stderr));
    assert!(
        text(&same.stdout).contains("over_admission_ratio"),
        "{}",
        text(&same.stdout)
    );
    let mut worse: Value = serde_json::from_str(&rebuilt).unwrap();
    let base_ratio = worse["arms"][1]["correctness"]["over_admission_ratio"]
        .as_f64()
        .unwrap();
    worse["arms"][1]["correctness"]["over_admission_ratio"] = serde_json::json!(base_ratio * 1.5);
    let worse_path = write(dir.path(), "worse.json", &worse.to_string());
    let regressed = rlbench(
        &[
            "compare",
            summary.to_str().unwrap(),
            worse_path.to_str().unwrap(),
            "--max-regression",
            "10%",
        ],
        dir.path(),
    );
    assert_eq!(
        regressed.status.code(),
        Some(1),
        "{}",
        text(&regressed.stdout)
    );
    assert!(
        text(&regressed.stderr).contains("regression: local: over_admission_ratio"),
        "{}",
        text(&regressed.stderr)
    );
    let toml = write(dir.path(), "s2.toml", "name = \"not json\"\n");
    let not_a_summary = rlbench(
        &["compare", summary.to_str().unwrap(), toml.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(not_a_summary.status.code(), Some(2));

    let nowhere = rlbench(&["report", dir.path().to_str().unwrap()], dir.path());
    assert_eq!(nowhere.status.code(), Some(2));
    assert!(
        text(&nowhere.stderr).contains("not a run folder"),
        "{}",
        text(&nowhere.stderr)
    );
}

#[test]
fn bursts_at_window_edges_make_a_correct_fixed_window_admit_twice_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = r#"
name = "edges"
duration = "3500ms"

[policy]
algorithm = "fixed_window"
limit = 10
window = "1s"

[load]
schedule = "bursts"
burst = 40
burst_spread = "40ms"
keys = 1

[[arms]]
name = "fixed"
mode = "local"
[arms.expect]
max_definite_violations = 0
min_peak_window_ratio = 1.8
"#;
    let path = write(dir.path(), "s.toml", scenario);
    let out = rlbench(
        &["run", path.to_str().unwrap(), "--out", "out", "-q"],
        dir.path(),
    );
    common::exited(&out, 0);
    let s = summary(&dir.path().join("out"));
    let arm = &s["arms"][0];
    // Three or four edges fall in 3.5 s, depending on the wall clock.
    let sent = arm["requests"]["sent"].as_u64().unwrap();
    assert!((100..=160).contains(&sent), "{sent}");
    assert!(arm["correctness"]["peak_window_ratio"].as_f64().unwrap() >= 1.8);
}

#[test]
fn a_generator_that_falls_behind_says_so() {
    let dir = tempfile::tempdir().unwrap();
    // One request in flight at a time cannot keep 20,000 requests/s: the
    // schedule is cut short, and that fails the gate, saying why.
    let scenario = common::small_scenario("1s", "")
        .replace("rate = 300", "rate = 20000\nmax_in_flight = 1")
        .replace(
            "[arms.expect]\nmax_definite_violations = 0\nmax_over_admission_ratio = 1.05",
            "[arms.expect]\nmax_definite_violations = 0",
        );
    let path = write(dir.path(), "s.toml", &scenario);
    let out = rlbench(
        &[
            "run",
            path.to_str().unwrap(),
            "--arm",
            "single",
            "--out",
            "out",
            "-q",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("not_sent_ratio"),
        "{}",
        text(&out.stderr)
    );
    let s = summary(&dir.path().join("out"));
    let rate = &s["arms"][0]["rate"];
    assert_eq!(rate["generator_saturated"], true, "{rate}");
    assert_eq!(rate["scheduled"], 20_000, "{rate}");
    assert!(rate["not_sent"]["behind"].as_u64().unwrap() > 0, "{rate}");
    assert!(rate["achieved_rps"].as_f64().unwrap() < 19_800.0, "{rate}");
    assert!(
        text(&out.stdout).contains("generator saturated in single"),
        "{}",
        text(&out.stdout)
    );
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(html.contains("the load generator fell behind"));
}

#[test]
fn closed_loop_workers_send_back_to_back_until_the_end() {
    let dir = tempfile::tempdir().unwrap();
    // Back-to-back requests straddle every window edge, and with ~15 admits
    // allowed in a second one admit decided a little after its send time is
    // already 7% against the ideal replay: the ratio bound is for open-loop
    // runs; the sound bound (0 definite violations) stays.
    let scenario = common::small_scenario("1s", "")
        .replace("rate = 300", "schedule = \"closed\"\nconcurrency = 2")
        .replace("max_over_admission_ratio = 1.05\n", "");
    let started = std::time::Instant::now();
    run_single(dir.path(), &scenario);
    assert!(started.elapsed() < Duration::from_secs(10));
    let s = summary(&dir.path().join("out"));
    let arm = &s["arms"][0];
    let sent = arm["requests"]["sent"].as_u64().unwrap();
    assert!(sent > 100, "two workers for a second: {sent}");
    assert_eq!(arm["correctness"]["definite_violations"], 0);
    // No schedule to fall behind: requests leave when a worker is ready.
    assert!(
        arm["schedule_lag_ms"]["p99"].as_f64().unwrap() < 5.0,
        "{}",
        arm["schedule_lag_ms"]
    );
    assert_eq!(arm["rate"]["generator_saturated"], false);
}
