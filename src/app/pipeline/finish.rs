//! The finish of a run, shared by `run`, `attack` and `report`: each
//! arm's events analyzed (counts, histograms, the verifier's verdicts),
//! its expectations judged, the summary assembled and handed to the report
//! to render. Reads only the run folder, so a finished folder can be
//! finished again.

use crate::analyze::judgments::{Judgments, Shard};
use crate::analyze::{self, spill, witnesses::Picker, ArmFigures, Keys};
use crate::app::pipeline::summarize;
use crate::error::{io_exit, Error, Exit, Kind};
use crate::events::EventsError;
use crate::gate::{self, Expectation};
use crate::report::{self, charts, ArmHistograms, ReportError};
use crate::store::folder::RunFolder;
use crate::store::records::{ArmRecord, RunRecord};
use crate::store::summary::{Gate, Summary, SCHEMA};
use crate::verify;
use std::collections::BTreeMap;

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
        slack_us: slack_us(record.clock_resolution_us),
        count_rejected: record.count_rejected,
        max_server_time_us: record.max_server_time_us,
        one_clock: record.one_clock,
        clock_rate_ppm: record.clock_allowance_ppm(),
    }
}

/// The verifier's slack: its default (1 ms: a millisecond clock, and
/// replicas on one machine), or the limiter's declared clock resolution
/// when coarser. Only what the record states is believed, and within a day.
fn slack_us(resolution_us: Option<i64>) -> i64 {
    let default = verify::Options::default().slack_us;
    resolution_us.map_or(default, |r| r.clamp(default, 86_400_000_000))
}

/// The agents whose times were placed less surely than the run allows
/// (`[distributed] max_clock_uncertainty`): widening every request by a
/// bound that large makes any verdict milder, so nothing of the arm is
/// proven — a gate failure each, naming the agent.
fn unbounded_clocks(record: &ArmRecord) -> Vec<String> {
    let Some(max) = record.max_clock_uncertainty_us else {
        return Vec::new();
    };
    record
        .agents
        .iter()
        .filter(|a| a.uncertainty_us > max)
        .map(|a| {
            format!(
                "{}: clock uncertainty of {} is {}: nothing can be proven (max_clock_uncertainty \
                 {})",
                record.name,
                a.name,
                humanize_us(a.uncertainty_us),
                humanize_us(max)
            )
        })
        .collect()
}

fn humanize_us(us: i64) -> String {
    match us.unsigned_abs() {
        u if u >= 1_000_000 => format!("{:.1} s", us as f64 / 1e6),
        u if u >= 1_000 => format!("{:.1} ms", us as f64 / 1e3),
        _ => format!("{us} µs"),
    }
}

