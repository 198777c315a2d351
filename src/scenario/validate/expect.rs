//! `[arms.expect]`: an arm's bounds, each a figure, a direction and a
//! value, checked where they are written (a number out of range, a bound
//! on a figure the arm's mode cannot have).

use super::source::{Result, Source};
use crate::gate::Expectation;
use crate::scenario::raw::{RawArm, RawExpect};
use crate::scenario::spec::Mode;

/// `metrics`: the scenario reads the limiter's own counters.
pub(super) fn arm_expect(
    src: &Source,
    a: &RawArm,
    mode: Mode,
    metrics: bool,
) -> Result<Vec<Expectation>> {
    let mut bounds = match &a.expect {
        Some(e) => stated(src, e, mode.clone(), metrics)?,
        None => Vec::new(),
    };
    // An external target with no bound on what is admitted past the
    // policy gates the definite violations at 0: a run that proves
    // over-admits never passes on silence. An arm that expects to be
    // caught says so with a `min_…`.
    if mode == Mode::External && !bounds.iter().any(|b| b.figure.is_over_admission()) {
        bounds.push(crate::gate::default_definite());
    }
    Ok(bounds)
}

/// The bounds `[arms.expect]` states, checked against what the arm has.
fn stated(src: &Source, e: &RawExpect, mode: Mode, metrics: bool) -> Result<Vec<Expectation>> {
    let on_metrics = [&e.max_metrics_discrepancy, &e.min_metrics_discrepancy];
    if let (false, Some(v)) = (metrics, on_metrics.into_iter().flatten().next()) {
        return Err(src.at(
            v,
            "a bound on metrics_discrepancy needs [target] metrics: where the limiter's own counters are read",
        ));
    }
    if let (false, Some(v)) = (
        mode == Mode::RedisBatched,
        e.max_lease_bound_violations.as_ref(),
    ) {
        return Err(src.at(v, "max_lease_bound_violations needs mode redis_batched"));
    }
    if !mode.uses_redis() {
        let spans = [
            e.max_redis_commands_per_decision.as_ref().map(|v| v.span()),
            e.max_redis_bytes_per_key.as_ref().map(|v| v.span()),
            e.min_redis_bytes_per_key.as_ref().map(|v| v.span()),
        ];
        if let Some(span) = spans.into_iter().flatten().next() {
            return Err(src.error(
                Some(span),
                format!(
                    "redis_* expectations need mode redis_naive or redis_lua (this arm is {})",
                    mode.as_str()
                ),
            ));
        }
    }
    expectations(src, e)
}

fn expectations(src: &Source, e: &RawExpect) -> Result<Vec<Expectation>> {
    let ratios = [
        ("max_over_admission_ratio", &e.max_over_admission_ratio),
        ("min_over_admission_ratio", &e.min_over_admission_ratio),
        ("max_false_reject_ratio", &e.max_false_reject_ratio),
        ("min_false_reject_ratio", &e.min_false_reject_ratio),
        ("max_p99_ms", &e.max_p99_ms),
        ("max_error_ratio", &e.max_error_ratio),
        ("max_not_sent_ratio", &e.max_not_sent_ratio),
        ("max_peak_window_ratio", &e.max_peak_window_ratio),
        ("min_peak_window_ratio", &e.min_peak_window_ratio),
        (
            "max_redis_commands_per_decision",
            &e.max_redis_commands_per_decision,
        ),
        ("max_metrics_discrepancy", &e.max_metrics_discrepancy),
        ("min_metrics_discrepancy", &e.min_metrics_discrepancy),
    ];
    let counts = [
        ("max_definite_violations", &e.max_definite_violations),
        ("min_definite_violations", &e.min_definite_violations),
        ("max_possible_violations", &e.max_possible_violations),
        ("max_header_findings", &e.max_header_findings),
        (
            "max_remaining_contradictions",
            &e.max_remaining_contradictions,
        ),
        (
            "min_remaining_contradictions",
            &e.min_remaining_contradictions,
        ),
        ("max_redis_bytes_per_key", &e.max_redis_bytes_per_key),
        ("min_redis_bytes_per_key", &e.min_redis_bytes_per_key),
        ("max_lease_bound_violations", &e.max_lease_bound_violations),
    ];
    let mut out = Vec::new();
    let named = |key: &'static str, value: f64| {
        crate::gate::named(key, value).expect("every [arms.expect] key is a gate bound")
    };
    for (key, value) in ratios {
        if let Some(v) = value {
            let x = *v.get_ref();
            if !(x.is_finite() && x >= 0.0) {
                return Err(src.at(v, format!("{key} must be a number of at least 0, got {x}")));
            }
            out.push(named(key, x));
        }
    }
    for (key, value) in counts {
        if let Some(v) = value {
            let x = src.count(v, key, 0, i64::MAX)?;
            out.push(named(key, x as f64));
        }
    }
    Ok(out)
}
