//! summary.json's load figures: what was sent and how it was answered —
//! requests, rate, latency, per replica, histograms, retrying callers'
//! goodput, and the figures before, during and after each fault.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What retrying callers got, beside what the limiter was asked: first
/// attempts and retries apart, and successes per second of the send window.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Goodput {
    /// How they retried, in words.
    pub retry: String,
    /// First attempts (the requests callers wanted to make).
    pub requests: u64,
    /// Further attempts (each also counted in `requests.sent`).
    pub retries: u64,
    pub first_try_admitted: u64,
    pub eventually_admitted: u64,
    /// Requests never admitted: out of retries, given up at the run's
    /// end, or failed.
    pub gave_up: u64,
    /// Every attempt, per second.
    pub attempts_rps: f64,
    pub first_try_rps: f64,
    pub eventual_rps: f64,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct FaultSummary {
    /// e.g. "redis_down (pause)"
    pub fault: String,
    /// From just after it took effect to just after it was undone, in
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
pub(crate) struct Phase {
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
pub(crate) struct Hdr {
    /// From the intended send time.
    pub latency_us: String,
    /// From the actual send time.
    pub service_us: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Requests {
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
pub(crate) struct Rate {
    pub target_rps: f64,
    /// The target times the share of the schedule's requests that were
    /// sent (open loop); sent per second of sending (closed loop).
    pub achieved_rps: f64,
    /// The generator fell behind its schedule (fewer than 99% of its
    /// requests sent, or the typical one — schedule lag p50 — more than
    /// 10 ms late): the limiter saw less load than asked. Late bursts alone
    /// (a high p99) are reported, not called saturation.
    #[serde(default)]
    pub generator_saturated: bool,
    /// Requests the schedule asked for (0: closed loop, or not recorded).
    #[serde(default)]
    pub scheduled: u64,
    /// Of those, the ones never sent, by why (every request of the
    /// schedule is sent or counted here).
    #[serde(default, skip_serializing_if = "nothing_unsent")]
    pub not_sent: crate::store::records::NotSent,
}

pub(crate) fn nothing_unsent(n: &crate::store::records::NotSent) -> bool {
    n.total() == 0
}

/// Fewer sent than this share of the schedule marks the generator saturated.
pub(crate) const SATURATED_BELOW: f64 = 0.99;

/// Schedule lag p50 above this (ms) marks the generator saturated.
pub(crate) const SATURATED_LAG_P50_MS: f64 = 10.0;

/// Schedule lag p99 above this (ms) is reported as requests leaving late.
pub(crate) const LATE_LAG_P99_MS: f64 = 10.0;

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct PerReplica {
    pub replica: usize,
    pub sent: u64,
    pub admitted: u64,
    pub rejected: u64,
    pub errors: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis_errors: Option<u64>,
    pub histograms: Hdr,
}
