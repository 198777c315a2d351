//! `summary.json`, schema `rlbench.summary/v1` (ARCHITECTURE.md): the contract
//! CI gates and `compare` read. Figures may be added; names keep meaning.

use crate::store::probes::Probe;
use reference_api::Policy;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
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

/// See [`ArmSummary::policy_fit`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct PolicyFit {
    /// In words, e.g. `sliding_log: 30 per 2s`.
    pub policy_text: String,
    /// As `--policy` takes it.
    pub inline: String,
    /// Its long-run rate over the declared policy's.
    pub rate_ratio: f64,
    /// The keys and requests it was judged on.
    pub keys: u64,
    pub requests: u64,
}

/// Principals under forged identities, and the trace judged per key sent
/// (what the limiter was told) beside per principal (who really called).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Spoofing {
    #[serde(flatten)]
    pub spoofed: crate::store::records::Spoofed,
    /// The forged keys that sent requests.
    pub keys_sent: u64,
    /// Judged per key sent; none when not judged so (a trace judged in
    /// shards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_key_sent: Option<KeySentVerdict>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct KeySentVerdict {
    pub definite_violations: u64,
    pub false_rejects: u64,
}

/// An arm's keys, as the limiter should have told them apart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct KeyUse {
    /// Keys that sent at least one request.
    pub keys: u64,
    /// Keys whose first request was limited: a limiter counting each key
    /// apart admits a fresh key's first request.
    pub first_limited: u64,
    /// The request header that carried the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_header: Option<String>,
    /// Where else it went (`[load] key`), in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_in: Option<String>,
}

/// One load agent's share of an arm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct PerAgent {
    pub agent: String,
    pub host: String,
    /// Its segment of the schedule: index `segment` of `of`.
    pub segment: usize,
    pub of: usize,
    pub sent: u64,
    pub admitted: u64,
    pub rejected: u64,
    pub errors: u64,
    pub achieved_rps: f64,
    pub schedule_lag_p99_ms: f64,
    /// Its wall clock behind the coordinator's (ms; negative: ahead).
    pub clock_offset_ms: f64,
    /// How far its requests' times may be off on the run's time line (ms):
    /// each is widened by it before it is judged.
    pub clock_uncertainty_ms: f64,
    /// Its clock was measured against the coordinator's (false only in
    /// tests that show the cost of trusting each machine's own clock).
    pub clock_estimated: bool,
    /// When it stopped answering (s); its segment is then incomplete and
    /// the run partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_at_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// Lost, its segment's requests from then on were sent by another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_over: Option<crate::store::records::TakenOver>,
}

/// The clock rates behind an arm's verdicts (parts per million).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ClockRate {
    /// The wall clock against the generator's monotonic clock, the worst
    /// stretch between samples a second apart (reading error included);
    /// null with too few samples.
    pub measured_ppm: Option<i64>,
    /// Samples taken (start, every second, end).
    pub samples: usize,
    /// The replicas' clocks were made to run this much fast (simulated).
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub simulated_ppm: i64,
    /// Declared in `[checks] clock_rate_ppm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_ppm: Option<i64>,
    /// What every window, segment and refill was widened by.
    pub allowed_ppm: i64,
}

fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

/// A batched arm judged twice: against its policy (the usual verdict:
/// leases over-admit) and against the bound leases allow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct LeaseBound {
    /// Admits any window may hold: the limit plus one lease's rest per
    /// replica, at most the limit.
    pub limit_per_window: u64,
    /// Admits proven beyond that bound (0 for a correct lease limiter).
    pub definite_violations: u64,
}

