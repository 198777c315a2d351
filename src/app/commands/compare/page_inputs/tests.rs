//! Where the page goes, and what it is drawn from on disk.

use super::*;
use crate::error::Exit;
use crate::report::compare::Comparison;

/// A summary without arms: the page's files are what these tests check.
fn summary() -> Summary {
    serde_json::from_value(serde_json::json!({
        "schema": crate::store::summary::SCHEMA, "scenario": "s",
        "started_at": "2026-01-01T00:00:00Z", "duration_s": 1.0, "partial": false,
        "arms": [], "gate": {"passed": true, "failures": []}
    }))
    .unwrap()
}

#[test]
fn the_page_goes_to_reports_by_default_or_where_html_says() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let here = destination(None, [&a, &b], false).unwrap();
    assert_eq!(here, Path::new("reports/compare.html"));
    let file = dir.path().join("x.html");
    assert_eq!(destination(Some(&file), [&a, &b], false).unwrap(), file);
    // A folder holds compare.html, existing or named with a trailing '/'.
    assert_eq!(
        destination(Some(dir.path()), [&a, &b], false).unwrap(),
        dir.path().join("compare.html")
    );
    let later = format!("{}/later/", dir.path().display());
    assert_eq!(
        destination(Some(Path::new(&later)), [&a, &b], false).unwrap(),
        dir.path().join("later").join("compare.html")
    );
}

#[test]
fn the_page_never_goes_into_a_run_folder_nor_over_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::write(run.join("run.json"), "{}").unwrap();
    let kept = dir.path().join("baseline.json");
    std::fs::write(&kept, "{}").unwrap();
    for (html, said) in [
        (run.clone(), "inside the run folder"),
        (run.join("report.html"), "inside the run folder"),
        (kept.clone(), "would overwrite"),
    ] {
        let e = destination(Some(&html), [&kept, &run], false).unwrap_err();
        assert_eq!(e.exit, Exit::BadInput, "{html:?}");
        assert!(e.message.contains(said), "{html:?}: {}", e.message);
    }
}

#[test]
fn charts_come_from_run_folders_and_a_missing_one_is_no_error() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    std::fs::write(a.join(CHARTS[0].file), b"\x89PNG a").unwrap();
    std::fs::write(b.join(CHARTS[0].file), b"\x89PNG b").unwrap();
    // Not a PNG: not shown, said missing.
    std::fs::write(b.join(CHARTS[1].file), b"<html>").unwrap();
    std::fs::write(a.join("summary.json"), "{}").unwrap();
    let s = summary();
    let c = Comparison {
        rows: Vec::new(),
        differences: Vec::new(),
        regressions: Vec::new(),
    };
    let page = dir.path().join("out/compare.html");
    // One side as its folder, the other as the folder's summary.json.
    write(&page, [(&a.join("summary.json"), &s), (&b, &s)], &c, None).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("src=\"data:image/png;base64,").count(), 2);
    assert_eq!(
        html.matches("not in this run's folder").count(),
        2 * (CHARTS.len() - 1),
        "{html}"
    );
    assert!(!html.contains(TRADE.title), "drawn by neither run");

    // Summary files kept apart from their folders: figures, no charts.
    let kept = dir.path().join("kept.json");
    std::fs::write(&kept, "{}").unwrap();
    write(&page, [(&kept, &s), (&kept, &s)], &c, None).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Both runs were given as summary files"));
    assert!(!html.contains("data:image/png"));
}

#[test]
fn a_page_that_cannot_be_written_is_an_environment_failure() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "").unwrap();
    let s = summary();
    let c = Comparison {
        rows: Vec::new(),
        differences: Vec::new(),
        regressions: Vec::new(),
    };
    let page = blocker.join("compare.html");
    let e = write(&page, [(&blocker, &s), (&blocker, &s)], &c, None).unwrap_err();
    assert_eq!(e.exit, Exit::Environment);
    assert!(e.message.starts_with("cannot write "), "{}", e.message);
}
