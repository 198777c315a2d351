//! The gate: checks an arm's `[arms.expect]` bounds against its figures,
//! and two that every arm carries: something was judged (at least one
//! decided request), and not too much went unanswered (`max_error_ratio`,
//! by default [`DEFAULT_MAX_ERROR_RATIO`]). A gate never passes on an arm
//! whose requests all failed: "0 definite violations" of nothing is no
//! evidence.

use crate::analyze::ArmFigures;
use std::fmt::Write as _;

/// The error ratio an arm may reach when it states none.
pub(crate) const DEFAULT_MAX_ERROR_RATIO: f64 = 0.01;

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Check {
    pub expectation: Expectation,
    /// `None` when the figure is unbounded (admits where none were allowed).
    pub value: Option<f64>,
    pub passed: bool,
    /// What the failed requests were, for the checks on what was judged.
    pub because: Option<String>,
}

impl Check {
    /// e.g. `over_admission_ratio 2.97 > max 1.01`
    pub(crate) fn describe(&self) -> String {
        let e = &self.expectation;
        let value = self
            .value
            .map_or("unbounded".to_string(), |v| format!("{}", round(v)));
        let (op, word) = match (e.bound, self.passed) {
            (Bound::AtMost, true) => ("<=", "max"),
            (Bound::AtMost, false) => (">", "max"),
            (Bound::AtLeast, true) => (">=", "min"),
            (Bound::AtLeast, false) => ("<", "min"),
        };
        let line = match e.figure {
            Figure::DecidedRequests if !self.passed => "nothing judged".to_string(),
            _ => format!("{} {value} {op} {word} {}", e.figure.name(), e.value),
        };
        let default = if [
            DEFAULT_ERROR_KEY,
            DEFAULT_NOT_SENT_KEY,
            DEFAULT_DEFINITE_KEY,
        ]
        .contains(&e.key)
        {
            " (default)"
        } else {
            ""
        };
        match &self.because {
            Some(b) if !self.passed => format!("{line}{default}: {b}"),
            _ => format!("{line}{default}"),
        }
    }
}

fn round(v: f64) -> f64 {
    (v * 1_000.0).round() / 1_000.0
}

/// The figure's value; `None` when unbounded (admits where none were
/// allowed) or not judged (no policy).
pub(crate) fn value(figure: Figure, f: &ArmFigures) -> Option<f64> {
    let judged = || f.verdict.as_ref();
    Some(match figure {
        Figure::OverAdmissionRatio => return judged()?.over_admission_ratio(),
        Figure::DefiniteViolations => judged()?.definite_violations as f64,
        Figure::PossibleViolations => judged()?.possible_violations as f64,
        Figure::FalseRejectRatio => judged()?.false_reject_ratio(),
        Figure::P99Ms => f.latency.p99,
        Figure::ErrorRatio => f.counts.error_ratio(),
        Figure::DecidedRequests => (f.counts.admitted + f.counts.rejected) as f64,
        Figure::PeakWindowRatio => judged()?.peak_window_ratio,
        Figure::HeaderFindings => f.headers.findings.len() as f64,
        Figure::RemainingContradictions => f.headers.remaining.contradicted as f64,
        Figure::RedisCommandsPerDecision => f.redis.as_ref()?.commands_per_decision,
        Figure::RedisBytesPerKey => f.redis.as_ref()?.bytes_per_key as f64,
        Figure::LeaseBoundViolations => f.lease_bound.as_ref()?.definite_violations as f64,
        Figure::MetricsDiscrepancy => f.metrics.as_ref()?.discrepancy?,
        Figure::NotSentRatio => match f.scheduled {
            0 => 0.0,
            n => f.not_sent.total() as f64 / n as f64,
        },
    })
}

/// The key of the bound on definite violations an external arm gets when
/// it states no bound on what is admitted past the policy.
pub(crate) const DEFAULT_DEFINITE_KEY: &str = "max_definite_violations (default)";

/// `max_definite_violations = 0`, as an external arm gets it by default
/// (the scenario's reading adds it): nothing proven past the policy.
pub(crate) fn default_definite() -> Expectation {
    Expectation {
        key: DEFAULT_DEFINITE_KEY,
        figure: Figure::DefiniteViolations,
        bound: Bound::AtMost,
        value: 0.0,
    }
}

/// The key of the error bound an arm gets when it states none.
pub(crate) const DEFAULT_ERROR_KEY: &str = "max_error_ratio (default)";
/// The key of the bound on requests never sent an arm gets when it
/// states none: the whole schedule, sent.
pub(crate) const DEFAULT_NOT_SENT_KEY: &str = "max_not_sent_ratio (default)";

