//! What a run collected besides its events, written into the run folder
//! (`run.json`, `events/<arm>.json`) so that every report can be rebuilt
//! from the folder alone (`rlbench report RUN_DIR`).

use super::StoreError;
use reference_api::Policy;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Witnesses kept per kind and arm in summary.json unless a scenario says.
pub(crate) const DEFAULT_WITNESSES: usize = 5;

/// How far a run got. `run.json` is written when the run starts, rewritten
/// as each arm starts and ends, and says `finished` once the run folder is
/// complete; a folder still saying `running` after its rlbench is gone is
/// what a kill (or a crash) left.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RunState {
    Running,
    /// Folders written before the state existed were written at the end.
    #[default]
    Finished,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    #[serde(default)]
    pub state: RunState,
    /// The rlbench process writing the folder (while it is `running`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub scenario: String,
    pub started_at: String,
    pub duration_s: f64,
    /// Interrupted, or cut short by an environment failure.
    pub partial: bool,
    /// Why it is partial, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_reason: Option<String>,
    /// The arms that ran, in order (while running: the one under way too).
    pub arms: Vec<String>,
}

/// One load agent of a distributed arm (`rlbench run --agents`), as the
/// controller saw it; the trace's events name it by its index here.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct AgentRecord {
    pub name: String,
    /// The machine it said it runs on.
    pub host: String,
    /// Its share of the schedule: index `segment` of `of`.
    pub segment: usize,
    pub of: usize,
    /// How far its wall clock was behind the coordinator's (µs; negative:
    /// ahead), at its first reading. Shown; nothing is judged by it.
    pub wall_offset_us: i64,
    /// The most any of its times may be off on the run's time line (µs):
    /// the analysis widens each of its requests' `[sent, done]` by it.
    pub uncertainty_us: i64,
    /// Requests of its segment it reached in the schedule.
    pub scheduled: u64,
    /// Events it sent back, as merged into the trace.
    pub events: u64,
    /// Events it said it sent, when it said how its load ended: more than
    /// reached the trace means some were lost on the way, and the trace
    /// cannot be judged as whole (a missing admit makes a reject look false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub said_events: Option<u64>,
    /// When it stopped beating (s from the load's start): its segment's
    /// requests after its last chunk are missing and the run is partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_at_s: Option<f64>,
    /// What it said when it could not do the work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// Lost, its segment's requests due from then on went to another
    /// agent (`scheduled` is then its share before that).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_over: Option<TakenOver>,
    pub interrupted: bool,
    /// Its clock was read against the coordinator's (always but in tests
    /// that show what trusting each machine's own wall clock costs).
    pub clock_estimated: bool,
}

impl AgentRecord {
    /// Why its segment is incomplete, if it is.
    pub(crate) fn incomplete(&self) -> Option<String> {
        let who = format!(
            "agent {} (segment {} of {})",
            self.name, self.segment, self.of
        );
        match (&self.lost_at_s, &self.failed) {
            (Some(at), _) => Some(match &self.taken_over {
                Some(t) => format!(
                    "{who} was lost at {at:.1} s: its requests after its last report are \
                     missing until {:.1} s, when {} took its segment over",
                    t.from_s, t.by
                ),
                None => format!(
                    "{who} was lost at {at:.1} s: its requests after its last report are missing"
                ),
            }),
            (None, Some(why)) => Some(format!("{who} failed: {why}")),
            (None, None) => match self.said_events {
                Some(said) if said != self.events => Some(format!(
                    "{who} sent {said} events, of which {} reached the trace",
                    self.events
                )),
                _ => None,
            },
        }
    }
}

/// Who sent a lost agent's requests from when on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct TakenOver {
    /// The agent that took its segment over.
    pub by: String,
    /// From this trace time on (s).
    pub from_s: f64,
    /// Its segment's requests due from then on.
    pub requests: u64,
}

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

