//! The compute stage: one pass over an arm's events gives the counts,
//! HDR latency histograms, per-replica figures and the per-key traces the
//! verifier judges. Reads only the events file, so a run folder can be
//! re-analyzed later.

mod figures;
pub(crate) mod fit;
mod judge;
pub(crate) mod judgments;
mod keyed;
pub(crate) mod phases;
pub(crate) mod predict;
pub(crate) mod redis_cost;
pub(crate) mod refit;
pub(crate) mod series;
pub(crate) mod spill;
pub(crate) mod stats;
mod tally;
mod views;
mod window;
pub(crate) mod witnesses;

pub(crate) use crate::analyze::figures::{ArmFigures, Keys};
use crate::analyze::judge::Judge;
use crate::analyze::keyed::Keyed;
pub(crate) use crate::analyze::stats::{Counts, Histograms, Percentiles};
use crate::analyze::tally::Tally;
use crate::analyze::witnesses::Picker;
use crate::events::integrity::Check;
use crate::events::read::Record;
use crate::events::{self, EventsError};
use crate::verify;
use reference_api::Policy;
use std::path::Path;

/// What one analysis reads, and what it judges by.
pub(crate) struct Input<'a> {
    /// The events' file, and what it is held to (`events::integrity`).
    pub trace: &'a Path,
    pub check: Check,
    /// `None`: no policy to judge against.
    pub policy: Option<&'a Policy>,
    pub opts: &'a verify::Options,
    pub replicas: usize,
    /// Each load agent's clock uncertainty (µs), by which its requests'
    /// intervals are widened before they are judged (empty on one machine).
    pub agents: &'a [i64],
    /// The applied faults' spans: the phases are cut by them.
    pub fault_windows: &'a [(i64, i64)],
    pub probes: &'a [crate::store::probes::Probe],
    /// Which keys are judged here.
    pub keys: Keys<'a>,
    /// A principal's forged keys judged as one (`[load] spoof`).
    pub per_principal: bool,
}

/// One pass over the trace: a per-event tally, the judged keys' traces
/// kept, each key judged, the judgments merged, the figures assembled;
/// `picker` keeps the witnesses.
pub(crate) fn trace(input: &Input<'_>, mut picker: Picker) -> Result<ArmFigures, EventsError> {
    let (policy, opts, keys) = (input.policy, input.opts, input.keys);
    let started = std::time::Instant::now();
    let mut tally = Tally::new(input.replicas, input.agents.len(), input.fault_windows);
    let keyed = read(input, &mut tally)?;
    let read = started.elapsed();
    let spans = tally.phases.spans().to_vec();
    let judge = Judge {
        policy,
        opts,
        spans: &spans,
    };
    let mine = judge.judge(&keyed, &mut picker);
    tracing::debug!(
        "{}: read in {:.2} s, {} keys judged in {:.2} s",
        input.trace.display(),
        read.as_secs_f64(),
        mine.keys,
        (started.elapsed() - read).as_secs_f64()
    );
    // Keys judged elsewhere, in shards: theirs instead.
    let judgments = match keys {
        Keys::Judged(shards) => {
            picker.absorb(shards.earliest.clone(), shards.largest.clone());
            shards.clone()
        }
        _ => mine,
    };
    Ok(assemble(input, tally, &keyed, judgments, picker))
}

/// Reads the trace: each batch is counted into `tally` while another
/// thread keeps its requests by key (the read's two largest costs, side
/// by side).
fn read(input: &Input<'_>, tally: &mut Tally) -> Result<Keyed, EventsError> {
    let undefined = || EventsError::Damaged {
        path: input.trace.to_path_buf(),
        place: crate::events::Place::Whole,
        flaw: crate::events::Flaw::UndefinedKey,
    };
    let (keys, agents, per_principal) = (input.keys, input.agents, input.per_principal);
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<std::sync::Arc<Vec<Record>>>(2);
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
        for batch in events::read::batches(input.trace, input.check)? {
            let batch = std::sync::Arc::new(batch?);
            // A keeper that stopped (an undefined key) says why when joined.
            let _ = tx.send(std::sync::Arc::clone(&batch));
            for record in batch.iter() {
                match record {
                    Record::Key(_) => tally.key(),
                    Record::Event(key, e) => tally.add(*key as usize, e),
                }
            }
        }
        drop(tx);
        match keeper.join() {
            Ok(kept) => kept.map_err(|_| undefined()),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// The arm's figures from the tally, the kept keys and their judgments.
fn assemble(
    input: &Input<'_>,
    mut tally: Tally,
    keyed: &Keyed,
    judgments: judgments::Judgments,
    picker: Picker,
) -> ArmFigures {
    let policy = input.policy;
    let remaining = verify::Remaining {
        checked: judgments.remaining_checked,
        contradicted: judgments.remaining_contradicted,
        example: judgments.remaining_example.as_ref().map(|(_, e)| e.clone()),
    };
    for &(sent, done) in &judgments.wrong {
        tally.phases.wrong(sent, done);
    }
    let phase_verdicts = judgments.phase_verdicts();
    let verdict = judgments.verdict;
    let histograms = tally.histograms();
    let (statuses, error_statuses) = tally.statuses();
    let per_agent = tally.per_agent();
    let mut first_requests = tally.first_requests();
    // Per principal, the judged names are not the trace's keys.
    if let (Some(p), false) = (policy, input.per_principal) {
        first_requests.stuck = tally
            .stuck(p.quota().1)
            .into_iter()
            .filter_map(|(k, us)| keyed.names.get(k).map(|n| (n.clone(), us)))
            .collect();
    }
    let (phases, recovery_ms) = tally.phases.finish(policy.map(|_| phase_verdicts));
    let window = judgments.busiest.as_ref().and_then(|b| b.window.clone());
    let witnesses = picker.finish();
    let key_views = views::key_views(
        &keyed.names,
        &keyed.traces,
        &keyed.taken,
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
    ArmFigures {
        counts: tally.counts,
        tries: tally.tries,
        latency: Percentiles::of(&histograms.latency),
        service: Percentiles::of(&histograms.service),
        lag: Percentiles::of(&tally.lag),
        per_replica: tally.per_replica,
        errors_by_kind: tally.errors_by_kind,
        statuses,
        error_statuses,
        headers: tally
            .headers
            .finish(policy, remaining, input.probes.to_vec()),
        verdict,
        too_slow: policy.and_then(|p| verify::too_slow(p, input.opts)),
        scheduled: 0,
        not_sent: Default::default(),
        histograms,
        per_replica_histograms: tally.per_replica_histograms,
        window,
        series: tally.series.finish(),
        keys: key_views,
        phases,
        recovery_ms,
        redis: None,
        lease_bound: None,
        witnesses,
        per_agent,
        judgments,
        lease_judgments: None,
        per_key_sent: None,
        metrics: None,
        first_requests,
    }
}
