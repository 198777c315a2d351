//! `rlbench report` on a run folder written by an earlier build
//! (tests/fixtures/report-v1: two arms, a fault, probes, witnesses)
//! reproduces its summary.json, JUnit and histograms byte for byte: the
//! contract CI gates read does not drift when the code is rearranged.

use crate::common;

use std::path::Path;

#[test]
fn a_kept_run_folder_rebuilds_to_the_same_bytes() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-v1");
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    common::copy_dir(&fixture, &run);
    for kept in [
        "summary.json",
        "junit.xml",
        "local.hgrm",
        "lua.service.hgrm",
    ] {
        std::fs::remove_file(run.join(kept)).unwrap();
    }
    let out = common::rlbench(&["report", run.to_str().unwrap()], dir.path());
    // The kept run met its expectations: exit 0.
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out.stderr));
    for kept in [
        "summary.json",
        "junit.xml",
        "local.hgrm",
        "local.service.hgrm",
        "lua.hgrm",
        "lua.service.hgrm",
    ] {
        let want = std::fs::read(fixture.join(kept)).unwrap();
        let got = std::fs::read(run.join(kept)).unwrap();
        assert!(
            want == got,
            "{kept} differs from the kept one:\n--- kept\n{}\n--- rebuilt\n{}",
            common::text(&want),
            common::text(&got)
        );
    }
    assert!(run.join("report.html").is_file());
}

/// An arm that sent off this machine (the user's opt-in) says so in the
/// terminal, summary.json and report.html; the others stay silent. No
/// request is sent: the folder is the kept one, its record edited.
#[test]
fn targets_off_this_machine_are_named_wherever_the_run_is_read() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-v1");
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    common::copy_dir(&fixture, &run);
    let record = run.join("events/local.json");
    let mut arm: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    arm["remote_targets"] = serde_json::json!(["http://192.0.2.1:8080/api"]);
    std::fs::write(&record, arm.to_string()).unwrap();
    let out = common::rlbench(&["report", run.to_str().unwrap()], dir.path());
    let stdout = common::text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out.stderr));
    assert!(
        stdout.contains(
            "targets of local: sent to a target off this machine, as allowed by \
             --allow-remote-targets or [target] allow_remote: http://192.0.2.1:8080/api"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("targets of lua"), "{stdout}");
    let s = common::summary(&run);
    assert_eq!(
        common::arm(&s, "local")["remote_targets"],
        serde_json::json!(["http://192.0.2.1:8080/api"])
    );
    assert!(common::arm(&s, "lua").get("remote_targets").is_none());
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains("id=\"remote-targets\">local: sent to a target off this machine"));
}
