//! `rlbench compare BASELINE CANDIDATE`: two runs (run folders or their
//! summary.json) side by side, arm by arm, with deltas; with
//! `--max-regression`, a candidate fails whose over-admission ratio,
//! definite violations, false-reject ratio or p99 latency grew by more than
//! that share (from 0, any rise), or that lacks an arm of the baseline.
//! Runs that differ in what they ran (scenario, duration, an arm's rate,
//! the arms) are said to differ, before any figure is read as a change;
//! with `--strict` that fails the comparison too.
//! The page drawn from the same comparison: `compare/page_inputs.rs`.

pub(crate) mod page_inputs;

use super::ending::{self, Ending};
use crate::error::{Error, Exit};
use crate::report::compare::{show, Comparison, Row, Trend};
use crate::store::summary::{ArmSummary, Summary, SCHEMA};
use std::path::Path;

/// The figures compared, and whether a rise is a regression under `--max-regression`.
const FIGURES: [(&str, bool); 6] = [
    ("over_admission_ratio", true),
    ("definite_violations", true),
    ("false_reject_ratio", true),
    ("p50_ms", false),
    ("p99_ms", true),
    ("achieved_rps", false),
];

fn figure(arm: &ArmSummary, name: &str) -> Option<f64> {
    let c = arm.correctness.as_ref();
    match name {
        "over_admission_ratio" => c?.over_admission_ratio,
        "definite_violations" => Some(c?.definite_violations as f64),
        "false_reject_ratio" => Some(c?.false_reject_ratio),
        "p50_ms" => Some(arm.latency_ms.p50),
        "p99_ms" => Some(arm.latency_ms.p99),
        "achieved_rps" => Some(arm.rate.achieved_rps),
        _ => None,
    }
}

/// The one notion of regression, for the gate and the page alike: a
/// gated figure is worse when it rose by more than `bound` (a share), or
/// became unbounded (admits where none were allowed is worse than any
/// bound); better under the same test with the runs swapped.
fn trend(row: &Row, bound: f64, b: Option<&ArmSummary>, c: Option<&ArmSummary>) -> Trend {
    let beyond = |from: Option<f64>, to: Option<f64>, to_arm: Option<&ArmSummary>| match (from, to)
    {
        (Some(from), Some(to)) => to > from * (1.0 + bound),
        (Some(_), None) => to_arm.is_some_and(|a| a.correctness.is_some()),
        _ => false,
    };
    if beyond(row.baseline, row.candidate, c) {
        Trend::Worse
    } else if beyond(row.candidate, row.baseline, b) {
        Trend::Better
    } else {
        Trend::Even
    }
}

pub(crate) fn compare(
    baseline: &Summary,
    candidate: &Summary,
    max_regression: Option<f64>,
) -> Comparison {
    let mut names: Vec<&str> = baseline.arms.iter().map(|a| a.name.as_str()).collect();
    for a in &candidate.arms {
        if !names.contains(&a.name.as_str()) {
            names.push(&a.name);
        }
    }
    let mut rows = Vec::new();
    let mut regressions = Vec::new();
    for name in names {
        let b = baseline.arms.iter().find(|a| a.name == name);
        let c = candidate.arms.iter().find(|a| a.name == name);
        if let (Some(_), None, Some(_)) = (b, c, max_regression) {
            regressions.push(format!(
                "{name}: in the baseline, missing from the candidate"
            ));
        }
        for (fig, gated) in FIGURES {
            let mut row = Row {
                arm: name.to_string(),
                figure: fig,
                baseline: b.and_then(|a| figure(a, fig)),
                candidate: c.and_then(|a| figure(a, fig)),
                gated,
                trend: Trend::Even,
            };
            if gated {
                row.trend = trend(&row, max_regression.unwrap_or(0.0), b, c);
            }
            if let (Trend::Worse, Some(max)) = (row.trend, max_regression) {
                regressions.push(format!(
                    "{name}: {fig} {} -> {} (more than {:.1}% worse)",
                    show(row.baseline),
                    show(row.candidate),
                    max * 100.0
                ));
            }
            rows.push(row);
        }
    }
    Comparison {
        rows,
        regressions,
        differences: differences(baseline, candidate),
    }
}

