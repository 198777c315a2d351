//! summary.json's view of the limiter itself: what its rate-limit headers
//! said, its own counters held against the trace, and its Redis's work
//! and errors.

use crate::store::probes::Probe;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RedisErrors {
    pub total: u64,
    /// Admitted anyway (`on_redis_error = "fail_open"`).
    pub failed_open: u64,
    /// Rejected (`on_redis_error = "fail_closed"`).
    pub failed_closed: u64,
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
