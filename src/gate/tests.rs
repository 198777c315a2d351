//! The gate's expectations held to hand-built figures: each passes, fails
//! and sits on its boundary as it should.

use super::*;
use crate::analyze::{Counts, Percentiles};
use crate::verify::Verdict;

fn figures(admitted: u64, allowed_max: u64, definite: u64) -> ArmFigures {
    ArmFigures {
        counts: Counts {
            sent: 100,
            admitted,
            ..Counts::default()
        },
        tries: Default::default(),
        latency: Percentiles {
            p99: 12.5,
            ..Percentiles::default()
        },
        service: Percentiles::default(),
        lag: Percentiles::default(),
        per_replica: vec![],
        histograms: crate::analyze::Histograms::empty(),
        per_agent: vec![],
        judgments: Default::default(),
        lease_judgments: None,
        per_key_sent: None,
        metrics: None,
        first_requests: Default::default(),
        per_replica_histograms: vec![],
        window: None,
        series: Default::default(),
        keys: vec![],
        phases: vec![],
        recovery_ms: vec![],
        witnesses: vec![],
        errors_by_kind: Default::default(),
        statuses: Default::default(),
        error_statuses: Default::default(),
        headers: Default::default(),
        redis: None,
        lease_bound: None,
        too_slow: None,
        scheduled: 100,
        not_sent: Default::default(),
        verdict: Some(Verdict {
            admitted,
            allowed_max,
            definite_violations: definite,
            ..Verdict::default()
        }),
    }
}

fn expect(key: &'static str, figure: Figure, bound: Bound, value: f64) -> Expectation {
    Expectation {
        key,
        figure,
        bound,
        value,
    }
}

#[test]
fn bounds_pass_at_the_limit_and_fail_past_it() {
    let f = figures(30, 10, 20);
    let checks = evaluate(
        &[
            expect(
                "min_over_admission_ratio",
                Figure::OverAdmissionRatio,
                Bound::AtLeast,
                3.0,
            ),
            expect(
                "max_over_admission_ratio",
                Figure::OverAdmissionRatio,
                Bound::AtMost,
                2.99,
            ),
            expect(
                "max_definite_violations",
                Figure::DefiniteViolations,
                Bound::AtMost,
                0.0,
            ),
            expect("max_p99_ms", Figure::P99Ms, Bound::AtMost, 12.5),
        ],
        &f,
    );
    let passed: Vec<bool> = checks.iter().map(|c| c.passed).collect();
    // Then the default error bound, the whole schedule sent and
    // "something was judged".
    assert_eq!(passed, [true, false, false, true, true, true, true]);
    assert_eq!(checks[1].describe(), "over_admission_ratio 3 > max 2.99");
    assert_eq!(checks[2].describe(), "definite_violations 20 > max 0");
}

#[test]
fn correctness_bounds_fail_without_a_policy_and_latency_bounds_still_apply() {
    let mut f = figures(30, 10, 0);
    f.verdict = None;
    let checks = evaluate(
        &[
            expect(
                "min_peak_window_ratio",
                Figure::PeakWindowRatio,
                Bound::AtLeast,
                0.0,
            ),
            expect(
                "max_definite_violations",
                Figure::DefiniteViolations,
                Bound::AtMost,
                0.0,
            ),
            expect("max_p99_ms", Figure::P99Ms, Bound::AtMost, 12.5),
        ],
        &f,
    );
    let passed: Vec<bool> = checks.iter().map(|c| c.passed).collect();
    assert_eq!(passed, [false, false, true, true, true, true]);
}