/// The arm's own bounds, then the two every arm carries (see the module).
pub(crate) fn with_defaults(expect: &[Expectation]) -> Vec<Expectation> {
    let mut all = expect.to_vec();
    if !expect.iter().any(|e| e.figure == Figure::ErrorRatio) {
        all.push(Expectation {
            key: DEFAULT_ERROR_KEY,
            figure: Figure::ErrorRatio,
            bound: Bound::AtMost,
            value: DEFAULT_MAX_ERROR_RATIO,
        });
    }
    if !expect.iter().any(|e| e.figure == Figure::NotSentRatio) {
        all.push(Expectation {
            key: DEFAULT_NOT_SENT_KEY,
            figure: Figure::NotSentRatio,
            bound: Bound::AtMost,
            value: 0.0,
        });
    }
    all.push(Expectation {
        key: "something judged",
        figure: Figure::DecidedRequests,
        bound: Bound::AtLeast,
        value: 1.0,
    });
    all
}

/// "175 of 175 requests failed (404 ×170, timeout ×5)".
fn failed_requests(f: &ArmFigures) -> String {
    let c = &f.counts;
    let mut kinds: Vec<String> = f
        .error_statuses
        .iter()
        .map(|(s, n)| format!("{s} ×{n}"))
        .collect();
    kinds.extend(
        f.errors_by_kind
            .iter()
            .map(|(k, n)| format!("{} ×{n}", k.name())),
    );
    if c.timeouts > 0 {
        kinds.push(format!("timeout ×{}", c.timeouts));
    }
    let mut s = format!("{} of {} requests failed", c.errors + c.timeouts, c.sent);
    if !kinds.is_empty() {
        let _ = write!(s, " ({})", kinds.join(", "));
    }
    s
}

