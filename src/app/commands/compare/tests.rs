//! Comparing summaries: deltas, and the regression bound.

use super::*;

fn summary(arms: &[(&str, Option<f64>, f64)]) -> Summary {
    let arms: Vec<(&str, Option<f64>, f64, u64)> =
        arms.iter().map(|&(n, r, p)| (n, r, p, 0)).collect();
    judged(&arms)
}

/// Arms as (name, over-admission ratio, p99, definite violations).
fn judged(arms: &[(&str, Option<f64>, f64, u64)]) -> Summary {
    let arms: Vec<serde_json::Value> = arms
        .iter()
        .map(|(name, ratio, p99, definite)| {
            serde_json::json!({
                "name": name, "mode": "local", "replicas": 1,
                "policy": {"algorithm": "sliding_log", "limit": 10, "window_us": 1000000},
                "policy_text": "sliding_log: 10 per 1s", "partial": false,
                "requests": {"sent": 100, "admitted": 10, "rejected": 90, "errors": 0, "timeouts": 0},
                "rate": {"target_rps": 100.0, "achieved_rps": 100.0},
                "correctness": {"allowed_max": 10, "over_admission_ratio": ratio, "peak_window_ratio": 1.0,
                    "definite_violations": definite, "possible_violations": 0, "false_rejects": 0, "false_reject_ratio": 0.0},
                "latency_ms": {"p50": 1.0, "p90": 2.0, "p99": p99, "p999": 5.0, "max": 9.0},
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

#[test]
fn rows_pair_arms_by_name_with_relative_change() {
    let c = compare(
        &summary(&[("a", Some(1.0), 10.0)]),
        &summary(&[("a", Some(1.5), 10.0), ("b", Some(1.0), 1.0)]),
        None,
    );
    let ratio = c
        .rows
        .iter()
        .find(|r| r.arm == "a" && r.figure == "over_admission_ratio")
        .unwrap();
    assert_eq!(ratio.change(), Some(0.5));
    let new_arm = c
        .rows
        .iter()
        .find(|r| r.arm == "b" && r.figure == "p99_ms")
        .unwrap();
    assert_eq!((new_arm.baseline, new_arm.candidate), (None, Some(1.0)));
    assert!(c.regressions.is_empty(), "no bound given");
}

#[test]
fn a_regression_beyond_the_bound_is_reported_and_within_it_is_not() {
    let base = summary(&[("a", Some(1.0), 10.0)]);
    let within = summary(&[("a", Some(1.05), 11.0)]);
    assert!(compare(&base, &within, Some(0.10)).regressions.is_empty());
    let worse = summary(&[("a", Some(1.2), 10.0)]);
    let r = compare(&base, &worse, Some(0.10)).regressions;
    assert_eq!(r.len(), 1);
    assert!(
        r[0].starts_with("a: over_admission_ratio 1 -> 1.200"),
        "{r:?}"
    );
    let slower = summary(&[("a", Some(1.0), 12.0)]);
    assert!(compare(&base, &slower, Some(0.10)).regressions[0].contains("p99_ms 10 -> 12"));
    let unbounded = summary(&[("a", None, 10.0)]);
    assert_eq!(compare(&base, &unbounded, Some(0.10)).regressions.len(), 1);
}

#[test]
fn violations_from_none_and_a_missing_arm_are_regressions() {
    let base = judged(&[("a", Some(1.0), 10.0, 0), ("b", Some(1.0), 10.0, 0)]);
    let same = judged(&[("a", Some(1.0), 10.0, 0), ("b", Some(1.0), 10.0, 0)]);
    assert!(compare(&base, &same, Some(0.5)).regressions.is_empty());
    let one = judged(&[("a", Some(1.0), 10.0, 1)]);
    let r = compare(&base, &one, Some(0.5)).regressions;
    assert_eq!(
        r,
        [
            "a: definite_violations 0 -> 1 (more than 50.0% worse)",
            "b: in the baseline, missing from the candidate"
        ]
    );
}

#[test]
fn a_run_folder_reads_as_its_summary() {
    let dir = tempfile::tempdir().unwrap();
    let s = summary(&[("a", Some(1.0), 10.0)]);
    std::fs::write(
        dir.path().join("summary.json"),
        serde_json::to_string(&s).unwrap(),
    )
    .unwrap();
    assert_eq!(read_summary(dir.path()).unwrap().arms[0].name, "a");
    assert!(read_summary(&dir.path().join("nothing")).is_err());
}

/// The trend of `arm`'s `figure` in `c`.
fn trend_of(c: &Comparison, arm: &str, figure: &str) -> Trend {
    c.rows
        .iter()
        .find(|r| r.arm == arm && r.figure == figure)
        .unwrap()
        .trend
}

#[test]
fn the_page_marks_what_the_gate_calls_a_regression_and_its_mirror() {
    let base = summary(&[("a", Some(1.0), 10.0)]);
    let cand = summary(&[("a", Some(1.05), 5.0)]);
    // No bound: any rise is worse and any fall better; the gate is silent.
    let free = compare(&base, &cand, None);
    assert_eq!(trend_of(&free, "a", "over_admission_ratio"), Trend::Worse);
    assert_eq!(trend_of(&free, "a", "p99_ms"), Trend::Better);
    assert!(free.regressions.is_empty());
    // Within a 10% bound the 5% rise is even; the halved p99 still better.
    let bound = compare(&base, &cand, Some(0.10));
    assert_eq!(trend_of(&bound, "a", "over_admission_ratio"), Trend::Even);
    assert_eq!(trend_of(&bound, "a", "p99_ms"), Trend::Better);
    // Unbounded is worse, and its way back better.
    let unbounded = summary(&[("a", None, 10.0)]);
    let worse = compare(&base, &unbounded, Some(0.10));
    assert_eq!(trend_of(&worse, "a", "over_admission_ratio"), Trend::Worse);
    assert_eq!(worse.regressions.len(), 1);
    let back = compare(&unbounded, &base, Some(0.10));
    assert_eq!(trend_of(&back, "a", "over_admission_ratio"), Trend::Better);
}

#[test]
fn figures_the_gate_ignores_are_never_coloured() {
    let base = summary(&[("a", Some(1.0), 10.0)]);
    let mut cand = summary(&[("a", Some(1.0), 10.0)]);
    cand.arms[0].latency_ms.p50 = 100.0;
    cand.arms[0].rate.achieved_rps = 1.0;
    let c = compare(&base, &cand, None);
    for figure in ["p50_ms", "achieved_rps"] {
        assert_eq!(trend_of(&c, "a", figure), Trend::Even, "{figure}");
        assert!(!c.rows.iter().find(|r| r.figure == figure).unwrap().gated);
    }
}

#[test]
fn runs_that_ran_different_things_are_said_to_differ() {
    let a = summary(&[("x", Some(1.0), 3.0), ("y", Some(1.0), 3.0)]);
    assert!(compare(&a, &a, None).differences.is_empty());
    let mut b = summary(&[("x", Some(1.0), 3.0), ("z", Some(1.0), 3.0)]);
    b.scenario = "other".into();
    b.duration_s = 8.0;
    b.arms[0].rate.target_rps = 200.0;
    let d = compare(&a, &b, None).differences;
    assert_eq!(
        d,
        [
            "the scenarios differ: s against other",
            "the durations differ: 1 s against 8 s per arm",
            "only the baseline has arm(s) y",
            "only the candidate has arm(s) z",
            "arm x's rates differ: 100 against 200 requests/s",
        ]
    );
    // Within 1%, a rate is the same.
    let mut c = summary(&[("x", Some(1.0), 3.0), ("y", Some(1.0), 3.0)]);
    c.arms[0].rate.target_rps = 100.5;
    assert!(compare(&a, &c, None).differences.is_empty());
}

#[test]
fn strict_fails_runs_that_differ_and_plain_compare_only_warns() {
    let dir = tempfile::tempdir().unwrap();
    let a = summary(&[("x", Some(1.0), 3.0)]);
    let mut b = summary(&[("x", Some(1.0), 3.0)]);
    b.duration_s = 3.0;
    let (pa, pb) = (dir.path().join("a.json"), dir.path().join("b.json"));
    std::fs::write(&pa, serde_json::to_string(&a).unwrap()).unwrap();
    std::fs::write(&pb, serde_json::to_string(&b).unwrap()).unwrap();
    let plain = run(&pa, &pb, None, false).unwrap();
    assert_eq!(plain.exit, Exit::Passed);
    assert_eq!(plain.comparison.differences.len(), 1);
    assert_eq!(run(&pa, &pb, None, true).unwrap().exit, Exit::GateFailed);
    assert_eq!(run(&pa, &pa, None, true).unwrap().exit, Exit::Passed);
}
