//! `rlbench compare` on two real run folders: the terminal table, and the
//! HTML page beside them with both runs' figures and charts, self-contained.

use crate::common::{self, rlbench, text};
use std::path::Path;

/// A figure as compare shows it (report::compare::show).
fn show(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

fn p99(folder: &Path, arm: &str) -> f64 {
    let s = common::summary(folder);
    let arms = s["arms"].as_array().unwrap();
    let arm = arms.iter().find(|a| a["name"] == arm).unwrap();
    arm["latency_ms"]["p99"].as_f64().unwrap()
}

#[test]
fn compare_writes_a_self_contained_page_with_both_runs_side_by_side() {
    let (a, b, here) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let (run_a, run_b) = (
        common::run_small(a.path(), "1s"),
        common::run_small(b.path(), "1s"),
    );
    let (sa, sb) = (run_a.to_str().unwrap(), run_b.to_str().unwrap());

    let out = rlbench(&["compare", sa, sb], here.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("p99_ms"),
        "the table still on stdout"
    );
    // The last line on stderr is the page to open, as a path and a URL.
    let page = here.path().join("reports/compare.html");
    let url = url::Url::from_file_path(std::fs::canonicalize(&page).unwrap()).unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.lines().last().unwrap_or_default(),
        format!("report: reports/compare.html ({url})"),
        "{stderr}"
    );

    let html = std::fs::read_to_string(&page).unwrap();
    for (folder, given) in [(&run_a, sa), (&run_b, sb)] {
        assert!(html.contains(given), "names {given}");
        let started = common::summary(folder)["started_at"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(html.contains(&started), "{started}");
    }
    for arm in ["single", "local"] {
        let row = format!(
            "<td>p99 latency (ms)</td><td>{}</td><td>{}</td>",
            show(p99(&run_a, arm)),
            show(p99(&run_b, arm))
        );
        assert!(html.contains(&row), "{arm}: {row} in {html}");
    }
    // Four charts from each folder, inline; nothing fetched from anywhere.
    assert_eq!(html.matches("src=\"data:image/png;base64,").count(), 8);
    assert!(!html.contains("not in this run's folder"));
    for reference in ["src=\"http", "href=\"http", "src=\"//", "href=\"//"] {
        assert!(!html.contains(reference), "{reference}");
    }
    // A run folder's own files stay as they were.
    assert!(!run_a.join("compare.html").exists() && !run_b.join("compare.html").exists());

    // One of the folders without a chart: said on the page, no error.
    std::fs::remove_file(run_b.join("per-replica.png")).unwrap();
    let out = rlbench(
        &["compare", sa, sb, "--html", "cmp/", "--format", "json"],
        here.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["rows"].is_array(), "stdout is the JSON document alone");
    let html = std::fs::read_to_string(here.path().join("cmp/compare.html")).unwrap();
    assert_eq!(html.matches("src=\"data:image/png;base64,").count(), 7);
    assert!(html.contains("not in this run's folder (per-replica.png)"));

    // Never into a run folder: one line, exit 2, nothing printed before it.
    let refused = rlbench(&["compare", sa, sb, "--html", sa], here.path());
    assert_eq!(refused.status.code(), Some(2));
    assert!(refused.stdout.is_empty(), "{}", text(&refused.stdout));
    let said = text(&refused.stderr);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains("inside the run folder"), "{said}");
}