/// Checks `expect` and the bounds every arm carries ([`with_defaults`]).
pub(crate) fn evaluate(expect: &[Expectation], figures: &ArmFigures) -> Vec<Check> {
    with_defaults(expect)
        .iter()
        .map(|e| {
            let value = value(e.figure, figures);
            let v = value.unwrap_or(f64::INFINITY);
            // A bound on a correctness figure never passes unjudged, nor a
            // bound on Redis' figures unmeasured.
            let judged = (figures.verdict.is_some() || !e.figure.needs_policy())
                && (value.is_some() || !e.figure.measured_apart());
            let passed = judged
                && match e.bound {
                    Bound::AtMost => v <= e.value,
                    Bound::AtLeast => v >= e.value,
                };
            let because = match e.figure {
                Figure::DecidedRequests | Figure::ErrorRatio => Some(failed_requests(figures)),
                Figure::MetricsDiscrepancy => figures
                    .metrics
                    .as_ref()
                    .map(|m| m.error.clone().unwrap_or_else(|| m.describe()))
                    .or_else(|| Some("the limiter's metrics were not read".into())),
                Figure::NotSentRatio => Some(format!(
                    "{} of {} requests never sent ({})",
                    figures.not_sent.total(),
                    figures.scheduled,
                    figures.not_sent.why()
                )),
                _ => None,
            };
            Check {
                expectation: e.clone(),
                value,
                passed,
                because,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;

/// Every bound `[arms.expect]` (and `attack`'s flags) can state: its key,
/// the figure it bounds and which way.
const NAMED: &[(&str, Figure, Bound)] = &[
    (
        "max_over_admission_ratio",
        Figure::OverAdmissionRatio,
        Bound::AtMost,
    ),
    (
        "min_over_admission_ratio",
        Figure::OverAdmissionRatio,
        Bound::AtLeast,
    ),
    (
        "max_false_reject_ratio",
        Figure::FalseRejectRatio,
        Bound::AtMost,
    ),
    (
        "min_false_reject_ratio",
        Figure::FalseRejectRatio,
        Bound::AtLeast,
    ),
    ("max_p99_ms", Figure::P99Ms, Bound::AtMost),
    ("max_error_ratio", Figure::ErrorRatio, Bound::AtMost),
    ("max_not_sent_ratio", Figure::NotSentRatio, Bound::AtMost),
    (
        "max_peak_window_ratio",
        Figure::PeakWindowRatio,
        Bound::AtMost,
    ),
    (
        "min_peak_window_ratio",
        Figure::PeakWindowRatio,
        Bound::AtLeast,
    ),
    (
        "max_redis_commands_per_decision",
        Figure::RedisCommandsPerDecision,
        Bound::AtMost,
    ),
    (
        "max_definite_violations",
        Figure::DefiniteViolations,
        Bound::AtMost,
    ),
    (
        "min_definite_violations",
        Figure::DefiniteViolations,
        Bound::AtLeast,
    ),
    (
        "max_possible_violations",
        Figure::PossibleViolations,
        Bound::AtMost,
    ),
    ("max_header_findings", Figure::HeaderFindings, Bound::AtMost),
    (
        "max_remaining_contradictions",
        Figure::RemainingContradictions,
        Bound::AtMost,
    ),
    (
        "min_remaining_contradictions",
        Figure::RemainingContradictions,
        Bound::AtLeast,
    ),
    (
        "max_redis_bytes_per_key",
        Figure::RedisBytesPerKey,
        Bound::AtMost,
    ),
    (
        "min_redis_bytes_per_key",
        Figure::RedisBytesPerKey,
        Bound::AtLeast,
    ),
    (
        "max_lease_bound_violations",
        Figure::LeaseBoundViolations,
        Bound::AtMost,
    ),
    (
        "max_metrics_discrepancy",
        Figure::MetricsDiscrepancy,
        Bound::AtMost,
    ),
    (
        "min_metrics_discrepancy",
        Figure::MetricsDiscrepancy,
        Bound::AtLeast,
    ),
];

/// The bound written as `key = value`, if `key` names one.
pub(crate) fn named(key: &str, value: f64) -> Option<Expectation> {
    NAMED
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|&(key, figure, bound)| Expectation {
            key,
            figure,
            bound,
            value,
        })
}

/// A bound on one summary figure, e.g. `max_over_admission_ratio = 1.01`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Expectation {
    /// The key as written in `[arms.expect]`.
    pub key: &'static str,
    pub figure: Figure,
    pub bound: Bound,
    pub value: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    AtMost,
    AtLeast,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Figure {
    OverAdmissionRatio,
    DefiniteViolations,
    PossibleViolations,
    FalseRejectRatio,
    P99Ms,
    ErrorRatio,
    PeakWindowRatio,
    /// Sentences in the header checks' findings.
    HeaderFindings,
    /// Limited answers contradicting an earlier answer's `remaining`.
    RemainingContradictions,
    /// Commands Redis ran per decision (scripts' own calls included).
    RedisCommandsPerDecision,
    /// `MEMORY USAGE` of the arm's keys, on average.
    RedisBytesPerKey,
    /// `redis_batched`: admits proven beyond the lease bound.
    LeaseBoundViolations,
    /// Admitted + rejected: the requests whose decision the trace knows.
    DecidedRequests,
    /// The share of the schedule never sent.
    NotSentRatio,
    /// How far the limiter's own counters are, at the least, from any
    /// counts the trace allows (`[target] metrics`).
    MetricsDiscrepancy,
}

impl Figure {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Figure::OverAdmissionRatio => "over_admission_ratio",
            Figure::DefiniteViolations => "definite_violations",
            Figure::PossibleViolations => "possible_violations",
            Figure::FalseRejectRatio => "false_reject_ratio",
            Figure::P99Ms => "p99_ms",
            Figure::ErrorRatio => "error_ratio",
            Figure::PeakWindowRatio => "peak_window_ratio",
            Figure::HeaderFindings => "header_findings",
            Figure::RemainingContradictions => "remaining_contradictions",
            Figure::RedisCommandsPerDecision => "redis_commands_per_decision",
            Figure::RedisBytesPerKey => "redis_bytes_per_key",
            Figure::LeaseBoundViolations => "lease_bound_violations",
            Figure::DecidedRequests => "decided_requests",
            Figure::NotSentRatio => "not_sent_ratio",
            Figure::MetricsDiscrepancy => "metrics_discrepancy",
        }
    }

    /// A bound on it says how much may be admitted past the policy (so an
    /// arm stating one needs no default on the definite violations).
    pub(crate) fn is_over_admission(self) -> bool {
        matches!(
            self,
            Figure::OverAdmissionRatio
                | Figure::DefiniteViolations
                | Figure::PossibleViolations
                | Figure::PeakWindowRatio
        )
    }

    /// Judged against a policy (not a plain measurement).
    pub(crate) fn needs_policy(self) -> bool {
        !matches!(
            self,
            Figure::P99Ms
                | Figure::ErrorRatio
                | Figure::DecidedRequests
                | Figure::NotSentRatio
                | Figure::HeaderFindings
                | Figure::RemainingContradictions
                | Figure::RedisCommandsPerDecision
                | Figure::RedisBytesPerKey
                | Figure::MetricsDiscrepancy
        )
    }

    /// Read from Redis itself (Redis modes only).
    pub(crate) fn read_from_redis(self) -> bool {
        matches!(
            self,
            Figure::RedisCommandsPerDecision
                | Figure::RedisBytesPerKey
                | Figure::LeaseBoundViolations
        )
    }

    /// Measured apart from the trace (Redis, the limiter's metrics): a
    /// bound on it never passes unmeasured.
    pub(crate) fn measured_apart(self) -> bool {
        self.read_from_redis() || self == Figure::MetricsDiscrepancy
    }
}
