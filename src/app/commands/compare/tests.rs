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

/// Bounds with `--max-regression` at `max` (none: the default gate) and
/// `--latency-floor`'s default, 1 ms.
fn bounds(max: Option<f64>) -> Bounds {
    Bounds {
        max_regression: max,
        latency_floor_ms: 1.0,
    }
}

#[test]
fn rows_pair_arms_by_name_with_relative_change() {
    let c = compare(
        &summary(&[("a", Some(0.8), 10.0)]),
        &summary(&[("a", Some(0.4), 10.0), ("b", Some(1.0), 1.0)]),
        bounds(None),
    );
    let ratio = c
        .rows
        .iter()
        .find(|r| r.arm == "a" && r.figure == "over_admission_ratio")
        .unwrap();
    assert_eq!(ratio.change(), Some(-0.5));
    let new_arm = c
        .rows
        .iter()
        .find(|r| r.arm == "b" && r.figure == "p99_ms")
        .unwrap();
    assert_eq!((new_arm.baseline, new_arm.candidate), (None, Some(1.0)));
    // Admitted beside allowed, for every arm.
    let shown: Vec<&str> = c
        .rows
        .iter()
        .filter(|r| r.arm == "a")
        .map(|r| r.figure)
        .collect();
    assert_eq!(&shown[..2], ["admitted", "allowed"]);
    assert!(c.regressions.is_empty(), "{:?}", c.regressions);
}

/// Two runs of the same correct limiter differ in timing only: whatever
/// their latencies and their admits below what was allowed, the default
/// compare finds nothing; `--max-regression` alone does not make a
/// sub-millisecond p99 a regression either (the floor).
#[test]
fn noise_never_fails_a_compare() {
    let base = summary(&[("a", Some(0.97), 0.296)]);
    let mut cand = summary(&[("a", Some(1.0), 0.877)]);
    cand.arms[0].latency_ms.p50 = 0.5;
    cand.arms[0].requests.admitted = 9;
    assert!(compare(&base, &cand, bounds(None)).regressions.is_empty());
    assert!(compare(&base, &cand, bounds(Some(0.10)))
        .regressions
        .is_empty());
    // Past the floor it is one.
    let slow = summary(&[("a", Some(1.0), 1.5)]);
    let r = compare(&base, &slow, bounds(Some(0.10))).regressions;
    assert_eq!(
        r,
        ["a: p99_ms 0.296 -> 1.500 (more than 10.0% worse and more than 1 ms)"]
    );
    // Not without --max-regression.
    assert!(compare(&base, &slow, bounds(None)).regressions.is_empty());
}

#[test]
fn a_regression_beyond_the_bound_is_reported_and_within_it_is_not() {
    // A run already past its policy: its ratio moves within the bound.
    let base = summary(&[("a", Some(1.2), 10.0)]);
    let within = summary(&[("a", Some(1.25), 10.5)]);
    assert!(compare(&base, &within, bounds(Some(0.10)))
        .regressions
        .is_empty());
    let worse = summary(&[("a", Some(1.4), 10.0)]);
    let r = compare(&base, &worse, bounds(Some(0.10))).regressions;
    assert_eq!(r.len(), 1);
    assert!(
        r[0].starts_with("a: over_admission_ratio 1.200 -> 1.400"),
        "{r:?}"
    );
    // Without a bound a move past 1 that was already past 1 is not one.
    assert!(compare(&base, &worse, bounds(None)).regressions.is_empty());
    let slower = summary(&[("a", Some(1.2), 12.0)]);
    assert!(compare(&base, &slower, bounds(Some(0.10))).regressions[0].contains("p99_ms 10 -> 12"));
    let unbounded = summary(&[("a", None, 10.0)]);
    assert_eq!(
        compare(&base, &unbounded, bounds(Some(0.10)))
            .regressions
            .len(),
        1
    );
    assert_eq!(
        compare(&base, &unbounded, bounds(None)).regressions.len(),
        1
    );
}