/// The Redis side of an arm's decisions: per node (each master of a
/// cluster) and per decision (a request a replica answered, admitted or
/// rejected).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct RedisUse {
    pub nodes: Vec<RedisNode>,
    pub decisions: u64,
    /// Commands clients sent, over all nodes, per decision.
    pub commands_per_decision: f64,
    /// Server CPU, over all nodes, per decision (µs).
    pub cpu_us_per_decision: f64,
    /// `MEMORY USAGE` of the arm's keys weighed at the end, on average
    /// (bytes; 0 when none was found).
    pub bytes_per_key: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct RedisNode {
    pub address: String,
    pub commands: u64,
    /// This node's part of all the nodes' commands (0 to 1).
    pub share: f64,
    pub script_calls: u64,
    pub cpu_ms: f64,
    /// Keys held at the end.
    pub keys: u64,
    pub used_memory_bytes: u64,
    /// Of the keys weighed on this node, on average.
    pub bytes_per_key: u64,
}

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
pub(crate) struct RedisErrors {
    pub total: u64,
    /// Admitted anyway (`on_redis_error = "fail_open"`).
    pub failed_open: u64,
    /// Rejected (`on_redis_error = "fail_closed"`).
    pub failed_closed: u64,
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
    #[serde(default, skip_serializing_if = "crate::store::summary::nothing_unsent")]
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
pub(crate) struct Correctness {
    /// The over-admission bound U: the most admits any correct limiter
    /// could have given the decided requests (summed over keys).
    pub allowed_max: u64,
    /// admitted / allowed_max; above 1 only with definite violations; null
    /// when admits happened where none were allowed.
    pub over_admission_ratio: Option<f64>,
    /// An ideal limiter replayed over the send times: a yardstick only
    /// (a correct limiter deciding later may pass it), never a gate.
    #[serde(default)]
    pub replay_admits: u64,
    pub peak_window_ratio: f64,
    pub definite_violations: u64,
    pub possible_violations: u64,
    pub false_rejects: u64,
    pub false_reject_ratio: f64,
    /// Admits answered too slowly for the policy's sharp rules, when any
    /// were: little or nothing can be proven of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub too_slow: Option<TooSlow>,
    /// The proof of the verdicts: per kind the earliest and the largest
    /// violations and false rejects, requests referenced by `seq`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub witnesses: Vec<ArmWitness>,
}

/// See [`Correctness::too_slow`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TooSlow {
    /// How many admits were that slow.
    pub admits: u64,
    /// From which answer time (ms, the verifier's slack included).
    pub from_ms: f64,
    /// What can still be proven of them, in words.
    pub left: String,
}

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

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Expect {
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
pub(crate) struct Gate {
    pub passed: bool,
    pub failures: Vec<String>,
}

pub(crate) fn write(path: &Path, summary: &Summary) -> Result<(), super::StoreError> {
    let json = serde_json::to_string_pretty(summary).map_err(|source| super::StoreError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    super::atomic::replace(path, (json + "\n").as_bytes())
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct HeaderSummary {
    /// Answers (any status).
    pub responses: u64,
    /// Answers carrying any rate-limit header.
    pub with_headers: u64,
    /// Per convention: answers carrying it, and how many of those did not parse.
    pub conventions: BTreeMap<String, ConventionCount>,
    /// Advertised quotas (limit) and windows, by value: how many answers said each.
    pub advertised_limit: BTreeMap<String, u64>,
    pub advertised_window_s: BTreeMap<String, u64>,
    pub remaining: RemainingCheck,
    /// Requests sent after waiting out an advertised Retry-After.
    pub retry_after_probes: Vec<Probe>,
    /// What a person should know, one sentence each; empty when all agrees.
    pub findings: Vec<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ConventionCount {
    pub present: u64,
    pub malformed: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RemainingCheck {
    /// Limited answers held against earlier `remaining` values.
    pub checked: u64,
    /// Of those, limited although an earlier answer promised spare capacity
    /// that rlbench's requests could not have used up.
    pub contradicted: u64,
    /// Limited answers that themselves said `remaining > 0`.
    pub limited_with_remaining: u64,
    /// Answers whose `remaining` exceeded their own advertised limit.
    pub above_limit: u64,
    /// The first contradiction, in words.
    #[serde(default)]
    pub example: Option<String>,
}

/// What a witness proves; summary.json spells it `violation` or
/// `false_reject`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WitnessKind {
    /// Admits beyond what the policy allows.
    Violation,
    /// A reject the policy had room for.
    FalseReject,
}

impl From<crate::verify::Kind> for WitnessKind {
    fn from(kind: crate::verify::Kind) -> Self {
        match kind {
            crate::verify::Kind::Violation => WitnessKind::Violation,
            crate::verify::Kind::FalseReject => WitnessKind::FalseReject,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ArmWitness {
    pub kind: WitnessKind,
    pub key: String,
    /// The rule in words, e.g. `customer-0003: 11 admits, all decided …`.
    pub rule: String,
    /// The span the rule speaks of (s, trace time).
    pub from_s: f64,
    pub to_s: f64,
    /// Admits beyond what the span allows, or a false reject's spare capacity.
    pub excess: u64,
    /// The false reject itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reject: Option<WitnessRequest>,
    /// The admits that prove it (for a false reject: those that may have
    /// counted against it), by send time; at most 64.
    pub requests: Vec<WitnessRequest>,
    /// How many more the proof holds than are listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_requests: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct WitnessRequest {
    pub seq: u64,
    pub replica: u32,
    pub sent_s: f64,
    pub done_s: f64,
    /// `admitted`, `rejected` or `unknown` (an error or a timeout).
    pub outcome: String,
}

/// `[target] metrics`: what the limiter's own counters say it decided
/// during the load, beside what its clients saw (`metrics::held`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct LimiterMetrics {
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admitted: Option<HeldCount>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<HeldCount>,
    /// The least the counts are off from any the trace allows, both added
    /// (0: they agree); `None` when they could not be read.
    pub discrepancy: Option<f64>,
    /// Counter resets seen (a restarted replica's counts start again).
    #[serde(default)]
    pub resets: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The counts so far, every second of the load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<crate::store::records::MetricsSample>,
}

/// One of the limiter's counts held against the trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct HeldCount {
    /// The series selector summed.
    pub selector: String,
    /// What the limiter's series rose by.
    pub limiter: f64,
    /// The requests the trace saw answered that way.
    pub trace: u64,
    /// Requests sent without an admit or a limit for answer: the limiter
    /// may have counted each either way.
    pub undecided: u64,
    /// The distance of `limiter` from `[trace, trace + undecided]`.
    pub off: f64,
}

impl LimiterMetrics {
    /// "admitted 4790 where the trace saw 4812 (off by 22); rejected 188
    /// as seen".
    pub(crate) fn describe(&self) -> String {
        let m = self;
        let one = |word: &str, h: &HeldCount| {
            let undecided = match h.undecided {
                0 => String::new(),
                n => format!(" and {n} undecided"),
            };
            if h.off == 0.0 {
                format!("{word} {} as seen", count_text(h.limiter))
            } else {
                format!(
                    "{word} {} where the trace saw {}{undecided} (off by {})",
                    count_text(h.limiter),
                    h.trace,
                    count_text(h.off)
                )
            }
        };
        let parts: Vec<String> = [("admitted", &m.admitted), ("rejected", &m.rejected)]
            .into_iter()
            .filter_map(|(w, h)| h.as_ref().map(|h| one(w, h)))
            .collect();
        parts.join("; ")
    }
}

/// A count as written: whole when it is whole.
pub(crate) fn count_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.3}")
    }
}
