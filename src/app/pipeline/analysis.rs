//! One arm's figures from its record and events: the verifier's options
//! as the record states them, which keys are judged here (all, a shard's,
//! or none when shards judged them), a trace too large for memory judged
//! from spill shards, and the same trace judged again as sent (`spoof`)
//! and against the lease bound (`redis_batched`).

use crate::analyze::judgments::{Judgments, Shard};
use crate::analyze::{self, spill, witnesses::Picker, ArmFigures, Input, Keys};
use crate::events::EventsError;
use crate::store::folder::RunFolder;
use crate::store::records::ArmRecord;
use crate::verify;
use std::path::Path;

/// The verifier's options for an arm, as its record states them.
pub(crate) fn options(record: &ArmRecord) -> verify::Options {
    verify::Options {
        epoch_offset_us: record.epoch_offset_us,
        epoch_uncertainty_us: record.epoch_uncertainty_us,
        aligned: record.aligned,
        unknown_history: record.unknown_history,
        // Assumed: an earlier run's requests were decided within
        // max_server_time (else one request timeout) of this one's start.
        history_settles_us: record
            .max_server_time_us
            .unwrap_or(record.request_timeout_us),
        lateness_us: record.replenish_lateness_us,
        chunked_refill: record.chunked_refill,
        chunks_on_epoch: record.chunks_on_epoch,
        slack_us: super::slack::Slack::of(record).total_us(),
        count_rejected: record.count_rejected,
        banked_tokens: record.banked_tokens,
        max_server_time_us: record.max_server_time_us,
        one_clock: record.one_clock,
        clock_rate_ppm: record.clock_allowance_ppm(),
    }
}

/// Each load agent's clock uncertainty (µs), by which its requests are
/// widened before they are judged; empty when one machine sent the load.
pub(crate) fn widening(record: &ArmRecord) -> Vec<i64> {
    record
        .agents
        .iter()
        .map(|a| a.uncertainty_us.max(0))
        .collect()
}

/// Which of an arm's keys are judged here: all, a shard's, or none (the
/// shards' judgments, of the policy and of the lease bound, are given).
#[derive(Clone, Copy, Debug)]
pub(crate) enum ArmKeys<'a> {
    All,
    Shard(Shard),
    Judged {
        judgments: &'a Judgments,
        lease: Option<&'a Judgments>,
    },
}

/// One arm's figures from its events and record, with the witnesses
/// `picker` keeps; `keys`: which keys are judged here.
pub(crate) fn analyze_arm(
    folder: &RunFolder,
    record: &ArmRecord,
    picker: Picker,
    keys: ArmKeys<'_>,
) -> Result<ArmFigures, EventsError> {
    // A trace whose requests would not fit in memory: judged from spill
    // traces, a shard at a time.
    let spilled;
    let keys = match keys {
        ArmKeys::All => match spill_shards(folder, record) {
            Some(of) => {
                spilled = judge_spilled(folder, record, of, &picker)?;
                ArmKeys::Judged {
                    judgments: &spilled.0,
                    lease: spilled.1.as_ref(),
                }
            }
            None => ArmKeys::All,
        },
        keys => keys,
    };
    let (judged_here, lease) = match keys {
        ArmKeys::All => (Keys::All, Keys::All),
        ArmKeys::Shard(s) => (Keys::Shard(s), Keys::Shard(s)),
        ArmKeys::Judged { judgments, lease } => (
            Keys::Judged(judgments),
            lease.map_or(Keys::All, Keys::Judged),
        ),
    };
    let path = folder.events(&record.name);
    let (opts, widened, faults) = (options(record), widening(record), fault_windows(record));
    let whole = Input {
        fault_windows: &faults,
        probes: &record.probes,
        keys: judged_here,
        ..input(record, &path, &opts, &widened)
    };
    let mut figures = analyze::trace(&whole, picker)?;
    figures.scheduled = record.scheduled;
    figures.not_sent = record.not_sent;
    if record.spoof.is_some() && matches!(judged_here, Keys::All) {
        // Judged again as the limiter was told: each forged key apart.
        let as_sent = Input {
            per_principal: false,
            ..input(record, &path, &opts, &widened)
        };
        let as_sent = analyze::trace(&as_sent, Picker::new(0))?;
        figures.per_key_sent = as_sent.verdict;
    }
    let decisions = figures.counts.admitted + figures.counts.rejected;
    figures.redis = analyze::redis_cost::cost(&record.redis_nodes, decisions);
    figures.metrics = record.limiter_metrics.as_ref().map(|m| {
        let c = &figures.counts;
        crate::metrics::held::held(
            m,
            crate::metrics::held::Seen {
                admitted: c.admitted,
                rejected: c.rejected,
                undecided: c.sent.saturating_sub(c.admitted + c.rejected),
            },
        )
    });
    if let (Some(bound), Some(reference_api::Policy::FixedWindow { window_us, .. })) =
        (record.lease_bound, &record.policy)
    {
        // The same trace judged against the fixed window leases allow.
        let relaxed = ArmRecord {
            policy: Some(reference_api::Policy::FixedWindow {
                limit: bound,
                window_us: *window_us,
            }),
            witnesses: 0,
            ..record.clone()
        };
        let against = Input {
            keys: lease,
            ..input(&relaxed, &path, &opts, &widened)
        };
        let against = analyze::trace(&against, Picker::new(0))?;
        figures.lease_bound = Some(crate::store::summary::LeaseBound {
            limit_per_window: bound,
            definite_violations: against.verdict.map_or(0, |v| v.definite_violations),
        });
        figures.lease_judgments = Some(against.judgments);
    }
    Ok(figures)
}

