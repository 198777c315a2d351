//! `events/<arm>.json`: everything an arm's trace is judged with besides
//! its events (policy, clocks, agents, faults, what was not sent).

use super::agent::AgentRecord;
use super::measured::{Applied, Fallbacks, MetricsRecord, NotSent, RedisNodeUse};
use reference_api::Policy;
use serde::{Deserialize, Serialize};

/// Witnesses kept per kind and arm in summary.json unless a scenario says.
pub(crate) const DEFAULT_WITNESSES: usize = 5;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ArmRecord {
    pub name: String,
    pub mode: String,
    pub replicas: usize,
    /// What the trace is judged against; none for an unjudged `attack`.
    #[serde(default)]
    pub policy: Option<Policy>,
    /// The preset the policy was stated as, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Every decision read this machine's wall clock (grid rules apply).
    pub aligned: bool,
    /// Wall-clock µs at the arm's trace time 0.
    pub epoch_offset_us: i64,
    /// How far that mapping may be off.
    #[serde(default)]
    pub epoch_uncertainty_us: i64,
    pub target_rps: f64,
    /// Requests the schedule asked for (0: closed loop, or an older record).
    #[serde(default)]
    pub scheduled: u64,
    /// From the first intended send to the last actual one.
    pub send_window_s: f64,
    pub interrupted: bool,
    /// Redis modes: each replica's decisions taken without Redis.
    pub redis_fallbacks: Option<Vec<Fallbacks>>,
    /// `redis_batched`: the admits any window may hold with leases (the
    /// policy's limit plus one lease's rest per replica, at most the limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_bound: Option<u64>,
    /// Redis modes: each Redis node's work during the load (each master of
    /// a cluster); nodes that could not be read are left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redis_nodes: Vec<RedisNodeUse>,
    /// `[target] metrics`: the limiter's own counts over the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limiter_metrics: Option<MetricsRecord>,
    /// The target may hold rate-limit state from before the trace (rlbench
    /// did not start it): early rejects are not judged.
    #[serde(default)]
    pub unknown_history: bool,
    /// The scenario's `[[faults]]` as they happened in this arm.
    #[serde(default)]
    pub faults: Vec<Applied>,
    /// Retry-After probes sent after the load.
    #[serde(default)]
    pub probes: Vec<crate::store::probes::Probe>,
    /// How late the limiter's windows or refills may run (µs).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replenish_lateness_us: i64,
    /// The token bucket refills in one chunk per period.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub chunked_refill: bool,
    /// Those chunks land on the wall clock's multiples of the period.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub chunks_on_epoch: bool,
    /// The coarsest step of the limiter's clock (µs), when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_resolution_us: Option<i64>,
    /// How far apart the deciders' clocks may be (µs), when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_skew_us: Option<i64>,
    /// Tokens a full bucket may bank and hand over at once.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub banked_tokens: u64,
    /// Requests of the schedule never sent, by why.
    #[serde(default, skip_serializing_if = "not_sent_none")]
    pub not_sent: NotSent,
    /// With load agents: the most an agent's times may be off (µs) before
    /// nothing is judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_clock_uncertainty_us: Option<i64>,
    /// Rejected attempts count against the limit too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub count_rejected: bool,
    /// How long after the client gave up the server may still decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_server_time_us: Option<i64>,
    /// Every decision read one clock inside its atomic step (decisions
    /// reached the limiter in the order of their readings).
    #[serde(default)]
    pub one_clock: bool,
    /// The arm's target URLs off this machine, sent to because the user
    /// allowed it (`--allow-remote-targets`, `[target] allow_remote`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote_targets: Vec<String>,
    /// Every URL an external target's arm sent to, credentials left out
    /// (none for the reference API, whose replicas' ports change each
    /// run): what `compare` holds two runs to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// The keys the load was given (`[load] keys`, or the arm's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys_declared: Option<u32>,
    /// Witnesses kept per kind in summary.json.
    #[serde(default = "default_witnesses")]
    pub witnesses: usize,
    /// How the callers retried limited answers, in words; none: they did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<String>,
    /// The load's per-request timeout (µs): with an unknown history, how
    /// long after the start an earlier run's requests are taken to be
    /// decided, unless `max_server_time` says otherwise.
    #[serde(default)]
    pub request_timeout_us: i64,
    /// This machine's wall clock against the trace's, sampled during the
    /// load (`events::clock`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clock_samples: Vec<crate::events::clock::ClockSample>,
    /// The replicas' clocks gained this on the wall clock (ppm, simulated).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub simulated_clock_rate_ppm: i64,
    /// `[checks] clock_rate_ppm`, when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_clock_rate_ppm: Option<i64>,
    /// The arm's own bounds as written (`key`, value): what `report`
    /// judges again when the folder keeps no scenario (`attack --out`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<(String, f64)>,
    /// The trace as its writer finished it (events, checksum); none when
    /// the writer never finished, or for a folder from before seals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::events::integrity::Seal>,
    /// Written while the load ran (and rewritten every second): the arm
    /// never finished, so its trace holds what reached the disk by then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unfinished: bool,
    /// The load agents that sent the arm's requests, by the index its
    /// events carry; empty when this machine sent them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentRecord>,
    /// The request header that carried each request's key (none: no key
    /// was sent, or a folder from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_header: Option<String>,
    /// Where else the key went (`[load] key`), in words: "the client
    /// address", "the query parameter api_key", ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_in: Option<String>,
    /// `[load] spoof`: the trace's keys are principals' forged ones
    /// (`<principal>~<n>`), judged per principal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spoof: Option<Spoofed>,
    /// The target was a rate-limit service asked over gRPC (`envoy_rls`):
    /// its answers carry no HTTP rate-limit headers to check.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rls: bool,
    /// The requests were read from access logs (`rlbench audit`), not
    /// sent: no headers were seen, no schedule was kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_logs: bool,
}

/// Principals that sent under forged identities.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Spoofed {
    pub principals: u32,
    /// Forged identities each.
    pub forged_keys: u32,
    /// What they forged, in words ("the key", "X-Forwarded-For"); beside
    /// it, what they sent of their own ("a JWT of their own").
    pub forged: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own: Option<String>,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl ArmRecord {
    /// The clock rate (ppm) the verifier allows for: what was measured
    /// during the arm, what its simulated clocks add, the margin, and at
    /// least what is declared.
    pub(crate) fn clock_allowance_ppm(&self) -> i64 {
        use crate::events::clock::{allowed_ppm, measured_ppm};
        allowed_ppm(
            measured_ppm(&self.clock_samples),
            self.simulated_clock_rate_ppm,
            self.declared_clock_rate_ppm,
        )
    }
}

fn not_sent_none(n: &NotSent) -> bool {
    n.total() == 0
}

fn default_witnesses() -> usize {
    DEFAULT_WITNESSES
}

impl ArmRecord {
    /// What its trace is held to when read.
    pub(crate) fn trace_check(&self) -> crate::events::integrity::Check {
        crate::events::integrity::Check {
            seal: self.trace,
            unfinished: self.unfinished,
        }
    }
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}