fn not_sent_none(n: &NotSent) -> bool {
    n.total() == 0
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

impl RunRecord {
    /// The rlbench still writing this folder, if it is `running` and its
    /// process lives (not a zombie, not a reused number, not this one).
    pub(crate) fn writer_alive(&self) -> Option<u32> {
        let pid = self.pid.filter(|_| self.state == RunState::Running)?;
        if pid == std::process::id() {
            return None;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // A zombie (killed, not yet reaped) writes nothing more.
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        let program = cmdline.split(|b| *b == 0).next().unwrap_or_default();
        (!zombie && String::from_utf8_lossy(program).contains("rlbench")).then_some(pid)
    }

    /// The arm names it lists, each one a name rlbench writes
    /// (`folder::is_name`): a name that would leave the folder is refused.
    pub(crate) fn checked_arms(&self, path: &Path) -> Result<&[String], StoreError> {
        if let Some(bad) = self.arms.iter().find(|a| !super::names::is_name(a)) {
            return Err(StoreError::ArmName {
                path: path.to_path_buf(),
                name: bad.clone(),
            });
        }
        // An arm listed twice would be judged twice, or hide another.
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = self.arms.iter().find(|a| !seen.insert(a.as_str())) {
            return Err(StoreError::ArmTwice {
                path: path.to_path_buf(),
                name: twice.clone(),
            });
        }
        Ok(&self.arms)
    }
}

/// Reads the arm record of the arm listed as `name`, which must name itself
/// so (a record is never taken for another arm's).
pub(crate) fn read_arm(path: &Path, name: &str) -> Result<ArmRecord, StoreError> {
    let record: ArmRecord = read(path)?;
    if let Err(why) = record.plausible() {
        return Err(StoreError::Implausible {
            path: path.to_path_buf(),
            why,
        });
    }
    if record.name != name {
        return Err(StoreError::OtherArm {
            path: path.to_path_buf(),
            found: record.name,
            listed: name.to_string(),
        });
    }
    Ok(record)
}

/// The most replicas a trace can tell apart (its replica field).
const MAX_REPLICAS: usize = u16::MAX as usize + 1;
/// A day, in µs: no time rlbench records is longer.
const DAY_US: i64 = 86_400_000_000;
/// µs from the Unix epoch to the year 3000, about: no clock reads past it.
const EPOCH_BOUND_US: i64 = 32_503_680_000_000_000;

impl ArmRecord {
    /// Whether every figure that sizes or shifts anything is one a run of
    /// rlbench could have written; why not, in words.
    pub(crate) fn plausible(&self) -> Result<(), String> {
        let within = |what: &str, v: i64, lo: i64, hi: i64| {
            (lo..=hi)
                .contains(&v)
                .then_some(())
                .ok_or_else(|| format!("{what} {v} is outside {lo}..={hi}"))
        };
        if self.replicas > MAX_REPLICAS {
            return Err(format!(
                "replicas {} is more than a trace can tell apart ({MAX_REPLICAS})",
                self.replicas
            ));
        }
        if self.witnesses > 100_000 {
            return Err(format!("witnesses {} is more than 100000", self.witnesses));
        }
        within(
            "epoch_offset_us",
            self.epoch_offset_us,
            -EPOCH_BOUND_US,
            EPOCH_BOUND_US,
        )?;
        within("epoch_uncertainty_us", self.epoch_uncertainty_us, 0, DAY_US)?;
        within(
            "replenish_lateness_us",
            self.replenish_lateness_us,
            0,
            DAY_US,
        )?;
        within("request_timeout_us", self.request_timeout_us, 0, DAY_US)?;
        if let Some(t) = self.max_server_time_us {
            within("max_server_time_us", t, 0, DAY_US)?;
        }
        if let Some(r) = self.clock_resolution_us {
            within("clock_resolution_us", r, 0, DAY_US)?;
        }
        if let Some(m) = self.max_clock_uncertainty_us {
            within("max_clock_uncertainty_us", m, 0, DAY_US)?;
        }
        within(
            "simulated_clock_rate_ppm",
            self.simulated_clock_rate_ppm,
            -1_000_000,
            1_000_000,
        )?;
        if let Some(p) = self.declared_clock_rate_ppm {
            within("declared_clock_rate_ppm", p, 0, 1_000_000)?;
        }
        if self.agents.len() > 256 {
            return Err(format!("{} agents is more than 256", self.agents.len()));
        }
        for a in &self.agents {
            within("an agent's uncertainty_us", a.uncertainty_us, 0, DAY_US)?;
            within(
                "an agent's wall_offset_us",
                a.wall_offset_us,
                -DAY_US * 365,
                DAY_US * 365,
            )?;
            if a.of == 0 || a.of > 256 || a.segment >= a.of {
                return Err(format!("an agent's segment {} of {}", a.segment, a.of));
            }
        }
        if !(self.send_window_s.is_finite()
            && (0.0..=86_400.0 * 365.0).contains(&self.send_window_s))
        {
            return Err(format!("send_window_s {} is no run's", self.send_window_s));
        }
        if !(self.target_rps.is_finite() && self.target_rps >= 0.0) {
            return Err(format!("target_rps {} is no run's", self.target_rps));
        }
        if let Some(p) = &self.policy {
            plausible_policy(p)?;
        }
        Ok(())
    }

    /// What its trace is held to when read.
    pub(crate) fn trace_check(&self) -> crate::events::integrity::Check {
        crate::events::integrity::Check {
            seal: self.trace,
            unfinished: self.unfinished,
        }
    }
}

/// The largest count a scenario's policy may state.
const MAX_POLICY_COUNT: u64 = u32::MAX as u64;
/// The longest window or period a record's policy may have: ten years.
const MAX_POLICY_US: u64 = 10 * 365 * DAY_US as u64;

/// A policy a scenario could have stated: counts from 1 (segments from 1,
/// a capacity or a burst from 0) to `u32::MAX`, windows and periods from
/// 1 µs to ten years — so the verifier's sums cannot overflow or divide by
/// zero on a record read back.
fn plausible_policy(p: &Policy) -> Result<(), String> {
    let count = |what: &str, v: u64, lo: u64| {
        (lo..=MAX_POLICY_COUNT)
            .contains(&v)
            .then_some(())
            .ok_or_else(|| format!("the policy's {what} {v} is outside {lo}..={MAX_POLICY_COUNT}"))
    };
    let span = |what: &str, v: u64| {
        (1..=MAX_POLICY_US)
            .contains(&v)
            .then_some(())
            .ok_or_else(|| format!("the policy's {what} {v} µs is outside 1..={MAX_POLICY_US}"))
    };
    match *p {
        Policy::SlidingLog { limit, window_us }
        | Policy::FixedWindow { limit, window_us }
        | Policy::SlidingCounter { limit, window_us } => {
            count("limit", limit, 1)?;
            span("window", window_us)
        }
        Policy::SlidingWindow {
            limit,
            window_us,
            segments,
        } => {
            count("limit", limit, 1)?;
            count("segments", segments, 1)?;
            span("window", window_us)
        }
        Policy::TokenBucket { capacity, refill } => {
            count("capacity", capacity, 0)?;
            count("refill count", refill.count, 1)?;
            span("refill period", refill.per_us)
        }
        Policy::Gcra { rate, burst } => {
            count("burst", burst, 0)?;
            count("rate count", rate.count, 1)?;
            span("rate period", rate.per_us)
        }
    }
}

fn default_witnesses() -> usize {
    DEFAULT_WITNESSES
}

/// Writes a record whole (`atomic`): a reader sees the old one or the new.
pub(crate) fn write<T: Serialize>(path: &Path, value: &T) -> Result<(), StoreError> {
    let json = serde_json::to_string_pretty(value).map_err(|source| StoreError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    super::atomic::write(path, (json + "\n").as_bytes())
}

pub(crate) fn read<T: DeserializeOwned>(path: &Path) -> Result<T, StoreError> {
    let text =
        crate::files::read_to_string(path, crate::files::RECORD_BYTES).map_err(|source| {
            StoreError::Read {
                path: path.to_path_buf(),
                source,
            }
        })?;
    serde_json::from_str(&text).map_err(|source| StoreError::Json {
        path: path.to_path_buf(),
        source,
    })
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

#[cfg(test)]
mod tests {
    use super::AgentRecord;

    fn agent() -> AgentRecord {
        AgentRecord {
            name: "a1".into(),
            host: "h".into(),
            segment: 1,
            of: 3,
            wall_offset_us: 0,
            uncertainty_us: 100,
            scheduled: 400,
            events: 400,
            said_events: Some(400),
            lost_at_s: None,
            failed: None,
            taken_over: None,
            interrupted: false,
            clock_estimated: true,
        }
    }

    #[test]
    fn an_agent_is_incomplete_when_lost_failed_or_short_of_what_it_sent() {
        assert_eq!(agent().incomplete(), None);
        // An agent that never said how it ended is judged by the rest.
        let silent = AgentRecord {
            said_events: None,
            ..agent()
        };
        assert_eq!(silent.incomplete(), None);
        let short = AgentRecord {
            events: 399,
            ..agent()
        };
        assert_eq!(
            short.incomplete().unwrap(),
            "agent a1 (segment 1 of 3) sent 400 events, of which 399 reached the trace"
        );
        let lost = AgentRecord {
            lost_at_s: Some(2.5),
            ..short.clone()
        };
        assert!(lost.incomplete().unwrap().contains("was lost at 2.5 s"));
        let taken = AgentRecord {
            taken_over: Some(super::TakenOver {
                by: "a2".into(),
                from_s: 3.0,
                requests: 50,
            }),
            ..lost.clone()
        };
        assert!(
            taken
                .incomplete()
                .unwrap()
                .ends_with("missing until 3.0 s, when a2 took its segment over"),
            "{:?}",
            taken.incomplete()
        );
        let failed = AgentRecord {
            failed: Some("no start".into()),
            ..agent()
        };
        assert_eq!(
            failed.incomplete().unwrap(),
            "agent a1 (segment 1 of 3) failed: no start"
        );
    }
}