#[test]
fn an_arm_whose_requests_all_failed_is_never_a_pass() {
    let mut f = figures(0, 0, 0);
    f.counts.errors = 95;
    f.counts.timeouts = 5;
    f.error_statuses.insert(404, 95);
    let checks = evaluate(
        &[expect(
            "max_definite_violations",
            Figure::DefiniteViolations,
            Bound::AtMost,
            0.0,
        )],
        &f,
    );
    assert!(checks[0].passed, "0 definite of nothing");
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| !c.passed)
        .map(Check::describe)
        .collect();
    assert_eq!(
        failed,
        [
            "error_ratio 1 > max 0.01 (default): 100 of 100 requests failed (404 ×95, timeout ×5)",
            "nothing judged: 100 of 100 requests failed (404 ×95, timeout ×5)",
        ]
    );
}

#[test]
fn the_default_error_bound_gives_way_to_the_arms_own() {
    let mut f = figures(90, 90, 0);
    f.counts.errors = 10;
    let own = [expect(
        "max_error_ratio",
        Figure::ErrorRatio,
        Bound::AtMost,
        0.2,
    )];
    let checks = evaluate(&own, &f);
    assert_eq!(checks.len(), 3, "the arm's bound, all sent, then judged");
    assert!(checks.iter().all(|c| c.passed));
    let checks = evaluate(&[], &f);
    assert_eq!(checks[0].expectation.key, DEFAULT_ERROR_KEY);
    assert!(!checks[0].passed, "10% errors > 1%");
    // At the boundary: 1 in 100 passes, and one decided request is enough.
    f.counts.errors = 1;
    f.counts.admitted = 1;
    assert!(evaluate(&[], &f).iter().all(|c| c.passed));
}

/// Every request of the schedule sent, by default; the reason said when
/// not; an arm may allow some (a bound of its own).
#[test]
fn a_schedule_left_unsent_fails_by_default_and_says_why() {
    let mut f = figures(90, 90, 0);
    assert!(evaluate(&[], &f).iter().all(|c| c.passed));
    f.not_sent.behind = 3;
    f.not_sent.lost = 1;
    let checks = evaluate(&[], &f);
    let c = checks
        .iter()
        .find(|c| c.expectation.figure == Figure::NotSentRatio)
        .unwrap();
    assert!(!c.passed);
    let said = c.describe();
    assert!(
        said.starts_with("not_sent_ratio 0.04 > max 0 (default): 4 of 100 requests never sent"),
        "{said}"
    );
    assert!(
        said.contains("3: the generator behind") && said.contains("1: their agent lost"),
        "{said}"
    );
    let own = [expect(
        "max_not_sent_ratio",
        Figure::NotSentRatio,
        Bound::AtMost,
        0.05,
    )];
    assert!(evaluate(&own, &f).iter().all(|c| c.passed));
}

#[test]
fn admits_where_none_were_allowed_are_unbounded() {
    let f = figures(5, 0, 5);
    let c = evaluate(
        &[expect(
            "max_over_admission_ratio",
            Figure::OverAdmissionRatio,
            Bound::AtMost,
            100.0,
        )],
        &f,
    );
    assert!(!c[0].passed);
    assert_eq!(c[0].value, None);
}

#[test]
fn header_bounds_count_findings_and_contradictions_with_or_without_a_policy() {
    let mut f = figures(10, 10, 0);
    f.verdict = None;
    f.headers.findings = vec!["one".into(), "two".into()];
    f.headers.remaining.contradicted = 3;
    let checks = evaluate(
        &[
            expect(
                "max_header_findings",
                Figure::HeaderFindings,
                Bound::AtMost,
                2.0,
            ),
            expect(
                "max_header_findings",
                Figure::HeaderFindings,
                Bound::AtMost,
                1.0,
            ),
            expect(
                "min_remaining_contradictions",
                Figure::RemainingContradictions,
                Bound::AtLeast,
                3.0,
            ),
            expect(
                "max_remaining_contradictions",
                Figure::RemainingContradictions,
                Bound::AtMost,
                2.0,
            ),
        ],
        &f,
    );
    let passed: Vec<bool> = checks.iter().map(|c| c.passed).collect();
    assert_eq!(passed, [true, false, true, false, true, true, true]);
    assert_eq!(checks[0].value, Some(2.0));
}