/// Each load agent's clock uncertainty (µs), by which its requests are
/// widened before they are judged; empty when one machine sent the load.
fn widening(record: &ArmRecord) -> Vec<i64> {
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
    let (mine, lease) = match keys {
        ArmKeys::All => (Keys::All, Keys::All),
        ArmKeys::Shard(s) => (Keys::Shard(s), Keys::Shard(s)),
        ArmKeys::Judged { judgments, lease } => (
            Keys::Judged(judgments),
            lease.map_or(Keys::All, Keys::Judged),
        ),
    };
    let mut figures = analyze::analyze(
        (&folder.events(&record.name), record.trace_check()),
        record.policy.as_ref(),
        &options(record),
        record.replicas,
        &widening(record),
        &fault_windows(record),
        &record.probes,
        picker,
        mine,
        record.spoof.is_some(),
    )?;
    figures.scheduled = record.scheduled;
    figures.not_sent = record.not_sent;
    if record.spoof.is_some() && matches!(mine, Keys::All) {
        // Judged again as the limiter was told: each forged key apart.
        let as_sent = analyze::analyze(
            (&folder.events(&record.name), record.trace_check()),
            record.policy.as_ref(),
            &options(record),
            record.replicas,
            &widening(record),
            &[],
            &[],
            Picker::new(0),
            Keys::All,
            false,
        )?;
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
        let against = analyze::analyze(
            (&folder.events(&relaxed.name), relaxed.trace_check()),
            relaxed.policy.as_ref(),
            &options(&relaxed),
            relaxed.replicas,
            &widening(&relaxed),
            &[],
            &[],
            Picker::new(0),
            lease,
            record.spoof.is_some(),
        )?;
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
fn spill_shards(folder: &RunFolder, record: &ArmRecord) -> Option<u32> {
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
    for (file, numbers) in spilled.files.iter().zip(&spilled.numbers) {
        let check = crate::events::integrity::Check::default();
        // As the whole trace is judged: the lease bound without phases.
        let judge =
            |policy: Option<&reference_api::Policy>, picker: Picker, faults: &[(i64, i64)]| {
                analyze::analyze(
                    (file, check),
                    policy,
                    &options(record),
                    record.replicas,
                    &widening(record),
                    faults,
                    &[],
                    picker,
                    Keys::All,
                    record.spoof.is_some(),
                )
                .map(|f| {
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

/// A run folder finished: its summary, and the first file that could not
/// be written, if one could not (the summary then says partial, and the
/// gate did not pass).
pub(crate) struct Finished {
    pub summary: Summary,
    pub write_error: Option<Error>,
}

/// report/ reads only what is stored (tests/house_plan.rs), so the exit
/// its failures mean is said here, where the views are written: a chart
/// report.html reads back is a file of the run folder (`io_exit`), a file
/// that cannot be written exits as `store` says, and a chart that cannot
/// be drawn or encoded, or junit.xml, is the machine refusing.
impl Kind for ReportError {
    fn exit(&self) -> Exit {
        match self {
            ReportError::Read { source, .. } => io_exit(source),
            ReportError::Store(e) => e.exit(),
            ReportError::Chart(_)
            | ReportError::Encode { .. }
            | ReportError::Junit(_)
            | ReportError::Json(_) => Exit::Environment,
        }
    }
}

/// Analyzes every arm's events, judges its expectations and writes the
/// reports into the folder, summary.json last. `arms` pairs each arm's
/// record with its bounds. An error is a trace that cannot be judged.
pub(crate) fn finish(
    folder: &RunFolder,
    run: &RunRecord,
    arms: &[(ArmRecord, Vec<Expectation>)],
) -> Result<Finished, EventsError> {
    finish_judged(folder, run, arms, &BTreeMap::new())
}

/// Each arm's keys judged in shards, added: the policy's judgments and
/// the lease bound's.
pub(crate) type Judged = BTreeMap<String, (Judgments, Option<Judgments>)>;

/// As [`finish`], with the keys of the arms in `judged` judged already
/// (in shards) rather than here.
pub(crate) fn finish_judged(
    folder: &RunFolder,
    run: &RunRecord,
    arms: &[(ArmRecord, Vec<Expectation>)],
    judged: &Judged,
) -> Result<Finished, EventsError> {
    let keys = |record: &ArmRecord| match judged.get(&record.name) {
        Some((judgments, lease)) => ArmKeys::Judged {
            judgments,
            lease: lease.as_ref(),
        },
        None => ArmKeys::All,
    };
    let mut out = Vec::new();
    let mut failures = Vec::new();
    let mut all_figures = Vec::new();
    for (record, expect) in arms {
        let figures = analyze_arm(folder, record, Picker::new(record.witnesses), keys(record))?;
        let checks = gate::evaluate(expect, &figures);
        failures.extend(
            checks
                .iter()
                .filter(|c| !c.passed)
                .map(|c| format!("{}: {}", record.name, c.describe())),
        );
        failures.extend(unbounded_clocks(record));
        let mut arm = summarize::arm(record, &figures, &checks);
        if !judged.contains_key(&record.name) && spill_shards(folder, record).is_none() {
            arm.policy_fit = policy_fit(folder, record, &figures, &checks)?;
        }
        out.push(arm);
        all_figures.push(figures);
    }
    let mut summary = Summary {
        schema: SCHEMA.to_string(),
        scenario: run.scenario.clone(),
        started_at: run.started_at.clone(),
        duration_s: run.duration_s,
        partial: false,
        partial_reason: None,
        arms: out,
        gate: Gate {
            passed: failures.is_empty(),
            failures,
        },
    };
    // A lost agent's segment is missing its last requests: what was
    // judged is not the run, and it never passes.
    let lost = arms.iter().find_map(|(record, _)| {
        record
            .agents
            .iter()
            .find_map(|a| a.incomplete())
            .map(|why| format!("arm {}: {why}", record.name))
    });
    if let Some(why) = lost {
        partial(&mut summary, &why);
    }
    if run.partial {
        partial(
            &mut summary,
            run.partial_reason.as_deref().unwrap_or("interrupted"),
        );
    }
    let data = {
        let histograms: Vec<ArmHistograms> = all_figures
            .iter()
            .map(|f| ArmHistograms {
                latency: &f.histograms.latency,
                service: &f.histograms.service,
            })
            .collect();
        let chart_data: Vec<charts::ArmData> = summary
            .arms
            .iter()
            .zip(&all_figures)
            .map(|(arm, figures)| chart(&arm.name, figures, arm.correctness.as_ref()))
            .collect();
        let page = crate::store::page::PageData {
            arms: summary
                .arms
                .iter()
                .zip(&all_figures)
                .map(|(arm, figures)| page(arm, figures))
                .collect(),
        };
        report::write_data(folder, &summary, &histograms, &chart_data, &page)
    };
    let mut write_error = data.err().map(Error::from);
    if let Some(e) = &write_error {
        partial(&mut summary, &format!("the run folder is incomplete: {e}"));
    }
    if let Err(e) = report::write_views(folder, &summary) {
        if write_error.is_none() {
            // Drawn again as partial, so that no view says it passed.
            partial(&mut summary, &format!("the run folder is incomplete: {e}"));
            let _ = report::write_views(folder, &summary);
            write_error = Some(e.into());
        }
    }
    Ok(Finished {
        summary,
        write_error,
    })
}

/// For an arm expected to be correct (an upper bound on its definite
/// violations, false rejects or over-admission) that failed one, judged
/// against its declared policy: another policy its decisions fit, if any
/// (`analyze::refit`). Not for spoofed keys, whose verdicts are per
/// principal by design.
pub(crate) fn policy_fit(
    folder: &RunFolder,
    record: &ArmRecord,
    figures: &ArmFigures,
    checks: &[gate::Check],
) -> Result<Option<crate::store::summary::PolicyFit>, EventsError> {
    let expected_correct_failed = checks.iter().any(|c| {
        !c.passed
            && c.expectation.bound == gate::Bound::AtMost
            && matches!(
                c.expectation.figure,
                gate::Figure::DefiniteViolations
                    | gate::Figure::FalseRejectRatio
                    | gate::Figure::OverAdmissionRatio
            )
    });
    let proven_wrong = figures
        .verdict
        .as_ref()
        .is_some_and(|v| v.definite_violations > 0 || v.false_rejects > 0);
    let (Some(declared), true, true, None) = (
        record.policy.as_ref(),
        expected_correct_failed,
        proven_wrong,
        record.spoof.as_ref(),
    ) else {
        return Ok(None);
    };
    analyze::refit::refit(
        (&folder.events(&record.name), record.trace_check()),
        declared,
        &options(record),
        &widening(record),
    )
}

/// Marks the summary partial (the first reason stays) and its gate failed:
/// a partial run never passes.
fn partial(summary: &mut Summary, why: &str) {
    if !summary.partial {
        summary.partial = true;
        summary.partial_reason = Some(why.to_string());
    }
    summary.gate.passed = false;
}

/// What the page draws of one arm over time and per key.
fn page(
    arm: &crate::store::summary::ArmSummary,
    figures: &ArmFigures,
) -> crate::store::page::ArmPage {
    crate::store::page::ArmPage {
        name: arm.name.clone(),
        series: figures.series.clone(),
        window: figures.window.clone(),
        faults: arm
            .faults
            .iter()
            .filter(|f| f.applied)
            .map(|f| crate::store::page::FaultSpan {
                name: f.fault.clone(),
                from_s: f.from_s,
                to_s: f.to_s,
            })
            .collect(),
        keys: figures.keys.clone(),
        metrics: arm
            .limiter_metrics
            .as_ref()
            .map(|m| m.samples.clone())
            .unwrap_or_default(),
    }
}

/// What the charts draw of one arm.
fn chart<'a>(
    name: &'a str,
    figures: &'a ArmFigures,
    correctness: Option<&crate::store::summary::Correctness>,
) -> charts::ArmData<'a> {
    charts::ArmData {
        name,
        timeline: figures.window.as_ref().map_or_else(Vec::new, |w| {
            w.t.iter()
                .zip(&w.admitted)
                .map(|(&t, &n)| (t, n as f64 / w.limit.max(1) as f64))
                .collect()
        }),
        band: figures
            .window
            .as_ref()
            .map(|w| w.most as f64 / w.limit.max(1) as f64),
        fault_windows: figures
            .phases
            .iter()
            .filter(|p| p.name.starts_with("during "))
            .filter_map(|p| Some((p.from_us? as f64 / 1e6, p.to_us? as f64 / 1e6)))
            .collect(),
        latency: &figures.histograms.latency,
        per_replica: figures
            .per_replica
            .iter()
            .map(|c| (c.admitted, c.rejected))
            .collect(),
        over_admission: correctness.and_then(|c| c.over_admission_ratio),
    }
}

#[cfg(test)]
mod tests {
    use super::slack_us;

    /// The slack is 1 ms, or a declared clock resolution when coarser; a
    /// finer one changes nothing (the 1 ms covers the replicas' offsets
    /// too), and a hand-edited record cannot make it absurd.
    #[test]
    fn a_declared_clock_resolution_widens_the_slack_only() {
        assert_eq!(slack_us(None), 1_000);
        assert_eq!(slack_us(Some(1_000_000)), 1_000_000);
        assert_eq!(slack_us(Some(10)), 1_000);
        assert_eq!(slack_us(Some(-5)), 1_000);
        assert_eq!(slack_us(Some(i64::MAX)), 86_400_000_000);
    }
}