/// What the runs did not share: the scenario, the duration, an arm's
/// target rate (more than 1% apart), the arms themselves.
fn differences(b: &Summary, c: &Summary) -> Vec<String> {
    let mut out = Vec::new();
    if b.scenario != c.scenario {
        out.push(format!(
            "the scenarios differ: {} against {}",
            b.scenario, c.scenario
        ));
    }
    if (b.duration_s - c.duration_s).abs() > 1e-9 {
        out.push(format!(
            "the durations differ: {} s against {} s per arm",
            b.duration_s, c.duration_s
        ));
    }
    let names = |s: &Summary| s.arms.iter().map(|a| a.name.clone()).collect::<Vec<_>>();
    let (bn, cn) = (names(b), names(c));
    let only = |of: &[String], other: &[String]| -> Vec<String> {
        of.iter().filter(|n| !other.contains(n)).cloned().collect()
    };
    let (gone, new) = (only(&bn, &cn), only(&cn, &bn));
    if !gone.is_empty() {
        out.push(format!("only the baseline has arm(s) {}", gone.join(", ")));
    }
    if !new.is_empty() {
        out.push(format!("only the candidate has arm(s) {}", new.join(", ")));
    }
    for a in &b.arms {
        let Some(other) = c.arms.iter().find(|o| o.name == a.name) else {
            continue;
        };
        let (x, y) = (a.rate.target_rps, other.rate.target_rps);
        if (x - y).abs() > 0.01 * x.abs().max(y.abs()) {
            out.push(format!(
                "arm {}'s rates differ: {x:.0} against {y:.0} requests/s",
                a.name
            ));
        }
    }
    out
}

/// A summary.json, or a run folder's.
pub(crate) fn read_summary(path: &Path) -> Result<Summary, Error> {
    let joined;
    let path = if path.is_dir() {
        joined = path.join("summary.json");
        &joined
    } else {
        path
    };
    let text = crate::files::read_to_string(path, crate::files::SUMMARY_BYTES)
        .map_err(|e| Error::input(format!("cannot read {}: {e}", path.display())))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::input(format!("{}: not JSON: {e}", path.display())))?;
    if value["schema"] != SCHEMA {
        return Err(Error::input(format!(
            "{}: expected a summary with \"schema\": \"{SCHEMA}\"",
            path.display()
        )));
    }
    serde_json::from_value(value).map_err(|e| Error::input(format!("{}: {e}", path.display())))
}

/// Two runs read and compared: what compare prints, and what its page
/// draws.
pub(crate) struct Compared {
    pub baseline: Summary,
    pub candidate: Summary,
    pub comparison: Comparison,
    pub exit: Exit,
}

/// `strict`: runs that differ in what they ran fail the comparison.
pub(crate) fn run(
    baseline: &Path,
    candidate: &Path,
    max_regression: Option<f64>,
    strict: bool,
) -> Result<Compared, Error> {
    let (baseline, candidate) = (read_summary(baseline)?, read_summary(candidate)?);
    let comparison = compare(&baseline, &candidate, max_regression);
    let exit =
        if comparison.regressions.is_empty() && (!strict || comparison.differences.is_empty()) {
            Exit::Passed
        } else {
            Exit::GateFailed
        };
    Ok(Compared {
        baseline,
        candidate,
        comparison,
        exit,
    })
}

/// `rlbench compare`: the comparison printed (or as JSON), the page
/// written, regressions and unlike figures on standard error.
pub(super) fn execute(
    baseline: &Path,
    candidate: &Path,
    max_regression: Option<f64>,
    page_at: (Option<&Path>, bool),
    strict: bool,
    format: crate::cli::output::OutputFormat,
    out: &mut dyn std::io::Write,
) -> Result<Ending, Error> {
    let (html, force) = page_at;
    // A page that may not go where asked is refused before any output.
    let at = page_inputs::destination(html, [baseline, candidate], force)?;
    let compared = run(baseline, candidate, max_regression, strict)?;
    ending::emit(
        out,
        format,
        &crate::report::compare::render(&compared.comparison),
        &crate::report::compare::document(&compared.comparison),
    )?;
    let mut ended = Ending {
        exit: compared.exit,
        errors: compared
            .comparison
            .differences
            .iter()
            .map(|d| format!("warning: {d}: the figures are not like for like"))
            .chain(
                compared
                    .comparison
                    .regressions
                    .iter()
                    .map(|r| format!("regression: {r}")),
            )
            .collect(),
        last: None,
    };
    let inputs = [
        (baseline, &compared.baseline),
        (candidate, &compared.candidate),
    ];
    match page_inputs::write(&at, inputs, &compared.comparison, max_regression) {
        Ok(()) => ended.last = Some(ending::page_line(&at)),
        Err(e) => {
            ended.exit = e.exit;
            ended.errors.push(e.message);
        }
    }
    Ok(ended)
}

#[cfg(test)]
mod tests;
