//! The compute stage: one pass over an arm's events gives the counts,
//! HDR latency histograms, per-replica figures and the per-key traces the
//! verifier judges. Reads only the events file, so a run folder can be
//! re-analyzed later.

pub(crate) mod fit;
pub(crate) mod judgments;
mod keyed;
pub(crate) mod phases;
pub(crate) mod predict;
pub(crate) mod redis_cost;
pub(crate) mod refit;
pub(crate) mod series;
pub(crate) mod spill;
pub(crate) mod stats;
mod views;
mod window;
pub(crate) mod witnesses;

use crate::analyze::judgments::{Busiest, Judgments, Shard};
use crate::analyze::keyed::{KeyTrace, Keyed};
use crate::analyze::phases::{PhaseFigures, Phases};
use crate::analyze::stats::histogram;
pub(crate) use crate::analyze::stats::{Counts, Histograms, Percentiles, Tries};
use crate::events::read::Record;
use crate::events::{self, ErrorKind, Outcome};
use crate::verify::{self, PhaseVerdict, Verdict, Witness};
use rayon::prelude::*;
use reference_api::Policy;
use std::collections::BTreeMap;
use std::path::Path;

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
    pub window: Option<crate::store::page::WindowSeries>,
    /// Requests over time, by bucket of send time.
    pub series: crate::store::page::Series,
    /// Keys whose requests the page's timeline shows (bounded).
    pub keys: Vec<crate::store::page::KeyView>,
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
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FirstRequests {
    pub keys: u64,
    pub limited: u64,
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

/// Answers counted by status.
struct StatusCounts {
    http: Box<[u64; 600]>,
    other: BTreeMap<u16, u64>,
}

impl Default for StatusCounts {
    fn default() -> Self {
        StatusCounts {
            http: Box::new([0; 600]),
            other: BTreeMap::new(),
        }
    }
}

impl StatusCounts {
    fn add(&mut self, status: u16) {
        match self.http.get_mut(status as usize) {
            Some(n) => *n += 1,
            None => *self.other.entry(status).or_insert(0) += 1,
        }
    }

    fn finish(mut self) -> BTreeMap<u16, u64> {
        for (status, &n) in self.http.iter().enumerate().filter(|(_, n)| **n > 0) {
            self.other.insert(status as u16, n);
        }
        self.other
    }
}

/// One key's verdicts, judged on its own.
struct Judged {
    verdict: Verdict,
    found: Vec<Witness>,
    /// Its false rejects' (sent, done), to cut phases by.
    wrong: Vec<(i64, i64)>,
    /// Its verdict within each phase.
    phases: Vec<PhaseVerdict>,
}

/// `trace`: the events' file, and what it is held to (`events::integrity`).
/// `agents`: each load agent's clock uncertainty (µs), by which its
/// requests' intervals are widened before they are judged (empty on one
/// machine). `keys`: which keys are judged here; `per_principal`: a
/// principal's forged keys as one (`[load] spoof`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn analyze(
    (events_path, check): (&Path, crate::events::integrity::Check),
    policy: Option<&Policy>,
    opts: &verify::Options,
    replicas: usize,
    agents: &[i64],
    fault_windows: &[(i64, i64)],
    probes: &[crate::store::probes::Probe],
    mut picker: crate::analyze::witnesses::Picker,
    keys: Keys<'_>,
    per_principal: bool,
) -> Result<ArmFigures, crate::events::EventsError> {
    let mut headers = crate::headers::checks::Collector::default();
    let mut phases = Phases::new(fault_windows);
    let mut counts = Counts::default();
    let mut tries = Tries::default();
    let mut per_replica = vec![Counts::default(); replicas];
    // Histograms weigh tens of kB: made as replicas answer, not all at once
    // for what a record says (at most a trace's 65,536).
    let mut per_replica_histograms: Vec<Histograms> =
        (0..replicas.min(64)).map(|_| Histograms::new()).collect();
    let mut lag = histogram();
    let mut agent_lags: Vec<hdrhistogram::Histogram<u64>> =
        agents.iter().map(|_| histogram()).collect();
    let mut per_agent: Vec<AgentFigures> = vec![AgentFigures::default(); agents.len()];
    let mut errors_by_kind = BTreeMap::new();
    // By status: HTTP's 100–599 in arrays (a map entry per request costs
    // more than the rest of the count), any other in a map.
    let mut statuses = StatusCounts::default();
    let mut error_statuses = StatusCounts::default();
    // Per key: its first send, and whether that request was limited.
    let mut firsts: Vec<(u64, bool)> = Vec::new();
    let mut series = crate::analyze::series::Collector::default();
    let started = std::time::Instant::now();
    let undefined = || crate::events::EventsError::Damaged {
        path: events_path.to_path_buf(),
        place: crate::events::Place::Whole,
        flaw: crate::events::Flaw::UndefinedKey,
    };
    // Each batch is counted here while another thread keeps its requests
    // by key (the read's two largest costs, side by side).
    let keyed: Keyed = std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<std::sync::Arc<Vec<Record>>>(4);
        let keeper = scope.spawn(move || {
            let mut keyed = if per_principal {
                Keyed::per_principal()
            } else {
                Keyed::default()
            };
            let judged = |name: &str| match keys {
                Keys::All => true,
                Keys::Shard(shard) => shard.holds(name),
                Keys::Judged(_) => false,
            };
            for batch in rx {
                keyed.add(&batch, judged, agents)?;
            }
            Ok::<Keyed, crate::events::Flaw>(keyed)
        });
        for batch in events::read::batches(events_path, check)? {
            let batch = std::sync::Arc::new(batch?);
            // A keeper that stopped (an undefined key) says why when joined.
            let _ = tx.send(std::sync::Arc::clone(&batch));
            for record in batch.iter() {
                let (key, e) = match record {
                    Record::Key(_) => {
                        firsts.push((u64::MAX, false));
                        continue;
                    }
                    Record::Event(key, e) => (*key as usize, e),
                };
                // Each key's first request (by its send): was it limited?
                if let Some(first) = firsts.get_mut(key).filter(|f| e.sent_us < f.0) {
                    *first = (e.sent_us, e.outcome == Outcome::Rejected);
                }
                counts.add(e.outcome);
                tries.add(e);
                if let Some(kind) = e.error {
                    *errors_by_kind.entry(kind).or_insert(0) += 1;
                }
                if e.status != 0 {
                    statuses.add(e.status);
                    if e.outcome == Outcome::Error {
                        error_statuses.add(e.status);
                    }
                }
                let r = e.replica as usize;
                if r >= per_replica.len() {
                    per_replica.resize(r + 1, Counts::default());
                }
                if r >= per_replica_histograms.len() {
                    per_replica_histograms.resize_with(r + 1, Histograms::new);
                }
                per_replica[r].add(e.outcome);
                per_replica_histograms[r].record(e);
                lag.saturating_record(e.lag_us().max(1));
                let a = e.agent as usize;
                if a >= per_agent.len() && !agents.is_empty() {
                    per_agent.resize(a + 1, AgentFigures::default());
                    agent_lags.resize_with(a + 1, histogram);
                }
                if let Some(f) = per_agent.get_mut(a) {
                    f.counts.add(e.outcome);
                    if f.counts.sent == 1 || e.intended_us < f.first_intended_us {
                        f.first_intended_us = e.intended_us;
                    }
                    f.last_sent_us = f.last_sent_us.max(e.sent_us);
                    agent_lags[a].saturating_record(e.lag_us().max(1));
                }
                phases.record(e);
                headers.add(e);
                series.add(e);
            }
        }
        drop(tx);
        match keeper.join() {
            Ok(kept) => kept.map_err(|_| undefined()),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })?;
    let Keyed {
        names,
        traces,
        taken,
        ..
    } = keyed;
    let read = started.elapsed();
    // Keys are judged apart, on every core; their results are taken in key
    // order, so a rebuild picks the same examples and witnesses.
    let mut sorted: Vec<(&String, &KeyTrace)> = names
        .iter()
        .zip(&traces)
        .zip(&taken)
        .filter(|(_, &t)| t)
        .map(|(k, _)| k)
        .collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    let spans = phases.spans().to_vec();
    // One pass per key, on every core: its trace expanded once for the
    // remaining check and the verifier.
    let judged: Vec<(verify::Remaining, Option<Judged>)> = sorted
        .par_iter()
        .map(|(key, trace)| {
            let obs = trace.obs();
            let mut remaining = verify::Remaining::default();
            let witnesses = trace.witnesses();
            if !witnesses.is_empty() {
                verify::remaining_against_admits(
                    key,
                    policy,
                    &obs,
                    &witnesses,
                    opts,
                    &mut remaining,
                );
            }
            let judged = policy.map(|p| {
                let (verdict, found) = verify::judge_key(p, &obs, opts, picker.wanted(key));
                let wrong = if spans.is_empty() {
                    Vec::new()
                } else {
                    verify::false_reject_times(p, &obs, opts)
                };
                let phases = spans
                    .iter()
                    .map(|&(from, to)| verify::verify_phase(p, &obs, opts, from, to))
                    .collect();
                Judged {
                    verdict,
                    found,
                    wrong,
                    phases,
                }
            });
            (remaining, judged)
        })
        .collect();
    tracing::debug!(
        "{}: read in {:.2} s, {} keys judged in {:.2} s",
        events_path.display(),
        read.as_secs_f64(),
        sorted.len(),
        (started.elapsed() - read).as_secs_f64()
    );
    // This judge's keys, added in key order.
    let mut mine = Judgments {
        keys: sorted.len() as u64,
        verdict: policy.map(|_| Verdict::default()),
        phases: vec![(0, 0); if policy.is_some() { spans.len() } else { 0 }],
        ..Judgments::default()
    };
    let mut verdict = policy.map(|_| Verdict::default());
    for ((key, trace), (one, judged)) in sorted.iter().zip(judged) {
        mine.remaining_checked += one.checked;
        mine.remaining_contradicted += one.contradicted;
        if mine.remaining_example.is_none() {
            mine.remaining_example = one.example.map(|e| (key.to_string(), e));
        }
        if let (Some(total), Some(j)) = (verdict.as_mut(), judged) {
            total.merge(&j.verdict);
            if !j.found.is_empty() {
                picker.add(key, &trace.named(&trace.obs()), j.found);
            }
            mine.wrong.extend(j.wrong);
            for (sum, v) in mine.phases.iter_mut().zip(j.phases) {
                sum.0 += v.definite_violations;
                sum.1 += v.false_rejects;
            }
        }
    }
    mine.verdict = verdict;
    (mine.earliest, mine.largest) = picker.kept();
    // The busiest key (the later in the trace of equals) and its timeline.
    if let Some(policy) = policy {
        let busiest = traces
            .iter()
            .enumerate()
            .filter(|&(i, _)| taken[i])
            .max_by_key(|(_, trace)| trace.admitted());
        mine.busiest = busiest.map(|(number, trace)| Busiest {
            admitted: trace.admitted() as u64,
            number: number as u32,
            window: window::series(policy, opts, &names[number], &trace.obs()),
        });
    }
    // Keys judged elsewhere, in shards: theirs instead.
    let judgments = match keys {
        Keys::Judged(shards) => {
            picker.absorb(shards.earliest.clone(), shards.largest.clone());
            shards.clone()
        }
        _ => mine,
    };
    let remaining = verify::Remaining {
        checked: judgments.remaining_checked,
        contradicted: judgments.remaining_contradicted,
        example: judgments.remaining_example.as_ref().map(|(_, e)| e.clone()),
    };
    for &(sent, done) in &judgments.wrong {
        phases.wrong(sent, done);
    }
    let phase_verdicts = judgments.phase_verdicts();
    let verdict = judgments.verdict;
    // The arm's histograms are its replicas' added (exact: same buckets).
    let mut histograms = Histograms::new();
    for h in &per_replica_histograms {
        histograms.add(h);
    }
    let (phases, recovery_ms) = phases.finish(policy.map(|_| phase_verdicts));
    let window = judgments.busiest.as_ref().and_then(|b| b.window.clone());
    let witnesses = picker.finish();
    let key_views = views::key_views(
        &names,
        &traces,
        &taken,
        judgments.busiest.as_ref().map(|b| {
            // Where its admits peaked: its view centres there.
            let peak = b.window.as_ref().and_then(|w| {
                w.t.iter()
                    .zip(&w.admitted)
                    .max_by_key(|(_, n)| **n)
                    .map(|(t, _)| (t * 1e6) as i64)
            });
            (b.number as usize, peak)
        }),
        &witnesses,
    );
    Ok(ArmFigures {
        counts,
        tries,
        latency: Percentiles::of(&histograms.latency),
        service: Percentiles::of(&histograms.service),
        lag: Percentiles::of(&lag),
        per_replica,
        errors_by_kind,
        statuses: statuses.finish(),
        error_statuses: error_statuses.finish(),
        headers: headers.finish(policy, remaining, probes.to_vec()),
        verdict,
        too_slow: policy.and_then(|p| verify::too_slow(p, opts)),
        scheduled: 0,
        not_sent: Default::default(),
        histograms,
        per_replica_histograms,
        window,
        series: series.finish(),
        keys: key_views,
        phases,
        recovery_ms,
        redis: None,
        lease_bound: None,
        witnesses,
        per_agent: per_agent
            .into_iter()
            .zip(&agent_lags)
            .map(|(f, h)| AgentFigures {
                lag: Percentiles::of(h),
                ..f
            })
            .collect(),
        judgments,
        lease_judgments: None,
        per_key_sent: None,
        metrics: None,
        first_requests: FirstRequests {
            keys: firsts.iter().filter(|f| f.0 != u64::MAX).count() as u64,
            limited: firsts.iter().filter(|f| f.1).count() as u64,
        },
    })
}
