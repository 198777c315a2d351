//! `summary.json`, schema `rlbench.summary/v1` (ARCHITECTURE.md): the contract
//! CI gates and `compare` read. Figures may be added; names keep meaning.
//! This file holds the document and an arm's entry, field by field in the
//! order they are written; the parts are in summary/ by what they say.

mod limiter;
mod senders;
mod traffic;
mod verdicts;

pub(crate) use limiter::{
    count_text, ConventionCount, HeaderSummary, HeldCount, LimiterMetrics, RedisErrors, RedisNode,
    RedisUse,
};
pub(crate) use senders::{KeySentVerdict, KeyUse, PerAgent, Spoofing, Stuck, STUCK_NAMED};
pub(crate) use traffic::{
    FaultSummary, Goodput, Hdr, Latency, PerReplica, Phase, Rate, Requests, LATE_LAG_P99_MS,
    SATURATED_BELOW, SATURATED_LAG_P50_MS,
};
pub(crate) use verdicts::{
    ArmWitness, ClockRate, Correctness, Expect, Gate, LeaseBound, PolicyFit, TooSlow, WitnessKind,
    WitnessRequest,
};

use reference_api::Policy;
use serde::{Deserialize, Serialize};
use std::path::Path;

pub(crate) const SCHEMA: &str = "rlbench.summary/v1";

/// `policy_text` when there was no policy.
pub(crate) const NOT_JUDGED: &str = "no policy given: not judged";

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Summary {
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
pub(crate) struct ArmSummary {
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
    pub headers: HeaderSummary,
    /// Retrying callers (`[load] retry`): what they got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<Goodput>,
    /// `[target] metrics`: the limiter's own counts beside the trace's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limiter_metrics: Option<LimiterMetrics>,
    /// Redis modes: what the Redis nodes did for the load, from their own
    /// `INFO`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis: Option<RedisUse>,
    /// `redis_batched`: the over-admission leases allow, and whether it held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_bound: Option<LeaseBound>,
    /// How fast this machine's wall clock ran against the generator's
    /// during the load, and the rate the verdicts allow for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockRate>,
    /// Target URLs off this machine the arm sent to, by the user's opt-in
    /// (`--allow-remote-targets`, `[target] allow_remote = true`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote_targets: Vec<String>,
    /// Every URL an external target's arm sent to (credentials left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// The keys the load was given (absent in folders from before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys_declared: Option<u32>,
    /// Requests read from access logs (`rlbench audit`), not sent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_logs: bool,
    /// The load agents that sent the arm's requests (`run --agents`),
    /// beside `per_replica`; absent when this machine sent them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_agent: Vec<PerAgent>,
    /// The keys that sent requests and how their first requests fared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<KeyUse>,
    /// `[load] spoof`: principals sent under forged identities; the
    /// verdicts above are per principal, these per key sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spoofing: Option<Spoofing>,
    /// An arm expected correct and proven wrong against its declared
    /// policy: another policy under which its busiest keys hold no
    /// definite violation and no false reject (a hint, not a verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_fit: Option<PolicyFit>,
}

pub(crate) fn write(path: &Path, summary: &Summary) -> Result<(), super::StoreError> {
    let json = serde_json::to_string_pretty(summary).map_err(|source| super::StoreError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    super::atomic::replace(path, (json + "\n").as_bytes())
}
