//! A run folder that was damaged or tampered with is never judged in
//! silence: a cut, duplicated, reordered or impossible trace is refused
//! with its place by `report`, `explain` and `export` alike (exit 3), and
//! a name read back from the folder never leads outside it.

use crate::common;

use common::{rlbench, text};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A finished one-arm run folder: `dir/out`.
fn run_folder(dir: &Path) -> PathBuf {
    common::run_single(dir, &common::small_scenario("1s", ""));
    dir.join("out")
}

/// The byte ranges of a binary trace's records (its 8-byte header skipped):
/// `(tag, start, end)`, read the way events/binary.rs documents them.
fn records(bytes: &[u8]) -> Vec<(u8, usize, usize)> {
    let mut at = 8;
    let mut out = Vec::new();
    while at < bytes.len() {
        let len = match bytes[at] {
            b'K' => 3 + u16::from_le_bytes([bytes[at + 1], bytes[at + 2]]) as usize,
            b'E' => {
                let flags = bytes[at + 45];
                let mut len = 46;
                if flags & 1 == 1 {
                    len += (flags & 0b0011_1110).count_ones() as usize * 8 + 2;
                }
                if flags & (1 << 6) != 0 {
                    len += 9;
                }
                len
            }
            other => panic!("tag {other} at {at}"),
        };
        out.push((bytes[at], at, at + len));
        at += len;
    }
    out
}

/// Every reader's answer to the folder: (command, exit code, stderr).
fn every_reader(dir: &Path) -> Vec<(&'static str, Option<i32>, String)> {
    [
        ("report", vec!["report", "out"]),
        ("explain", vec!["explain", "out"]),
        ("export", vec!["export", "out"]),
    ]
    .into_iter()
    .map(|(name, args)| {
        let out = rlbench(&args, dir);
        (name, out.status.code(), text(&out.stderr))
    })
    .collect()
}

/// All three readers refuse the trace with exit 3, naming it and `says`.
fn refused(dir: &Path, says: &str) {
    for (name, code, err) in every_reader(dir) {
        assert_eq!(code, Some(3), "{name}: {err}");
        assert!(err.contains("events/single.trace"), "{name}: {err}");
        assert!(err.contains(says), "{name} should say {says:?}: {err}");
        assert!(!err.contains("Every expectation met"), "{name}: {err}");
    }
}

fn events_of(bytes: &[u8]) -> Vec<(usize, usize)> {
    records(bytes)
        .into_iter()
        .filter(|r| r.0 == b'E')
        .map(|r| (r.1, r.2))
        .collect()
}

#[test]
fn a_damaged_trace_is_refused_by_every_reader_with_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_folder(dir.path());
    let trace = out.join("events/single.trace");
    let whole = std::fs::read(&trace).unwrap();
    let events = events_of(&whole);
    assert!(events.len() > 10);
    // Untouched, it reads.
    for (name, code, err) in every_reader(dir.path()) {
        assert_eq!(code, Some(0), "{name}: {err}");
    }

    // Cut at a record's end (half the events gone): the count tells.
    let (_, half) = events[events.len() / 2];
    std::fs::write(&trace, &whole[..half]).unwrap();
    refused(dir.path(), "but its record says the run wrote");

    // Cut inside a record.
    std::fs::write(&trace, &whole[..half - 3]).unwrap();
    refused(dir.path(), "cut short");

    // An event twice.
    let (from, to) = events[3];
    let mut twice = whole.clone();
    twice.extend_from_slice(&whole[from..to]);
    std::fs::write(&trace, &twice).unwrap();
    refused(dir.path(), "a second event of seq");

    // Two events swapped (same bytes, another order): the checksum tells.
    let (a, b) = (events[4], events[5]);
    let mut swapped = whole[..a.0].to_vec();
    swapped.extend_from_slice(&whole[b.0..b.1]);
    swapped.extend_from_slice(&whole[a.0..a.1]);
    swapped.extend_from_slice(&whole[b.1..]);
    assert_eq!(swapped.len(), whole.len());
    std::fs::write(&trace, &swapped).unwrap();
    refused(dir.path(), "the trace was changed");

    // An answer before its send (done_us at bytes 33..41 of the record).
    let (from, _) = events[6];
    let mut early = whole.clone();
    early[from + 33..from + 41].copy_from_slice(&0u64.to_le_bytes());
    std::fs::write(&trace, &early).unwrap();
    refused(dir.path(), "before it was sent");
    // The byte it was found at is named.
    let err = text(&rlbench(&["report", "out"], dir.path()).stderr);
    assert!(err.contains(&format!("byte {from}:")), "{err}");

    // Without the seal (a folder from before seals), what a trace can
    // never hold is still refused.
    let record_path = out.join("events/single.json");
    let mut record: Value =
        serde_json::from_str(&std::fs::read_to_string(&record_path).unwrap()).unwrap();
    record.as_object_mut().unwrap().remove("trace");
    std::fs::write(&record_path, record.to_string()).unwrap();
    std::fs::write(&trace, &twice).unwrap();
    refused(dir.path(), "a second event of seq");

    // Empty, or not a trace at all: said so, not read as CSV.
    for bytes in [&b""[..], &b"not a trace at all"[..]] {
        std::fs::write(&trace, bytes).unwrap();
        refused(dir.path(), "not an rlbench trace");
    }
}

