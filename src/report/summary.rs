//! `summary.json`, schema `rlbench.summary/v1` (DESIGN.md): the contract
//! CI gates and `compare` read. Figures may be added; names keep meaning.

use super::hgrm;
use crate::analyze::{ArmFigures, Counts, Histograms, Percentiles};
use crate::gate::Check;
use crate::record::ArmRecord;
use crate::scenario::Bound;
use reference_api::Policy;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub const SCHEMA: &str = "rlbench.summary/v1";

/// `policy_text` when there was no policy.
pub const NOT_JUDGED: &str = "no policy given: not judged";

#[derive(Debug, Serialize, Deserialize)]
pub struct Summary {
    pub schema: String,
    pub scenario: String,
    pub started_at: String,
    pub duration_s: f64,
    pub partial: bool,
    /// Why the run is partial: interrupted, or which arm stopped it and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_reason: Option<String>,
    pub arms: Vec<ArmSummary>,
    pub gate: Gate,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ArmSummary {
    pub name: String,
    pub mode: String,
    pub replicas: usize,
    /// Null when no policy was given (`rlbench attack` without `--policy`).
    pub policy: Option<Policy>,
    pub policy_text: String,
    /// The arm stopped early (Ctrl-C): its figures cover what was sent.
    pub partial: bool,
    pub requests: Requests,
    pub rate: Rate,
    /// Null when there was no policy to judge against.
    pub correctness: Option<Correctness>,
    pub latency_ms: Latency,
    pub service_ms: Latency,
    pub schedule_lag_ms: Latency,
    pub per_replica: Vec<PerReplica>,
    /// Redis modes: decisions taken without Redis (timeout or error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis_errors: Option<RedisErrors>,
    pub histograms: Hdr,
    pub expect: Vec<Expect>,
    /// The scenario's `[[faults]]` as they happened in this arm.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultSummary>,
    /// With faults: figures before, during and after each, by send time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
    /// What the rate-limit headers said, checked against the trace and policy.
    #[serde(default)]
    pub headers: crate::header_checks::HeaderSummary,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct FaultSummary {
    /// e.g. "redis_down (pause)"
    pub fault: String,
    /// From just before it was applied to just after it was undone, in
    /// seconds from the arm's load start.
    pub from_s: f64,
    pub to_s: f64,
    /// False when the arm had nothing to break (a Redis fault on a local arm).
    pub applied: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// From the fault's end to the answer of the first request sent after
    /// it that got a decision (2xx or 429); null when none did.
    pub recovery_ms: Option<f64>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Phase {
    /// "before", "during 1", "after 1", ...
    pub name: String,
    /// Seconds from the load start; null at the open ends.
    pub from_s: Option<f64>,
    pub to_s: Option<f64>,
    pub sent: u64,
    pub admitted: u64,
    pub rejected: u64,
    /// Errors and timeouts.
    pub errors: u64,
    pub p99_ms: f64,
    /// Proven among this phase's admits alone; null without a policy.
    pub definite_violations: Option<u64>,
    /// This phase's rejects judged against every admit; null without a policy.
    pub false_rejects: Option<u64>,
}

/// HdrHistogram V2 encodings, base64, values in µs: merge runs or replicas
/// by adding histograms, never by averaging percentiles.
#[derive(Debug, Serialize, Deserialize)]
pub struct Hdr {
    /// From the intended send time.
    pub latency_us: String,
    /// From the actual send time.
    pub service_us: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct RedisErrors {
    pub total: u64,
    /// Admitted anyway (`on_redis_error = "fail_open"`).
    pub failed_open: u64,
    /// Rejected (`on_redis_error = "fail_closed"`).
    pub failed_closed: u64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Requests {
    pub sent: u64,
    pub admitted: u64,
    pub rejected: u64,
    pub errors: u64,
    pub timeouts: u64,
    /// Errors without an answer, by kind (connect_refused, reset, ...).
    #[serde(default)]
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Answers by HTTP status.
    #[serde(default)]
    pub status_codes: BTreeMap<String, u64>,
    /// Answers counted as errors (neither admitted nor a limited status), by status.
    #[serde(default)]
    pub error_status_codes: BTreeMap<String, u64>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Rate {
    pub target_rps: f64,
    pub achieved_rps: f64,
    /// The generator fell behind its schedule (achieved < 99% of the target,
    /// or schedule lag p99 > 10 ms): the limiter saw less load than asked.
    #[serde(default)]
    pub generator_saturated: bool,
}

/// Achieved below this share of the target marks the generator saturated.
pub const SATURATED_BELOW: f64 = 0.99;
/// Schedule lag p99 above this (ms) marks the generator saturated.
pub const SATURATED_LAG_P99_MS: f64 = 10.0;

#[derive(Debug, Serialize, Deserialize)]
pub struct Correctness {
    pub allowed_max: u64,
    /// admitted / allowed_max; null when admits happened where none were allowed.
    pub over_admission_ratio: Option<f64>,
    pub peak_window_ratio: f64,
    pub definite_violations: u64,
    pub possible_violations: u64,
    pub false_rejects: u64,
    pub false_reject_ratio: f64,
    /// The proof of the verdicts: per kind the earliest and the largest
    /// violations and false rejects, requests referenced by `seq`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub witnesses: Vec<crate::witnesses::ArmWitness>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct PerReplica {
    pub replica: usize,
    pub sent: u64,
    pub admitted: u64,
    pub rejected: u64,
    pub errors: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis_errors: Option<u64>,
    pub histograms: Hdr,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Expect {
    /// The key as written in `[arms.expect]`.
    pub expectation: String,
    pub figure: String,
    /// "max" or "min".
    pub kind: String,
    pub bound: f64,
    pub value: Option<f64>,
    pub passed: bool,
    /// In words, e.g. `over_admission_ratio 2.97 > max 1.01`.
    pub detail: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Gate {
    pub passed: bool,
    pub failures: Vec<String>,
}

fn hdr(h: &Histograms) -> Hdr {
    Hdr {
        latency_us: hgrm::encode(&h.latency),
        service_us: hgrm::encode(&h.service),
    }
}

fn latency(p: &Percentiles) -> Latency {
    Latency {
        p50: p.p50,
        p90: p.p90,
        p99: p.p99,
        p999: p.p999,
        max: p.max,
    }
}

/// The generator fell behind: achieved below 99% of the target, or
/// schedule lag p99 (ms) above 10 ms. A closed loop (target 0) has no
/// schedule to fall behind.
pub fn saturated(achieved_rps: f64, target_rps: f64, lag_p99_ms: f64) -> bool {
    target_rps > 0.0
        && (achieved_rps < SATURATED_BELOW * target_rps || lag_p99_ms > SATURATED_LAG_P99_MS)
}

pub fn arm(run: &ArmRecord, f: &ArmFigures, checks: &[Check]) -> ArmSummary {
    let c = &f.counts;
    let achieved = if run.send_window_s > 0.0 {
        c.sent as f64 / run.send_window_s
    } else {
        0.0
    };
    ArmSummary {
        name: run.name.clone(),
        mode: run.mode.clone(),
        replicas: run.replicas,
        policy: run.policy.clone(),
        policy_text: match (&run.policy, &run.preset) {
            (None, _) => NOT_JUDGED.to_string(),
            (Some(p), None) => p.describe(),
            (Some(p), Some(preset)) => format!("{preset} = {}", p.describe()),
        },
        partial: run.interrupted,
        requests: Requests {
            sent: c.sent,
            admitted: c.admitted,
            rejected: c.rejected,
            errors: c.errors,
            timeouts: c.timeouts,
            errors_by_kind: f
                .errors_by_kind
                .iter()
                .map(|(k, n)| (k.name().to_string(), *n))
                .collect(),
            status_codes: f
                .statuses
                .iter()
                .map(|(s, n)| (s.to_string(), *n))
                .collect(),
            error_status_codes: f
                .error_statuses
                .iter()
                .map(|(s, n)| (s.to_string(), *n))
                .collect(),
        },
        rate: Rate {
            target_rps: run.target_rps,
            achieved_rps: (achieved * 10.0).round() / 10.0,
            generator_saturated: c.sent > 0 && saturated(achieved, run.target_rps, f.lag.p99),
        },
        correctness: f.verdict.as_ref().map(|v| Correctness {
            allowed_max: v.allowed_max,
            over_admission_ratio: v.over_admission_ratio(),
            peak_window_ratio: v.peak_window_ratio,
            definite_violations: v.definite_violations,
            possible_violations: v.possible_violations,
            false_rejects: v.false_rejects,
            false_reject_ratio: v.false_reject_ratio(),
            witnesses: f.witnesses.clone(),
        }),
        latency_ms: latency(&f.latency),
        service_ms: latency(&f.service),
        schedule_lag_ms: latency(&f.lag),
        per_replica: f
            .per_replica
            .iter()
            .enumerate()
            .map(|(replica, r): (usize, &Counts)| PerReplica {
                replica,
                sent: r.sent,
                admitted: r.admitted,
                rejected: r.rejected,
                errors: r.errors + r.timeouts,
                redis_errors: run
                    .redis_fallbacks
                    .as_ref()
                    .and_then(|f| f.get(replica))
                    .map(|f| f.failed_open + f.failed_closed),
                histograms: f
                    .per_replica_histograms
                    .get(replica)
                    .map_or_else(|| hdr(&Histograms::empty()), hdr),
            })
            .collect(),
        redis_errors: run.redis_fallbacks.as_ref().map(|all| {
            let (open, closed) = all
                .iter()
                .fold((0, 0), |(o, c), f| (o + f.failed_open, c + f.failed_closed));
            RedisErrors {
                total: open + closed,
                failed_open: open,
                failed_closed: closed,
            }
        }),
        histograms: hdr(&f.histograms),
        expect: checks
            .iter()
            .map(|check| Expect {
                expectation: check.expectation.key.to_string(),
                figure: check.expectation.figure.name().to_string(),
                kind: match check.expectation.bound {
                    Bound::AtMost => "max",
                    Bound::AtLeast => "min",
                }
                .to_string(),
                bound: check.expectation.value,
                value: check.value,
                passed: check.passed,
                detail: check.describe(),
            })
            .collect(),
        faults: faults(run, f),
        headers: f.headers.clone(),
        phases: f
            .phases
            .iter()
            .map(|p| Phase {
                name: p.name.clone(),
                from_s: p.from_us.map(seconds),
                to_s: p.to_us.map(seconds),
                sent: p.counts.sent,
                admitted: p.counts.admitted,
                rejected: p.counts.rejected,
                errors: p.counts.errors + p.counts.timeouts,
                p99_ms: p.latency.p99,
                definite_violations: p.verdict.map(|v| v.definite_violations),
                false_rejects: p.verdict.map(|v| v.false_rejects),
            })
            .collect(),
    }
}

fn seconds(us: i64) -> f64 {
    (us as f64 / 1_000.0).round() / 1_000.0
}

/// Recovery figures follow the applied faults in order.
fn faults(run: &ArmRecord, f: &ArmFigures) -> Vec<FaultSummary> {
    let mut recovery = f.recovery_ms.iter();
    run.faults
        .iter()
        .map(|a| FaultSummary {
            fault: a.fault.clone(),
            from_s: seconds(a.from_us as i64),
            to_s: seconds(a.to_us as i64),
            applied: a.applied,
            error: a.error.clone(),
            recovery_ms: if a.applied {
                recovery.next().copied().flatten()
            } else {
                None
            },
        })
        .collect()
}

pub fn write(path: &Path, summary: &Summary) -> Result<(), String> {
    let json = serde_json::to_string_pretty(summary).map_err(|e| format!("summary.json: {e}"))?;
    std::fs::write(path, json + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::saturated;

    #[test]
    fn saturation_starts_below_99_percent_or_above_10_ms_of_lag() {
        // The boundary itself is not saturated.
        assert!(!saturated(990.0, 1000.0, 10.0));
        assert!(saturated(989.9, 1000.0, 0.1));
        assert!(saturated(1000.0, 1000.0, 10.01));
        assert!(!saturated(1003.0, 1000.0, 0.2));
        // A closed loop has no target to miss.
        assert!(!saturated(55_000.0, 0.0, 0.0));
    }
}
