//! Render: turn the computed figures it is given into files and terminal
//! output. Reads only `store` (summary.json's schema, the run folder) and
//! what the trace recorded; computes nothing (tests/it/house_plan.rs).

pub(crate) mod agents;
pub(crate) mod batching_chart;
pub(crate) mod charts;
pub(crate) mod clock_words;
pub(crate) mod compare;
pub(crate) mod doctor;
pub(crate) mod error;
pub(crate) mod explain;
pub(crate) mod figures;
pub(crate) mod fold;
pub(crate) mod forgotten;
pub(crate) mod goodput;
pub(crate) mod headers;
pub(crate) mod hgrm;
pub(crate) mod html;
pub(crate) mod interactive;
pub(crate) mod junit;
pub(crate) mod keys;
pub(crate) mod metrics;
pub(crate) mod phases;
pub(crate) mod redis_use;
pub(crate) mod remote;
pub(crate) mod setup;
pub(crate) mod slow;
pub(crate) mod spoofing;
pub(crate) mod table;

pub(crate) use error::ReportError;

use crate::store::folder::RunFolder;
use crate::store::summary::{self, Summary};
use hdrhistogram::Histogram;

/// One arm's histograms as written beside summary.json (µs).
pub(crate) struct ArmHistograms<'a> {
    pub latency: &'a Histogram<u64>,
    pub service: &'a Histogram<u64>,
}

/// Writes the files a run folder's views are drawn from: page.json, each
/// arm's `.hgrm` files and the charts. Every file lands whole or not at all
/// (`store::atomic`); the first write that fails stops it, named.
pub(crate) fn write_data(
    folder: &RunFolder,
    summary: &Summary,
    histograms: &[ArmHistograms],
    charts: &[charts::ArmData],
    page: &crate::store::page_json::PageData,
) -> Result<(), ReportError> {
    let json = serde_json::to_vec(page).map_err(|e| ReportError::Json(e.to_string()))?;
    crate::store::atomic::replace(&folder.page(), &json)?;
    for (arm, h) in summary.arms.iter().zip(histograms) {
        for (path, h) in [
            (folder.hgrm(&arm.name, "latency"), h.latency),
            (folder.hgrm(&arm.name, "service"), h.service),
        ] {
            crate::store::atomic::replace(&path, hgrm::percentile_distribution(h).as_bytes())?;
        }
    }
    charts::render_all(&folder.root, charts)?;
    // A stale one from an earlier render of the folder must not be shown.
    if !batching_chart::render(&folder.root, summary)? {
        let _ = std::fs::remove_file(folder.root.join(batching_chart::TRADE.file));
    }
    Ok(())
}

/// Writes what people and CI read: junit.xml, report.html, and
/// summary.json last (a folder with a summary.json is complete). A view
/// that cannot be written is removed rather than left stale; each is
/// tried, and the first failure is returned.
pub(crate) fn write_views(folder: &RunFolder, summary: &Summary) -> Result<(), ReportError> {
    let junit = folder.root.join("junit.xml");
    let html = folder.root.join("report.html");
    let write = |path: &std::path::Path, text: String| {
        crate::store::atomic::replace(path, text.as_bytes()).map_err(ReportError::from)
    };
    [
        junit::render(summary).and_then(|xml| write(&junit, xml)),
        html::render(summary, &folder.root).and_then(|page| write(&html, page)),
        summary::write(&folder.summary(), summary).map_err(ReportError::from),
    ]
    .into_iter()
    .find_map(Result::err)
    .map_or(Ok(()), Err)
}
