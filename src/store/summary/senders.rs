//! summary.json's senders: the keys that sent, principals under forged
//! identities, and each load agent's share.

use serde::{Deserialize, Serialize};

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
    /// Keys refused without a break for over twice the policy's memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck: Option<Stuck>,
}

/// Keys refused without a break for over twice the policy's memory (its
/// window, or the time its bucket takes to fill): a limiter stricter
/// than its policy (a TTL refreshed on every request, refusals counted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Stuck {
    pub keys: u64,
    /// The first few, the longest refused first.
    pub named: Vec<String>,
    /// The longest stretch refused, in seconds.
    pub longest_s: f64,
}

/// How many stuck keys summary.json names.
pub(crate) const STUCK_NAMED: usize = 3;

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