#[test]
fn redis_bounds_hold_at_the_limit_and_fail_unmeasured() {
    use crate::store::summary::RedisUse;
    let bounds = [
        expect(
            "max_redis_commands_per_decision",
            Figure::RedisCommandsPerDecision,
            Bound::AtMost,
            4.0,
        ),
        expect(
            "min_redis_bytes_per_key",
            Figure::RedisBytesPerKey,
            Bound::AtLeast,
            100.0,
        ),
        expect(
            "max_redis_bytes_per_key",
            Figure::RedisBytesPerKey,
            Bound::AtMost,
            100.0,
        ),
    ];
    let mut f = figures(10, 10, 0);
    // No node read: neither a max nor a min passes.
    let own = |f: &ArmFigures| evaluate(&bounds, f)[..3].to_vec();
    assert!(own(&f).iter().all(|c| !c.passed));
    f.redis = Some(RedisUse {
        nodes: vec![],
        decisions: 10,
        commands_per_decision: 4.0,
        cpu_us_per_decision: 1.0,
        bytes_per_key: 100,
    });
    assert!(own(&f).iter().all(|c| c.passed));
    f.redis.as_mut().unwrap().commands_per_decision = 4.001;
    f.redis.as_mut().unwrap().bytes_per_key = 101;
    let passed: Vec<bool> = own(&f).iter().map(|c| c.passed).collect();
    assert_eq!(passed, [false, true, false]);
    f.verdict = None;
    assert!(
        evaluate(&bounds[1..2], &f)[0].passed,
        "a measurement, not a verdict: no policy needed"
    );
}

#[test]
fn a_metrics_bound_holds_at_its_value_and_fails_unread_with_the_reason() {
    use crate::store::summary::{HeldCount, LimiterMetrics};
    let bounds = [
        expect(
            "max_metrics_discrepancy",
            Figure::MetricsDiscrepancy,
            Bound::AtMost,
            0.0,
        ),
        expect(
            "min_metrics_discrepancy",
            Figure::MetricsDiscrepancy,
            Bound::AtLeast,
            1.0,
        ),
    ];
    let own = |f: &ArmFigures| evaluate(&bounds, f)[..2].to_vec();
    let mut f = figures(10, 10, 0);
    // Not read at all: neither passes.
    let checks = own(&f);
    assert!(checks.iter().all(|c| !c.passed));
    assert!(
        checks[0].describe().contains("not read"),
        "{}",
        checks[0].describe()
    );
    let held = |off: f64| LimiterMetrics {
        source: "test".into(),
        admitted: Some(HeldCount {
            selector: "a".into(),
            limiter: 10.0 - off,
            trace: 10,
            undecided: 0,
            off,
        }),
        rejected: None,
        discrepancy: Some(off),
        resets: 0,
        error: None,
        samples: vec![],
    };
    // Exact: the max passes, the min fails; one off: the other way round.
    f.metrics = Some(held(0.0));
    let passed: Vec<bool> = own(&f).iter().map(|c| c.passed).collect();
    assert_eq!(passed, [true, false]);
    f.metrics = Some(held(1.0));
    let checks = own(&f);
    assert_eq!(
        checks.iter().map(|c| c.passed).collect::<Vec<_>>(),
        [false, true]
    );
    assert!(
        checks[0].describe().contains("off by 1"),
        "{}",
        checks[0].describe()
    );
    // Read and failed: no value, neither passes, and the reason is said.
    f.metrics = Some(LimiterMetrics {
        discrepancy: None,
        error: Some("http://127.0.0.1:1/metrics: connection refused".into()),
        ..held(0.0)
    });
    let checks = own(&f);
    assert!(checks.iter().all(|c| !c.passed));
    assert!(checks[0].describe().contains("connection refused"));
}
