//! Render: turn computed figures into files and terminal output. `build`
//! is the one path from a run folder (events plus records) to its reports,
//! used at the end of `rlbench run` and by `rlbench report`.

pub mod charts;
pub mod compare;
pub mod doctor;
pub mod explain;
pub mod faults;
pub mod folder;
pub mod headers;
pub mod hgrm;
pub mod html;
pub mod junit;
pub mod summary;
pub mod table;

use crate::analyze;
use crate::gate;
use crate::record::{ArmRecord, RunRecord};
use crate::scenario::Expectation;
use crate::verify;
use folder::RunFolder;
use summary::{Gate, Summary};

/// The verifier's options for an arm, as its record states them.
pub fn options(record: &ArmRecord) -> verify::Options {
    verify::Options {
        epoch_offset_us: record.epoch_offset_us,
        epoch_uncertainty_us: record.epoch_uncertainty_us,
        aligned: record.aligned,
        unknown_history: record.unknown_history,
        lateness_us: record.replenish_lateness_us,
        chunked_refill: record.chunked_refill,
        max_server_time_us: record.max_server_time_us,
        one_clock: record.one_clock,
        ..verify::Options::default()
    }
}

/// One arm's figures from its events and record, with the witnesses
/// `picker` keeps.
pub fn analyze_arm(
    folder: &RunFolder,
    record: &ArmRecord,
    picker: crate::witnesses::Picker,
) -> Result<analyze::ArmFigures, String> {
    analyze::analyze(
        &folder.events(&record.name),
        record.policy.as_ref(),
        &options(record),
        record.replicas,
        &record
            .faults
            .iter()
            .filter(|f| f.applied)
            .map(|f| (f.from_us as i64, f.to_us as i64))
            .collect::<Vec<_>>(),
        &record.probes,
        picker,
    )
}

/// Analyzes every arm's events, judges its expectations and writes the
/// reports into the folder. `arms` pairs each arm's record with its bounds.
pub fn build(
    folder: &RunFolder,
    run: &RunRecord,
    arms: &[(ArmRecord, Vec<Expectation>)],
) -> Result<Summary, String> {
    let mut out = Vec::new();
    let mut failures = Vec::new();
    let mut all_figures = Vec::new();
    for (record, expect) in arms {
        let figures = analyze_arm(
            folder,
            record,
            crate::witnesses::Picker::new(record.witnesses),
        )?;
        let checks = gate::evaluate(expect, &figures);
        for (path, h) in [
            (
                folder.hgrm(&record.name, "latency"),
                &figures.histograms.latency,
            ),
            (
                folder.hgrm(&record.name, "service"),
                &figures.histograms.service,
            ),
        ] {
            std::fs::write(&path, hgrm::percentile_distribution(h))
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        failures.extend(
            checks
                .iter()
                .filter(|c| !c.passed)
                .map(|c| format!("{}: {}", record.name, c.describe())),
        );
        out.push(summary::arm(record, &figures, &checks));
        all_figures.push(figures);
    }
    let chart_data: Vec<charts::ArmData> = out
        .iter()
        .zip(&all_figures)
        .map(|(arm, figures)| charts::ArmData {
            name: &arm.name,
            figures,
            over_admission: arm
                .correctness
                .as_ref()
                .and_then(|c| c.over_admission_ratio),
        })
        .collect();
    charts::render_all(&folder.root, &chart_data)?;
    let summary = Summary {
        schema: summary::SCHEMA.to_string(),
        scenario: run.scenario.clone(),
        started_at: run.started_at.clone(),
        duration_s: run.duration_s,
        partial: run.partial,
        partial_reason: run.partial_reason.clone(),
        arms: out,
        gate: Gate {
            passed: failures.is_empty() && !run.partial,
            failures,
        },
    };
    summary::write(&folder.summary(), &summary)?;
    let html = folder.root.join("report.html");
    std::fs::write(&html, html::render(&summary, &folder.root)?)
        .map_err(|e| format!("cannot write {}: {e}", html.display()))?;
    let junit = folder.root.join("junit.xml");
    std::fs::write(&junit, junit::render(&summary)?)
        .map_err(|e| format!("cannot write {}: {e}", junit.display()))?;
    Ok(summary)
}