/// What is not noise fails by default: a proven over-admit where there
/// was none, a ratio past 1, the gate turning red, an arm gone.
#[test]
fn violations_from_none_a_red_gate_and_a_missing_arm_are_regressions() {
    let base = judged(&[("a", Some(1.0), 10.0, 0), ("b", Some(1.0), 10.0, 0)]);
    let same = judged(&[("a", Some(1.0), 10.0, 0), ("b", Some(1.0), 10.0, 0)]);
    assert!(compare(&base, &same, bounds(None)).regressions.is_empty());
    let one = judged(&[("a", Some(1.0), 10.0, 1)]);
    let r = compare(&base, &one, bounds(None)).regressions;
    assert_eq!(
        r,
        [
            "a: definite_violations 0 -> 1 (above 0, where a correct limiter scores 0)",
            "b: in the baseline, missing from the candidate"
        ]
    );
    let past = judged(&[("a", Some(1.02), 10.0, 0), ("b", Some(1.0), 10.0, 0)]);
    assert_eq!(compare(&base, &past, bounds(None)).regressions.len(), 1);
    let mut red = judged(&[("a", Some(1.0), 10.0, 0), ("b", Some(1.0), 10.0, 0)]);
    red.gate.passed = false;
    red.gate.failures = vec!["a: p99_ms 10 > max 5".into()];
    assert_eq!(
        compare(&base, &red, bounds(None)).regressions,
        ["the gate passed in the baseline and failed in the candidate: a: p99_ms 10 > max 5"]
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
    // No bound: past 1 is worse (and fails); latency is not gated.
    let free = compare(&base, &cand, bounds(None));
    assert_eq!(trend_of(&free, "a", "over_admission_ratio"), Trend::Worse);
    assert_eq!(trend_of(&free, "a", "p99_ms"), Trend::Even);
    assert_eq!(free.regressions.len(), 1);
    // With a bound the halved p99 is better, and its way back worse.
    let bound = compare(&base, &cand, bounds(Some(0.10)));
    assert_eq!(trend_of(&bound, "a", "p99_ms"), Trend::Better);
    let back = compare(&cand, &base, bounds(Some(0.10)));
    assert_eq!(trend_of(&back, "a", "p99_ms"), Trend::Worse);
    assert_eq!(trend_of(&back, "a", "over_admission_ratio"), Trend::Better);
    // Unbounded is worse, and its way back better.
    let unbounded = summary(&[("a", None, 10.0)]);
    let worse = compare(&base, &unbounded, bounds(Some(0.10)));
    assert_eq!(trend_of(&worse, "a", "over_admission_ratio"), Trend::Worse);
    assert_eq!(worse.regressions.len(), 1);
    let back = compare(&unbounded, &base, bounds(Some(0.10)));
    assert_eq!(trend_of(&back, "a", "over_admission_ratio"), Trend::Better);
}

#[test]
fn figures_the_gate_ignores_are_never_coloured() {
    let base = summary(&[("a", Some(1.0), 10.0)]);
    let mut cand = summary(&[("a", Some(1.0), 10.0)]);
    cand.arms[0].latency_ms.p50 = 100.0;
    cand.arms[0].rate.achieved_rps = 1.0;
    cand.arms[0].requests.admitted = 1;
    let c = compare(&base, &cand, bounds(Some(0.10)));
    for figure in ["admitted", "allowed", "p50_ms", "achieved_rps"] {
        assert_eq!(trend_of(&c, "a", figure), Trend::Even, "{figure}");
        assert!(!c.rows.iter().find(|r| r.figure == figure).unwrap().gated);
    }
}

#[test]
fn runs_that_ran_different_things_are_said_to_differ() {
    let a = summary(&[("x", Some(1.0), 3.0), ("y", Some(1.0), 3.0)]);
    assert!(compare(&a, &a, bounds(None)).differences.is_empty());
    let mut b = summary(&[("x", Some(1.0), 3.0), ("z", Some(1.0), 3.0)]);
    b.scenario = "other".into();
    b.duration_s = 8.0;
    b.arms[0].rate.target_rps = 200.0;
    let d = compare(&a, &b, bounds(None)).differences;
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
    assert!(compare(&a, &c, bounds(None)).differences.is_empty());
    // A loosened policy, other URLs, the key elsewhere, other keys.
    let mut e = summary(&[("x", Some(1.0), 3.0), ("y", Some(1.0), 3.0)]);
    e.arms[0].policy = Some(reference_api::Policy::SlidingLog {
        limit: 40,
        window_us: 1_000_000,
    });
    e.arms[0].targets = vec!["http://127.0.0.1:2/x".into()];
    e.arms[0].keys_declared = Some(9);
    e.arms[0].keys = Some(crate::store::summary::KeyUse {
        keys: 9,
        first_limited: 0,
        key_header: Some("X-Api-Key".into()),
        key_in: None,
        stuck: None,
    });
    let mut f = summary(&[("x", Some(1.0), 3.0), ("y", Some(1.0), 3.0)]);
    f.arms[0].targets = vec!["http://127.0.0.1:1/x".into()];
    f.arms[0].keys_declared = Some(5);
    f.arms[0].keys = Some(crate::store::summary::KeyUse {
        key_header: Some("X-Customer-Id".into()),
        ..e.arms[0].keys.clone().unwrap()
    });
    assert_eq!(
        compare(&f, &e, bounds(None)).differences,
        [
            "arm x's policies differ: sliding_log: 10 per 1s against sliding_log: 40 per 1s",
            "arm x's URLs differ: http://127.0.0.1:1/x against http://127.0.0.1:2/x",
            "arm x's keys go elsewhere: X-Customer-Id against X-Api-Key",
            "arm x's keys differ: 5 against 9",
        ]
    );
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
    let plain = run(&pa, &pb, bounds(None), false).unwrap();
    assert_eq!(plain.exit, Exit::Passed);
    assert_eq!(plain.comparison.differences.len(), 1);
    assert_eq!(
        run(&pa, &pb, bounds(None), true).unwrap().exit,
        Exit::GateFailed
    );
    assert_eq!(
        run(&pa, &pa, bounds(None), true).unwrap().exit,
        Exit::Passed
    );
}

/// A summary read back may list a million URLs: a line names three.
#[test]
fn a_forged_list_of_urls_is_named_in_a_line() {
    let a = summary(&[("x", Some(1.0), 3.0)]);
    let mut b = summary(&[("x", Some(1.0), 3.0)]);
    b.arms[0].targets = (0..1_000_000)
        .map(|i| format!("http://127.0.0.1:{}/x", i % 60_000))
        .collect();
    let d = compare(&a, &b, bounds(None)).differences;
    assert_eq!(d.len(), 1);
    assert!(
        d[0].ends_with("and 999997 more"),
        "{}",
        &d[0][..200.min(d[0].len())]
    );
    assert!(d[0].len() < 200);
}
