//! What one analysis of an arm gives: its figures (counts, latencies,
//! statuses, the verdict and its witnesses, the page's series and views,
//! per replica and per agent), and which keys it judges.

use crate::analyze::judgments::{Judgments, Shard};
use crate::analyze::phases::PhaseFigures;
use crate::analyze::stats::{Counts, Histograms, Percentiles, Tries};
use crate::events::ErrorKind;
use crate::verify::{self, Verdict};
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
pub(crate) struct ArmFigures {
    pub counts: Counts,
    /// First attempts and retries apart.
    pub tries: Tries,
    /// From the intended send time: what a user of the API waits.
    pub latency: Percentiles,
    /// From the actual send time: what the service took.
    pub service: Percentiles,
    /// How late requests left versus their intended time.
    pub lag: Percentiles,
    /// Indexed by replica.
    pub per_replica: Vec<Counts>,
    /// Requests without an answer, by why (timeouts are counted apart).
    pub errors_by_kind: BTreeMap<ErrorKind, u64>,
    /// Answers by HTTP status.
    pub statuses: BTreeMap<u16, u64>,
    /// Answers that were neither an admit nor a limit, by HTTP status.
    pub error_statuses: BTreeMap<u16, u64>,
    /// What the rate-limit headers said, and how it squares with the trace.
    pub headers: crate::store::summary::HeaderSummary,
    /// `None` when no policy was given to judge against.
    pub verdict: Option<Verdict>,
    /// Where the policy's answers become too slow for its sharp rules.
    pub too_slow: Option<verify::TooSlow>,
    /// The schedule and what of it was never sent (from the arm's record).
    pub scheduled: u64,
    pub not_sent: crate::store::records::NotSent,
    /// The arm's histograms (µs), then each replica's.
    pub histograms: Histograms,
    pub per_replica_histograms: Vec<Histograms>,
    /// The busiest key's admits in a trailing span against the band a
    /// correct limiter may reach, sampled over the run.
    pub window: Option<crate::store::page_json::WindowSeries>,
    /// Requests over time, by bucket of send time.
    pub series: crate::store::page_json::Series,
    /// Keys whose requests the page's timeline shows (bounded).
    pub keys: Vec<crate::store::page_json::KeyView>,
    /// With faults: before / during / after each (empty otherwise).
    pub phases: Vec<PhaseFigures>,
    /// Redis modes: what the decisions cost Redis (filled from the arm's
    /// record, see [`redis_cost::cost`]).
    pub redis: Option<crate::store::summary::RedisUse>,
    /// `redis_batched`: the verifier's verdict against the lease bound
    /// (a fixed window of `limit + min(limit, R·(lease − 1))`), filled by
    /// the finish.
    pub lease_bound: Option<crate::store::summary::LeaseBound>,
    /// Each fault's recovery (ms), `None` when nothing was decided after it.
    pub recovery_ms: Vec<Option<f64>>,
    /// The verdicts' proofs: per kind the earliest and the largest.
    pub witnesses: Vec<crate::store::summary::ArmWitness>,
    /// Per load agent, by the index its events carry (empty on one machine).
    pub per_agent: Vec<AgentFigures>,
    /// The keys that sent requests, and those whose first request was
    /// limited (a fresh key's, which a limiter counting keys apart admits).
    pub first_requests: FirstRequests,
    /// What judging the keys gave, added up (a shard's, for its file),
    /// and against the lease bound (filled by the finish).
    pub judgments: Judgments,
    pub lease_judgments: Option<Judgments>,
    /// `[load] spoof`: the keys judged as sent, not per principal (filled
    /// by the finish).
    pub per_key_sent: Option<Verdict>,
    /// `[target] metrics`: the limiter's own counts held against the
    /// trace's (filled by the finish).
    pub metrics: Option<crate::store::summary::LimiterMetrics>,
}

/// Which keys an analysis judges; every other figure is the whole trace's.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Keys<'a> {
    /// Every key.
    All,
    /// A shard's keys only (`rlbench report --shard i/n`).
    Shard(Shard),
    /// None: they were judged in shards, whose judgments these are.
    Judged(&'a Judgments),
}

/// How the keys' first requests fared.
#[derive(Clone, Debug, Default)]
pub(crate) struct FirstRequests {
    pub keys: u64,
    pub limited: u64,
    /// Keys refused without a break for over twice the policy's memory
    /// (name, µs), the longest first: a correct limiter under any load
    /// admits a key again within that (unless refusals count).
    pub stuck: Vec<(String, u64)>,
}

/// One load agent's share of an arm's requests.
#[derive(Clone, Debug, Default)]
pub(crate) struct AgentFigures {
    pub counts: Counts,
    /// How late it sent against the schedule.
    pub lag: Percentiles,
    /// Its first intended send and last actual send (µs on the run's line).
    pub first_intended_us: u64,
    pub last_sent_us: u64,
}