#[test]
fn an_arm_name_that_leaves_the_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_folder(dir.path());
    let run_json = out.join("run.json");
    let mut run: Value =
        serde_json::from_str(&std::fs::read_to_string(&run_json).unwrap()).unwrap();
    run["arms"] = serde_json::json!(["../../../pwn"]);
    std::fs::write(&run_json, run.to_string()).unwrap();
    for (name, code, err) in every_reader(dir.path()) {
        assert_eq!(code, Some(2), "{name}: {err}");
        assert!(
            err.contains("\"../../../pwn\" is not one rlbench writes"),
            "{name}: {err}"
        );
    }
    // Nothing was read or written outside the folder.
    let mut up = out.clone();
    for _ in 0..4 {
        for name in ["pwn.hgrm", "pwn.service.hgrm", "pwn.trace"] {
            assert!(
                !up.join(name).exists(),
                "{} written",
                up.join(name).display()
            );
        }
        up.pop();
    }
    // An arm record that names another arm is refused too.
    run["arms"] = serde_json::json!(["single"]);
    std::fs::write(&run_json, run.to_string()).unwrap();
    let record_path = out.join("events/single.json");
    let mut record: Value =
        serde_json::from_str(&std::fs::read_to_string(&record_path).unwrap()).unwrap();
    record["name"] = Value::from("other");
    std::fs::write(&record_path, record.to_string()).unwrap();
    let err = text(&rlbench(&["report", "out"], dir.path()).stderr);
    assert!(err.contains("but run.json lists it as \"single\""), "{err}");
}

#[test]
fn out_into_an_earlier_run_clears_it_and_into_other_files_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_folder(dir.path());
    assert!(out.join("single.hgrm").exists());
    // Another scenario, other arm names, the same --out.
    let other = common::small_scenario("1s", "").replace("name = \"single\"", "name = \"solo\"");
    let path = common::write(dir.path(), "other.toml", &other);
    let again = rlbench(
        &[
            "run",
            path.to_str().unwrap(),
            "--arm",
            "solo",
            "--out",
            "out",
        ],
        dir.path(),
    );
    let err = text(&again.stderr);
    assert_eq!(again.status.code(), Some(0), "{err}");
    assert!(
        err.contains("--out out: cleared the earlier run kept there"),
        "{err}"
    );
    for stale in [
        "single.hgrm",
        "single.service.hgrm",
        "events/single.trace",
        "events/single.json",
    ] {
        assert!(!out.join(stale).exists(), "{stale} kept beside the new run");
    }
    assert!(out.join("events/solo.trace").exists());
    // A folder of other files is nobody's run: refused, untouched.
    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "keep me").unwrap();
    let refused = rlbench(
        &[
            "run",
            path.to_str().unwrap(),
            "--arm",
            "solo",
            "--out",
            "mine",
        ],
        dir.path(),
    );
    let err = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--out mine: the folder holds other files and no run.json"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(mine.join("notes.txt")).unwrap(),
        "keep me"
    );
}
