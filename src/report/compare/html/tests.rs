//! The page's pieces: colours follow the rows' trend, arms in one run
//! only are said, names are escaped, charts are embedded or said missing.

use super::*;
use crate::report::charts::CHARTS;
use crate::store::summary::SCHEMA;

/// A summary with arms of these names (figures alike).
fn summary(arms: &[&str]) -> Summary {
    let arms: Vec<serde_json::Value> = arms
        .iter()
        .map(|name| {
            serde_json::json!({
                "name": name, "mode": "local", "replicas": 1,
                "policy": {"algorithm": "sliding_log", "limit": 10, "window_us": 1000000},
                "policy_text": "sliding_log: 10 per 1s", "partial": false,
                "requests": {"sent": 100, "admitted": 10, "rejected": 90, "errors": 0, "timeouts": 0},
                "rate": {"target_rps": 100.0, "achieved_rps": 100.0},
                "correctness": {"allowed_max": 10, "over_admission_ratio": 1.0, "peak_window_ratio": 1.0,
                    "definite_violations": 0, "possible_violations": 0, "false_rejects": 0, "false_reject_ratio": 0.0},
                "latency_ms": {"p50": 1.0, "p90": 2.0, "p99": 3.0, "p999": 5.0, "max": 9.0},
                "service_ms": {"p50": 1.0, "p90": 2.0, "p99": 3.0, "p999": 5.0, "max": 9.0},
                "schedule_lag_ms": {"p50": 0.0, "p90": 0.0, "p99": 0.0, "p999": 0.0, "max": 0.0},
                "per_replica": [], "histograms": {"latency_us": "", "service_us": ""}, "expect": []
            })
        })
        .collect();
    serde_json::from_value(serde_json::json!({
        "schema": SCHEMA, "scenario": "s", "started_at": "2026-01-01T00:00:00Z",
        "duration_s": 1.0, "partial": false, "arms": arms,
        "gate": {"passed": true, "failures": []}
    }))
    .unwrap()
}

fn row(arm: &str, figure: &'static str, b: Option<f64>, c: Option<f64>, trend: Trend) -> Row {
    Row {
        arm: arm.to_string(),
        figure,
        baseline: b,
        candidate: c,
        gated: true,
        trend,
    }
}

fn page(a: &Summary, b: &Summary, c: &Comparison, charts: Vec<ChartPair>) -> String {
    let run = |summary, given: &str| Run {
        summary,
        given: given.to_string(),
        folder: true,
    };
    render(&Page {
        baseline: run(a, "reports/s/a"),
        candidate: run(b, "reports/s/b"),
        comparison: c,
        max_regression: Some(0.1),
        charts,
    })
}

#[test]
fn a_regression_is_red_an_improvement_green_and_the_rest_plain() {
    let a = summary(&["x"]);
    let c = Comparison {
        rows: vec![
            row(
                "x",
                "over_admission_ratio",
                Some(1.0),
                Some(1.5),
                Trend::Worse,
            ),
            row("x", "p99_ms", Some(10.0), Some(5.0), Trend::Better),
            row(
                "x",
                "definite_violations",
                Some(3.0),
                Some(3.0),
                Trend::Even,
            ),
        ],
        differences: Vec::new(),
        regressions: vec!["x: over_admission_ratio 1 -> 1.500 (more than 10.0% worse)".into()],
    };
    let html = page(&a, &a, &c, Vec::new());
    assert!(
        html.contains(r#"<td class="change worse">+50.0%</td>"#),
        "{html}"
    );
    assert!(
        html.contains(r#"<td class="change better">-50.0%</td>"#),
        "{html}"
    );
    assert!(html.contains(r#"<td class="change">+0.0%</td>"#), "{html}");
    assert!(html.contains("td.worse{background:#fce8e6;color:#a50e0e"));
    assert!(html.contains("compare fails."), "{html}");
    assert!(html.contains("<li>x: over_admission_ratio 1 -&gt; 1.500"));
}

#[test]
fn an_arm_in_one_run_only_is_said_plainly() {
    let (a, b) = (summary(&["x"]), summary(&["x", "fresh"]));
    let c = Comparison {
        rows: vec![
            row("x", "p99_ms", Some(3.0), Some(3.0), Trend::Even),
            row("fresh", "p99_ms", None, Some(3.0), Trend::Even),
        ],
        differences: Vec::new(),
        regressions: Vec::new(),
    };
    let html = page(&a, &b, &c, Vec::new());
    assert!(
        html.contains("Only in B (candidate): new since the baseline"),
        "{html}"
    );
    assert!(html.contains("no arm fresh in this run: only B has it"));
    assert_eq!(html.matches("Only in").count(), 1, "x is in both: {html}");
    let gone = page(&b, &a, &c, Vec::new());
    assert!(gone.contains("Only in A (baseline): the candidate has no arm “fresh”"));
}

#[test]
fn a_hostile_arm_name_is_escaped() {
    let name = "<script>alert(1)</script>";
    let a = summary(&[name]);
    let c = Comparison {
        rows: vec![row(name, "p99_ms", Some(3.0), Some(3.0), Trend::Even)],
        differences: Vec::new(),
        regressions: vec![format!("{name}: gone")],
    };
    let html = page(&a, &a, &c, Vec::new());
    assert!(!html.contains("<script"), "{html}");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

#[test]
fn charts_are_embedded_side_by_side_and_a_missing_one_is_said() {
    let a = summary(&["x"]);
    let c = Comparison {
        rows: Vec::new(),
        differences: Vec::new(),
        regressions: Vec::new(),
    };
    let png = b"\x89PNG fake".to_vec();
    let charts = vec![ChartPair {
        chart: &CHARTS[0],
        baseline: Some(png.clone()),
        candidate: None,
    }];
    let html = page(&a, &a, &c, charts);
    let data = base64::engine::general_purpose::STANDARD.encode(&png);
    assert!(
        html.contains(&format!(r#"src="data:image/png;base64,{data}""#)),
        "{html}"
    );
    assert!(html.contains(&format!("not in this run's folder ({})", CHARTS[0].file)));
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
}

#[test]
fn summary_files_alone_still_give_the_figures_and_say_why_no_charts() {
    let a = summary(&["x"]);
    let c = Comparison {
        rows: vec![row("x", "p99_ms", Some(3.0), Some(4.0), Trend::Worse)],
        differences: Vec::new(),
        regressions: Vec::new(),
    };
    let run = |given: &str| Run {
        summary: &a,
        given: given.to_string(),
        folder: false,
    };
    let html = render(&Page {
        baseline: run("base.json"),
        candidate: run("cand.json"),
        comparison: &c,
        max_regression: None,
        charts: Vec::new(),
    });
    assert!(
        html.contains("Both runs were given as summary files"),
        "{html}"
    );
    assert!(html.contains("<td>p99 latency (ms)</td><td>3</td><td>4</td>"));
    assert!(html.contains("No --max-regression given"), "{html}");
    assert!(html.contains("latency is shown, not judged"), "{html}");
}
