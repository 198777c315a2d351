//! A run folder read back is hostile until read, and so is what compare is
//! given: numbers that would size or shift anything are bounded (a record
//! saying 10^18 replicas is refused in one line, never a panic or 23 GB),
//! an arm listed twice is refused, a FIFO or a device in place of a file is
//! refused at once (never a hang, never read until memory runs out), and
//! `compare --html` never overwrites a file rlbench did not write.

use crate::common::{copy_dir, rlbench, text};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A copy of the kept two-arm run folder (tests/fixtures/report-v1).
fn kept_run(dir: &Path) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-v1");
    let run = dir.join("run");
    copy_dir(&fixture, &run);
    run
}

/// Sets `field` of the arm record `arm` to `value`.
fn edit_record(run: &Path, arm: &str, field: &str, value: serde_json::Value) {
    let path = run.join(format!("events/{arm}.json"));
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    record[field] = value;
    std::fs::write(&path, record.to_string()).unwrap();
}

/// `rlbench ARGS` in `dir`, which must end within 20 s.
fn quick(args: &[&str], dir: &Path) -> std::process::Output {
    let started = Instant::now();
    let out = rlbench(args, dir);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "rlbench {args:?} took {:?}",
        started.elapsed()
    );
    out
}

#[test]
fn impossible_numbers_in_an_arm_record_are_refused_in_one_line() {
    for (field, value, says) in [
        (
            "replicas",
            serde_json::json!(1_000_000_000_000_000_000u64),
            "replicas",
        ),
        ("replicas", serde_json::json!(100_000_000u64), "replicas"),
        (
            "epoch_offset_us",
            serde_json::json!(i64::MAX),
            "epoch_offset_us",
        ),
        ("witnesses", serde_json::json!(1u64 << 40), "witnesses"),
        (
            "request_timeout_us",
            serde_json::json!(-5),
            "request_timeout_us",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let run = kept_run(dir.path());
        edit_record(&run, "local", field, value.clone());
        let out = quick(&["report", run.to_str().unwrap()], dir.path());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{field} = {value}: {err}");
        assert!(
            err.contains(says) && err.contains("not a record rlbench wrote"),
            "{err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
}

#[test]
fn an_arm_listed_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = kept_run(dir.path());
    let path = run.join("run.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    record["arms"] = serde_json::json!(["local", "local"]);
    std::fs::write(&path, record.to_string()).unwrap();
    let out = quick(&["report", run.to_str().unwrap()], dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("lists the arm \"local\" twice"), "{err}");
}

#[test]
fn fifos_and_devices_in_place_of_files_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let run = kept_run(dir.path());
    // The trace (CSV in this old folder) a FIFO: nobody writes it.
    let trace = run.join("events/local.csv");
    std::fs::remove_file(&trace).unwrap();
    assert!(std::process::Command::new("mkfifo")
        .arg(&trace)
        .status()
        .unwrap()
        .success());
    let out = quick(&["report", run.to_str().unwrap()], dir.path());
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("not a regular file"),
        "{}",
        text(&out.stderr)
    );
    // compare given /dev/zero, or a FIFO, as a summary.
    let fifo = dir.path().join("summary.fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for given in ["/dev/zero", fifo.to_str().unwrap()] {
        let out = quick(&["compare", given, given], dir.path());
        assert_eq!(out.status.code(), Some(2), "{given}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("not a regular file"),
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn compare_never_overwrites_a_file_rlbench_did_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let run = kept_run(dir.path());
    let summary = run.join("summary.json");
    let s = summary.to_str().unwrap();
    let theirs = dir.path().join("notes.html");
    std::fs::write(&theirs, "<p>someone's own page</p>").unwrap();
    let out = quick(
        &["compare", s, s, "--html", theirs.to_str().unwrap()],
        dir.path(),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is not a page rlbench wrote"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&theirs).unwrap(),
        "<p>someone's own page</p>"
    );
    // A page of its own is written again; --force takes anyone's.
    let mine = dir.path().join("mine.html");
    for _ in 0..2 {
        let out = quick(
            &["compare", s, s, "--html", mine.to_str().unwrap()],
            dir.path(),
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let out = quick(
        &[
            "compare",
            s,
            s,
            "--html",
            theirs.to_str().unwrap(),
            "--force",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&theirs)
        .unwrap()
        .contains("rlbench compare"));
}
