//! The finish of a run, shared by `run`, `attack` and `report`: each
//! arm's events analyzed (counts, histograms, the verifier's verdicts),
//! its expectations judged, the summary assembled and handed to the report
//! to render. Reads only the run folder, so a finished folder can be
//! finished again.

use crate::analyze::judgments::Judgments;
use crate::analyze::{self, witnesses::Picker, ArmFigures};
use crate::app::pipeline::analysis::{analyze_arm, options, spill_shards, widening, ArmKeys};
use crate::app::pipeline::summarize;
use crate::error::{io_exit, Error, Exit, Kind};
use crate::events::EventsError;
use crate::gate::{self, Expectation};
use crate::report::{self, charts, ArmHistograms, ReportError};
use crate::store::folder::RunFolder;
use crate::store::records::{ArmRecord, RunRecord};
use crate::store::summary::{Gate, Summary, SCHEMA};
use std::collections::BTreeMap;

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

/// A run folder finished: its summary, and the first file that could not
/// be written, if one could not (the summary then says partial, and the
/// gate did not pass).
pub(crate) struct Finished {
    pub summary: Summary,
    pub write_error: Option<Error>,
}

/// report/ reads only what is stored (tests/it/house_plan.rs), so the exit
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
        let mut arm = summarize::arm_summary(record, &figures, &checks);
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
        let page = crate::store::page_json::PageData {
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
) -> crate::store::page_json::ArmPage {
    crate::store::page_json::ArmPage {
        name: arm.name.clone(),
        series: figures.series.clone(),
        window: figures.window.clone(),
        faults: arm
            .faults
            .iter()
            .filter(|f| f.applied)
            .map(|f| crate::store::page_json::FaultSpan {
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
