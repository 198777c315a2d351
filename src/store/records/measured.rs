//! What an arm's load measured beside its trace: requests never sent, the
//! limiter's own counters, the faults applied, Redis's fallbacks and each
//! Redis node's work.

use serde::{Deserialize, Serialize};

/// Requests of the schedule that were never sent, by why. Every request
/// of the schedule is either in the trace or counted here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct NotSent {
    /// The generator was behind: no room for them before the run's end.
    #[serde(default)]
    pub behind: u64,
    /// The load was stopped first (Ctrl-C, a stop, a controller gone).
    #[serde(default)]
    pub stopped: u64,
    /// Their agent was lost or failed.
    #[serde(default)]
    pub lost: u64,
}

impl NotSent {
    pub(crate) fn total(&self) -> u64 {
        self.behind
            .saturating_add(self.stopped)
            .saturating_add(self.lost)
    }

    pub(crate) fn add(&mut self, other: &NotSent) {
        self.behind = self.behind.saturating_add(other.behind);
        self.stopped = self.stopped.saturating_add(other.stopped);
        self.lost = self.lost.saturating_add(other.lost);
    }

    /// Why, in words: "104 generator behind at the run's end, 3 stopped".
    pub(crate) fn why(&self) -> String {
        [
            (
                self.behind,
                "the generator behind (max_in_flight full) at the run's end",
            ),
            (self.stopped, "the load stopped"),
            (self.lost, "their agent lost"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{n}: {w}"))
        .collect::<Vec<_>>()
        .join(", ")
    }
}

/// The most per-second readings of the limiter's counters a record keeps
/// (a day's).
pub(crate) const MAX_METRICS_SAMPLES: usize = 86_400;

/// `[target] metrics`: what the limiter's own counters rose by over the
/// load, read before it, every second during it and after it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct MetricsRecord {
    /// Where they were read ("the replicas' /metrics", a URL, a
    /// Prometheus server).
    pub source: String,
    pub admitted_selector: Option<String>,
    pub rejected_selector: Option<String>,
    /// What the matching series rose by, in all; `None` when not read.
    pub admitted: Option<f64>,
    pub rejected: Option<f64>,
    /// Series that went down between readings (a counter reset).
    #[serde(default)]
    pub resets: u64,
    /// Why the counts could not be read, if they could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The counts so far, every second of the load (for the chart).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<MetricsSample>,
}

/// What the counters had risen by `t_s` seconds into the load.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct MetricsSample {
    pub t_s: f64,
    pub admitted: Option<f64>,
    pub rejected: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Applied {
    /// In words, e.g. "redis_down (pause)".
    pub fault: String,
    /// From just after it took effect to just after it was undone (a
    /// restarted process ready again), µs from the load's start; for
    /// redis_failover, from the replication link's hold to the promotion.
    pub from_us: u64,
    pub to_us: u64,
    /// False when the arm had nothing to break (a Redis fault on a local arm).
    pub applied: bool,
    /// What went wrong undoing it (e.g. a restart that failed), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Fallbacks {
    /// Admitted without asking Redis (`fail_open`).
    pub failed_open: u64,
    /// Rejected without asking Redis (`fail_closed`).
    pub failed_closed: u64,
}

/// What one Redis node did during an arm's load, from the node's own
/// `INFO` read before the load and after it (the difference), plus what it
/// held at the end.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RedisNodeUse {
    /// `host:port`.
    pub address: String,
    /// Commands clients sent it (`total_commands_processed`, less the
    /// sampling's own), a script call counting once.
    pub commands: u64,
    /// Of those, script calls (EVALSHA and EVAL).
    pub script_calls: u64,
    /// CPU the server spent, user plus system (µs).
    pub cpu_us: u64,
    /// Keys it held at the end (`DBSIZE`: the whole database when the
    /// Redis is not rlbench's own).
    pub keys: u64,
    /// Memory it used at the end (`used_memory`, bytes).
    pub used_memory: u64,
    /// Keys of the arm sampled at the end (`SCAN` on its prefix) and their
    /// `MEMORY USAGE` summed (bytes).
    #[serde(default)]
    pub sampled_keys: u64,
    #[serde(default)]
    pub sampled_bytes: u64,
}
