//! Render: turn the computed figures it is given into files and terminal
//! output. Reads only `store` (summary.json's schema, the run folder) and
//! what the trace recorded; computes nothing (tests/house_plan.rs).

pub mod charts;
pub mod clock;
pub mod compare;
pub mod doctor;
pub mod explain;
pub mod figures;
pub mod goodput;
pub mod headers;
pub mod hgrm;
pub mod html;
pub mod junit;
pub mod phases;
pub mod redis_use;
pub mod table;
pub mod trade;

use crate::store::folder::RunFolder;
use crate::store::summary::{self, Summary};
use hdrhistogram::Histogram;

/// One arm's histograms as written beside summary.json (µs).
pub struct ArmHistograms<'a> {
    pub latency: &'a Histogram<u64>,
    pub service: &'a Histogram<u64>,
}

/// Writes every report file of a run folder: each arm's `.hgrm` files,
/// the charts, summary.json, report.html and junit.xml.
pub fn write_all(
    folder: &RunFolder,
    summary: &Summary,
    histograms: &[ArmHistograms],
    charts: &[charts::ArmData],
) -> Result<(), String> {
    for (arm, h) in summary.arms.iter().zip(histograms) {
        for (path, h) in [
            (folder.hgrm(&arm.name, "latency"), h.latency),
            (folder.hgrm(&arm.name, "service"), h.service),
        ] {
            std::fs::write(&path, hgrm::percentile_distribution(h))
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
    }
    charts::render_all(&folder.root, charts)?;
    // A stale one from an earlier render of the folder must not be shown.
    if !trade::render(&folder.root, summary)? {
        let _ = std::fs::remove_file(folder.root.join(trade::TRADE.file));
    }
    summary::write(&folder.summary(), summary)?;
    let html = folder.root.join("report.html");
    std::fs::write(&html, html::render(summary, &folder.root)?)
        .map_err(|e| format!("cannot write {}: {e}", html.display()))?;
    let junit = folder.root.join("junit.xml");
    std::fs::write(&junit, junit::render(summary)?)
        .map_err(|e| format!("cannot write {}: {e}", junit.display()))?;
    Ok(())
}
