//! Where compare's HTML page goes and what it is drawn from: the path
//! (`--html`, default `reports/compare.html` under the current directory,
//! where `run` puts its folders; never into a run folder, never over an
//! input), each run's charts read from its folder, and the page written
//! whole or not at all.

use crate::error::Error;
use crate::report::batching_chart::TRADE;
use crate::report::charts::{Chart, CHARTS};
use crate::report::compare::html::{render, ChartPair, Page, Run};
use crate::report::compare::Comparison;
use crate::store::summary::Summary;
use std::path::{Path, PathBuf};

/// The page's place when `--html` does not name one: beside the run
/// folders `run` makes by default, overwritten by the next compare like
/// `latest` by the next run.
pub(crate) const DEFAULT: &str = "reports/compare.html";

/// Whether `dir` is a run folder (its files are rlbench's to rewrite).
fn is_run_folder(dir: &Path) -> bool {
    dir.join("run.json").is_file() || dir.join("summary.json").is_file()
}

/// The page's path, checked before anything is read or printed: `--html`
/// as a file, or a folder (existing, or written with a trailing `/`) to
/// hold compare.html. A path inside a run folder or onto either input is
/// bad input (exit 2).
pub(crate) fn destination(
    html: Option<&Path>,
    inputs: [&Path; 2],
    force: bool,
) -> Result<PathBuf, Error> {
    let path = match html {
        None => PathBuf::from(DEFAULT),
        Some(p) if p.is_dir() || p.as_os_str().to_string_lossy().ends_with('/') => {
            p.join("compare.html")
        }
        Some(p) => p.to_path_buf(),
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if is_run_folder(&dir) {
        return Err(Error::input(format!(
            "the page {} would be inside the run folder {}, whose files are rlbench's: give --html a path outside it",
            path.display(),
            dir.display()
        )));
    }
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if let Some(input) = inputs.iter().find(|i| same(&path, i)) {
        return Err(Error::input(format!(
            "the page {} would overwrite {}, one of the runs compared: give --html another path",
            path.display(),
            input.display()
        )));
    }
    if let Ok(meta) = std::fs::symlink_metadata(&path) {
        if !meta.file_type().is_file() {
            return Err(Error::input(format!(
                "{} is there and is not a file: give --html another path",
                path.display()
            )));
        }
        if !force && !ours(&path) {
            return Err(Error::input(format!(
                "{} is there and is not a page rlbench wrote: give --html another path, or \
                 --force to overwrite it",
                path.display()
            )));
        }
    }
    Ok(path)
}

/// The folder a side's charts are in: the run folder given, or the one
/// holding the summary.json given; none for a summary file of another
/// name (a kept baseline such as target/baseline.json stands alone).
fn chart_folder(given: &Path) -> Option<&Path> {
    if given.is_dir() {
        Some(given)
    } else if given.file_name().is_some_and(|n| n == "summary.json") {
        given.parent()
    } else {
        None
    }
}

/// A chart's PNG in `folder`; a file that is missing or is no PNG is
/// not shown (the page says so) rather than failing the compare.
fn read_chart(folder: Option<&Path>, chart: &Chart) -> Option<Vec<u8>> {
    let bytes = crate::files::read(&folder?.join(chart.file), crate::files::CHART_BYTES).ok()?;
    bytes.starts_with(b"\x89PNG").then_some(bytes)
}

/// Draws the page of `comparison` and writes it at `path` (its folder
/// made when missing): "cannot write PATH: why", exit 3, when it cannot.
/// Whether the file at `path` is a compare page rlbench wrote: its mark in
/// its first 4 KiB (or, from before the mark, its title).
fn ours(path: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    let read = crate::files::open_regular(path)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .is_ok();
    let head = String::from_utf8_lossy(&head);
    read && (head.contains(&format!(
        "<meta name=\"generator\" content=\"{}\">",
        crate::report::compare::html::GENERATOR
    )) || head.contains("<title>rlbench compare: "))
}

pub(crate) fn write(
    path: &Path,
    inputs: [(&Path, &Summary); 2],
    comparison: &Comparison,
    max_regression: Option<f64>,
) -> Result<(), Error> {
    let [(base_path, baseline), (cand_path, candidate)] = inputs;
    let (base_dir, cand_dir) = (chart_folder(base_path), chart_folder(cand_path));
    let charts: Vec<ChartPair> = CHARTS
        .iter()
        .chain([&TRADE])
        .map(|chart| ChartPair {
            chart,
            baseline: read_chart(base_dir, chart),
            candidate: read_chart(cand_dir, chart),
        })
        // The lease trade is drawn only for runs with leases: absent from
        // both is no news.
        .filter(|c| c.chart.file != TRADE.file || c.baseline.is_some() || c.candidate.is_some())
        .collect();
    let run = |summary, given: &Path, dir: Option<&Path>| Run {
        summary,
        given: given.display().to_string(),
        folder: dir.is_some(),
    };
    let page = render(&Page {
        baseline: run(baseline, base_path, base_dir),
        candidate: run(candidate, cand_path, cand_dir),
        comparison,
        max_regression,
        charts,
    });
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::environment(format!("cannot write {}: {e}", path.display())))?;
    }
    // The store's error names the path: "cannot write PATH: why".
    crate::store::atomic::write(path, page.as_bytes())
        .map_err(|e| Error::environment(e.to_string()))
}

#[cfg(test)]
mod tests;
