//! A run folder after the run died: kill -9 mid-arm, a full disk. What is
//! on disk is rebuilt as a partial run that says so and never passes;
//! nothing rlbench started is left running, and its temporary folders are
//! swept by the next rlbench.

use crate::common;

use common::{bin, rlbench, summary, text, write};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One arm on one Redis-backed replica, long enough to be killed in.
fn scenario(duration: &str, rate: u32) -> String {
    format!(
        r#"
name = "crash"
duration = "{duration}"
seed = 5

[policy]
algorithm = "sliding_log"
limit = 5
window = "1s"

[load]
rate = {rate}
keys = 4

[[arms]]
name = "lua"
mode = "redis_lua"
replicas = 2
# Correct even when Redis is slow (a busy CI machine): no admit without it.
on_redis_error = "fail_closed"
[arms.expect]
max_definite_violations = 0
"#
    )
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Temporary folders rlbench process `pid` made in `tmp`.
fn temp_folders_of(tmp: &Path, pid: u32) -> Vec<String> {
    let prefix = format!("rlbench-{pid}-");
    std::fs::read_dir(tmp)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

#[test]
fn kill_9_mid_run_leaves_a_folder_report_rebuilds_as_partial_and_nothing_running() {
    if !common::has("redis-server") {
        panic!("redis-server is needed (scripts/test.sh installs it)");
    }
    let dir = tempfile::tempdir().unwrap();
    // A temporary folder of this test's own: the rlbench of another test
    // running meanwhile would sweep the killed run's folders from /tmp.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let path = write(dir.path(), "s.toml", &scenario("30s", 200));
    let mut child = Command::new(bin())
        .args(["run", path.to_str().unwrap(), "--out", "out", "-q"])
        .env("TMPDIR", &tmp)
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = dir.path().join("out");
    // Killed once the arm's record shows three seconds of load.
    let record = out.join("events/lua.json");
    let deadline = Instant::now() + Duration::from_secs(40);
    let loaded = |r: &Value| r["send_window_s"].as_f64().unwrap_or(0.0) >= 3.0;
    while !std::fs::read_to_string(&record)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .is_some_and(|r| loaded(&r))
    {
        assert!(Instant::now() < deadline, "the run never got going");
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(json(&out.join("run.json"))["state"], "running");
    assert!(
        !temp_folders_of(&tmp, pid).is_empty(),
        "its Redis has a folder"
    );
    kill(Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    let killed_at = json(&record)["send_window_s"].as_f64().unwrap();

    // Nothing it started lives on.
    let left = common::wait_no_replicas(pid, Duration::from_secs(10));
    assert!(left.is_empty(), "left running after kill -9: {left:?}");

    // The folder is rebuilt as a partial run: never passed, and says why.
    let rebuilt = rlbench(&["report", "out"], dir.path());
    let err = text(&rebuilt.stderr);
    assert_eq!(rebuilt.status.code(), Some(3), "{err}");
    assert!(err.contains("the run is partial"), "{err}");
    let s = summary(&out);
    assert_eq!(s["partial"], true);
    assert_eq!(s["gate"]["passed"], false);
    assert!(
        s["partial_reason"]
            .as_str()
            .unwrap()
            .contains("the run did not finish"),
        "{s}"
    );
    // All but about the last second of events: the writer flushes every
    // second, and the record was rewritten at most a second before the kill.
    let exported = rlbench(&["export", "out", "--format", "jsonl"], dir.path());
    assert_eq!(
        exported.status.code(),
        Some(0),
        "{}",
        text(&exported.stderr)
    );
    let last_done_s = text(&exported.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["done_us"]
                .as_u64()
                .unwrap()
        })
        .max()
        .unwrap() as f64
        / 1e6;
    assert!(
        last_done_s >= killed_at - 1.5,
        "events up to {last_done_s:.2} s kept of a run killed after {killed_at:.2} s"
    );
    let a = common::arm(&s, "lua");
    assert!(a["requests"]["sent"].as_u64().unwrap() > 0);
    assert_eq!(a["correctness"]["definite_violations"], 0, "{a}");

    // Its Redis folder outlived it; the next rlbench to start sweeps it.
    assert!(
        !temp_folders_of(&tmp, pid).is_empty(),
        "kill -9 leaves the folder"
    );
    let next = tempfile::tempdir().unwrap();
    let small = write(next.path(), "s.toml", &common::small_scenario("1s", ""));
    let again = Command::new(bin())
        .args(["run", small.to_str().unwrap(), "--arm", "single", "-q"])
        .args(["--out", "o"])
        .env("TMPDIR", &tmp)
        .current_dir(next.path())
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(temp_folders_of(&tmp, pid), Vec::<String>::new());
}

/// Runs `body` in a mount namespace of this test's own (mounts made there
/// are nobody else's, and vanish with it), on a tmpfs of `size` at `at`.
fn on_small_disk(at: &Path, size: &str) {
    use nix::mount::{mount, MsFlags};
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)
        .expect("a mount namespace of its own (run as root, as CI does)");
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .unwrap();
    mount(
        Some("tmpfs"),
        at,
        Some("tmpfs"),
        MsFlags::empty(),
        Some(format!("size={size}").as_str()),
    )
    .unwrap();
}

fn grow(at: &Path) {
    use nix::mount::{mount, MsFlags};
    mount(
        Some("tmpfs"),
        at,
        Some("tmpfs"),
        MsFlags::MS_REMOUNT,
        Some("size=64m"),
    )
    .unwrap();
}

/// No user-facing line carries Rust's debug text.
fn plain(err: &str) {
    for debug in ["Custom {", "kind:", "IoError(", "ImageError", "Os {"] {
        assert!(!err.contains(debug), "debug text reached the user: {err}");
    }
}

/// The small scenario's `single` arm for `duration` into `disk/out`, on a
/// tmpfs of `size` at `disk`; it must end with exit 3 (the disk filled).
/// The test's folder, the disk, the run folder and rlbench's stderr.
fn run_on_small_disk(
    size: &str,
    duration: &str,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    std::path::PathBuf,
    String,
) {
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk");
    std::fs::create_dir(&disk).unwrap();
    on_small_disk(&disk, size);
    let path = write(dir.path(), "s.toml", &common::small_scenario(duration, ""));
    let out = disk.join("out");
    let args = ["run", path.to_str().unwrap(), "--arm", "single", "-q"];
    let run = rlbench(
        &[&args[..], &["--out", out.to_str().unwrap()]].concat(),
        dir.path(),
    );
    let err = text(&run.stderr);
    assert_eq!(run.status.code(), Some(3), "{err}");
    (dir, disk, out, err)
}

#[test]
fn a_disk_that_fills_during_the_trace_says_partial_and_report_rebuilds_it_later() {
    let (dir, disk, out, err) = run_on_small_disk("48k", "3s");
    // The first failure is the one said: the trace's write.
    let first = err
        .lines()
        .find(|l| l.contains("No space left"))
        .unwrap_or("");
    assert!(first.contains("events/single.trace"), "{err}");
    plain(&err);
    if out.join("summary.json").exists() {
        let s = summary(&out);
        assert_eq!(s["partial"], true, "{s}");
        assert_eq!(s["gate"]["passed"], false, "{s}");
    }
    // With room again, the folder is rebuilt from what reached the disk.
    grow(&disk);
    let rebuilt = rlbench(&["report", out.to_str().unwrap()], dir.path());
    let err = text(&rebuilt.stderr);
    assert_eq!(rebuilt.status.code(), Some(3), "{err}");
    let s = summary(&out);
    assert_eq!(s["partial"], true, "{s}");
    assert_eq!(s["gate"]["passed"], false, "{s}");
    let a = common::arm(&s, "single");
    assert!(a["requests"]["sent"].as_u64().unwrap() > 0, "{a}");
    assert_eq!(a["correctness"]["definite_violations"], 0, "{a}");
    assert!(out.join("report.html").exists());
}

#[test]
fn a_disk_that_fills_during_the_report_leaves_a_summary_that_says_partial() {
    // Room for the trace, records, histograms and charts (~150 KB with
    // tmpfs' 4 KiB pages), not for report.html on top (~115 KB).
    let (_dir, _disk, out, err) = run_on_small_disk("200k", "1s");
    assert!(
        err.contains("cannot write") && err.contains(out.to_str().unwrap()),
        "{err}"
    );
    plain(&err);
    let s = summary(&out);
    assert_eq!(s["partial"], true, "{s}");
    assert_eq!(s["gate"]["passed"], false, "{s}");
    assert!(
        s["partial_reason"]
            .as_str()
            .unwrap()
            .contains("No space left"),
        "{s}"
    );
    // Nothing half-written is left under a final name.
    if let Ok(html) = std::fs::read_to_string(out.join("report.html")) {
        assert!(html.trim_end().ends_with("</html>"), "a cut report.html");
    }
    if let Ok(junit) = std::fs::read_to_string(out.join("junit.xml")) {
        assert!(
            junit.contains("<failure") || junit.contains("<error"),
            "junit.xml says passed: {junit}"
        );
    }
}