/// How many spill shards an arm's trace needs to be judged within the
/// memory the analysis may take (`analyze::spill`), if more than one.
pub(crate) fn spill_shards(folder: &RunFolder, record: &ArmRecord) -> Option<u32> {
    let path = folder.events(&record.name);
    // Binary traces only (a CSV trace predates them, and is small).
    if path.extension().map_or(true, |x| x != "trace") {
        return None;
    }
    // Its event count as sealed, else about 50 bytes an event.
    let events = record
        .trace
        .map(|s| s.events)
        .unwrap_or_else(|| std::fs::metadata(&path).map_or(0, |m| m.len() / 50));
    let of = spill::shards_for(events, spill::budget());
    (of > 1).then_some(of)
}

/// The arm's keys judged from `of` spill traces, one at a time, keeping
/// the witnesses `picker` would: their judgments, of the policy and of the
/// lease bound, added up.
fn judge_spilled(
    folder: &RunFolder,
    record: &ArmRecord,
    of: u32,
    picker: &Picker,
) -> Result<(Judgments, Option<Judgments>), EventsError> {
    let spilled = spill::split(&folder.events(&record.name), record.trace_check(), of)?;
    tracing::info!(
        "arm {}: {} requests judged in {of} shards spilled to disk, to fit in memory",
        record.name,
        spilled.events
    );
    let relaxed = lease_policy(record);
    let (mut sum, mut lease) = (
        Judgments::default(),
        relaxed.as_ref().map(|_| Judgments::default()),
    );
    let (opts, widened) = (options(record), widening(record));
    for (file, numbers) in spilled.files.iter().zip(&spilled.numbers) {
        // As the whole trace is judged: the lease bound without phases.
        let judge =
            |policy: Option<&reference_api::Policy>, picker: Picker, faults: &[(i64, i64)]| {
                let spill = Input {
                    check: crate::events::integrity::Check::default(),
                    policy,
                    fault_windows: faults,
                    ..input(record, file, &opts, &widened)
                };
                analyze::trace(&spill, picker).map(|f| {
                    let mut j = f.judgments;
                    // The busiest key by its number in the whole trace (a
                    // principal's number is its file's own: not shown).
                    if record.spoof.is_some() {
                        j.busiest = None;
                    }
                    if let Some(b) = j.busiest.as_mut() {
                        b.number = numbers.get(b.number as usize).copied().unwrap_or(b.number);
                    }
                    j
                })
            };
        let faults = fault_windows(record);
        sum.add(&judge(record.policy.as_ref(), picker.like(), &faults)?);
        if let (Some(policy), Some(l)) = (&relaxed, lease.as_mut()) {
            l.add(&judge(Some(policy), Picker::new(0), &[])?);
        }
    }
    Ok((sum, lease))
}

/// The fixed window a `redis_batched` arm's leases allow, if it has one.
fn lease_policy(record: &ArmRecord) -> Option<reference_api::Policy> {
    match (record.lease_bound, &record.policy) {
        (Some(bound), Some(reference_api::Policy::FixedWindow { window_us, .. })) => {
            Some(reference_api::Policy::FixedWindow {
                limit: bound,
                window_us: *window_us,
            })
        }
        _ => None,
    }
}

/// The faults' windows that were applied (µs), for the phases.
fn fault_windows(record: &ArmRecord) -> Vec<(i64, i64)> {
    record
        .faults
        .iter()
        .filter(|f| f.applied)
        .map(|f| (f.from_us as i64, f.to_us as i64))
        .collect()
}

/// What analyzing `record`'s trace at `trace` reads, and judges by: the
/// whole trace, every key, no faults' phases or probes (the callers add
/// what they need).
fn input<'a>(
    record: &'a ArmRecord,
    trace: &'a Path,
    opts: &'a verify::Options,
    widened: &'a [i64],
) -> Input<'a> {
    Input {
        trace,
        check: record.trace_check(),
        policy: record.policy.as_ref(),
        opts,
        replicas: record.replicas,
        agents: widened,
        fault_windows: &[],
        probes: &[],
        keys: Keys::All,
        per_principal: record.spoof.is_some(),
    }
}
