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

/// A teammate loosens the limit in the scenario along with the limiter:
/// the gate passes, and compare says the runs are not comparable — a
/// line on stderr, and exit 1 with `--strict`. Two runs of the same
/// correct scenario pass a strict compare.
#[test]
fn a_policy_edited_looser_is_not_comparable_and_strict_fails_it() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = |limit: u32| {
        format!(
            "name = \"gate\"\nduration = \"1s\"\n[policy]\nalgorithm = \"sliding_log\"\n\
             limit = {limit}\nwindow = \"1s\"\n[load]\nrate = 100\nkeys = 3\n\
             [[arms]]\nname = \"api\"\nmode = \"local\"\nreplicas = 1\n"
        )
    };
    let run = |name: &str, limit: u32| {
        let path = common::write(dir.path(), &format!("{name}.toml"), &scenario(limit));
        let out = rlbench(
            &["run", path.to_str().unwrap(), "--out", name, "-q"],
            dir.path(),
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        dir.path().join(name)
    };
    let (base, same, loose) = (run("base", 5), run("same", 5), run("loose", 20));
    let compare = |a: &Path, b: &Path, strict: bool| {
        let mut args = vec!["compare", a.to_str().unwrap(), b.to_str().unwrap()];
        args.extend(["--html", "cmp/"]);
        if strict {
            args.push("--strict");
        }
        rlbench(&args, dir.path())
    };
    let out = compare(&base, &same, true);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("not comparable"));
    let out = compare(&base, &loose, false);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(
            "not comparable: arm api's policies differ: sliding_log: 5 per 1s against \
             sliding_log: 20 per 1s"
        ),
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("allowed"),
        "admitted beside allowed"
    );
    let out = compare(&base, &loose, true);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
}
