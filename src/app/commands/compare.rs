//! `rlbench compare BASELINE CANDIDATE`: two runs (run folders or their
//! summary.json) side by side, arm by arm, with deltas. By default it
//! gates only on what is not noise: a figure of correctness that leaves
//! its clean value (a proven over-admit, a false reject, admits past what
//! was allowed), the gate turning from passed to failed, an arm missing.
//! `--max-regression` also fails a rise of those beyond that share, and
//! a p99 latency worse by that share and by more than `--latency-floor`
//! (default 1 ms: sub-millisecond p99s move by more than 100 % between
//! two runs of the same thing). Runs that did not run the same thing
//! (scenario, duration, an arm's rate, policy, URLs, key place or keys,
//! the arms) are not comparable, said before any figure is read as a
//! change; with `--strict` that fails the comparison too.
//! The page drawn from the same comparison: `compare/page_inputs.rs`.

pub(crate) mod page_inputs;

use super::ending::{self, Ending};
use crate::error::{Error, Exit};
use crate::report::compare::{show, Comparison, Row, Trend};
use crate::store::summary::{ArmSummary, Summary, SCHEMA};
use std::path::Path;

/// How a figure's change is judged.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Judge {
    /// Shown beside the others, never gated: context, or noise.
    Shown,
    /// Correctness: worse when it leaves `clean` (what every correct
    /// limiter scores, whatever the timing), and with `--max-regression`
    /// also when it rises by more than that share past `clean`.
    Correctness { clean: f64 },
    /// p99 latency: gated only with `--max-regression`, and only when it
    /// rose by that share and by more than the latency floor.
    Latency,
}

/// The figures compared, in the order shown.
const FIGURES: [(&str, Judge); 8] = [
    ("admitted", Judge::Shown),
    ("allowed", Judge::Shown),
    ("over_admission_ratio", Judge::Correctness { clean: 1.0 }),
    ("definite_violations", Judge::Correctness { clean: 0.0 }),
    ("false_reject_ratio", Judge::Correctness { clean: 0.0 }),
    ("p50_ms", Judge::Shown),
    ("p99_ms", Judge::Latency),
    ("achieved_rps", Judge::Shown),
];

/// What compare holds the candidate to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Bounds {
    /// `--max-regression`: a share (0.1 for 10 %).
    pub max_regression: Option<f64>,
    /// `--latency-floor`: a p99 rise smaller than this (ms) is noise.
    pub latency_floor_ms: f64,
}

fn figure(arm: &ArmSummary, name: &str) -> Option<f64> {
    let c = arm.correctness.as_ref();
    match name {
        "admitted" => Some(arm.requests.admitted as f64),
        "allowed" => Some(c?.allowed_max as f64),
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
/// gated figure is worse as its [`Judge`] says, or when it became
/// unbounded (admits where none were allowed is worse than any bound);
/// better under the same test with the runs swapped.
fn trend(
    row: &Row,
    judge: Judge,
    bounds: Bounds,
    b: Option<&ArmSummary>,
    c: Option<&ArmSummary>,
) -> Trend {
    let worse =
        |from: Option<f64>, to: Option<f64>, to_arm: Option<&ArmSummary>| match (judge, from, to) {
            (Judge::Shown, ..) => false,
            (Judge::Correctness { clean }, Some(from), Some(to)) => {
                let left_clean = from <= clean && to > clean;
                let rose = bounds
                    .max_regression
                    .is_some_and(|max| to > clean && to > from * (1.0 + max));
                left_clean || rose
            }
            (Judge::Correctness { .. }, Some(_), None) => {
                to_arm.is_some_and(|a| a.correctness.is_some())
            }
            (Judge::Latency, Some(from), Some(to)) => bounds
                .max_regression
                .is_some_and(|max| to > from * (1.0 + max) && to - from > bounds.latency_floor_ms),
            _ => false,
        };
    if worse(row.baseline, row.candidate, c) {
        Trend::Worse
    } else if worse(row.candidate, row.baseline, b) {
        Trend::Better
    } else {
        Trend::Even
    }
}

pub(crate) fn compare(baseline: &Summary, candidate: &Summary, bounds: Bounds) -> Comparison {
    let mut names: Vec<&str> = baseline.arms.iter().map(|a| a.name.as_str()).collect();
    for a in &candidate.arms {
        if !names.contains(&a.name.as_str()) {
            names.push(&a.name);
        }
    }
    let mut rows = Vec::new();
    let mut regressions = Vec::new();
    if baseline.gate.passed && !candidate.gate.passed {
        let first = candidate
            .gate
            .failures
            .first()
            .map_or(String::new(), |f| format!(": {f}"));
        regressions.push(format!(
            "the gate passed in the baseline and failed in the candidate{first}"
        ));
    }
    for name in names {
        let b = baseline.arms.iter().find(|a| a.name == name);
        let c = candidate.arms.iter().find(|a| a.name == name);
        if let (Some(_), None) = (b, c) {
            regressions.push(format!(
                "{name}: in the baseline, missing from the candidate"
            ));
        }
        for (fig, judge) in FIGURES {
            let mut row = Row {
                arm: name.to_string(),
                figure: fig,
                baseline: b.and_then(|a| figure(a, fig)),
                candidate: c.and_then(|a| figure(a, fig)),
                gated: match judge {
                    Judge::Shown => false,
                    Judge::Correctness { .. } => true,
                    Judge::Latency => bounds.max_regression.is_some(),
                },
                trend: Trend::Even,
            };
            row.trend = trend(&row, judge, bounds, b, c);
            if row.trend == Trend::Worse {
                regressions.push(format!(
                    "{name}: {fig} {} -> {} ({})",
                    show(row.baseline),
                    show(row.candidate),
                    why_worse(judge, bounds)
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

/// Why a figure judged worse is, in words.
fn why_worse(judge: Judge, bounds: Bounds) -> String {
    let share = bounds
        .max_regression
        .map(|max| format!("more than {:.1}% worse", max * 100.0));
    match judge {
        Judge::Correctness { clean } => {
            let past = if clean == 0.0 {
                "above 0, where a correct limiter scores 0".to_string()
            } else {
                format!("above {clean}, past what a correct limiter may admit")
            };
            share.map_or(past.clone(), |s| format!("{past}; or {s}"))
        }
        Judge::Latency => format!(
            "{} and more than {} ms",
            share.unwrap_or_default(),
            bounds.latency_floor_ms
        ),
        Judge::Shown => String::new(),
    }
}

/// What the runs did not share, each a reason their figures are not
/// comparable: the scenario, the duration, the arms, and each arm's
/// target rate (more than 1% apart), policy, URLs, where the key went
/// and how many keys it had.
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
        out.extend(arm_differences(a, other));
    }
    out
}

/// What one arm did not share with its namesake.
fn arm_differences(a: &ArmSummary, other: &ArmSummary) -> Vec<String> {
    let mut out = Vec::new();
    let name = &a.name;
    let (x, y) = (a.rate.target_rps, other.rate.target_rps);
    if (x - y).abs() > 0.01 * x.abs().max(y.abs()) {
        out.push(format!(
            "arm {name}'s rates differ: {x:.0} against {y:.0} requests/s"
        ));
    }
    if a.policy != other.policy {
        let said = |p: &Option<reference_api::Policy>| {
            p.as_ref()
                .map_or("none".to_string(), reference_api::Policy::describe)
        };
        out.push(format!(
            "arm {name}'s policies differ: {} against {}",
            said(&a.policy),
            said(&other.policy)
        ));
    } else if a.policy_text != other.policy_text {
        // The same limits, judged otherwise (the clock allowance, rejects
        // counted, a preset's timing).
        out.push(format!(
            "arm {name}'s policies differ: {} against {}",
            a.policy_text, other.policy_text
        ));
    }
    if a.targets != other.targets {
        out.push(format!(
            "arm {name}'s URLs differ: {} against {}",
            listed(&a.targets),
            listed(&other.targets)
        ));
    }
    let place = |s: &ArmSummary| {
        s.keys.as_ref().map(|k| {
            k.key_in
                .clone()
                .or_else(|| k.key_header.clone())
                .unwrap_or_else(|| "no key".to_string())
        })
    };
    if let (Some(p), Some(q)) = (place(a), place(other)) {
        if p != q {
            out.push(format!("arm {name}'s keys go elsewhere: {p} against {q}"));
        }
    }
    if let (Some(k), Some(l)) = (a.keys_declared, other.keys_declared) {
        if k != l {
            out.push(format!("arm {name}'s keys differ: {k} against {l}"));
        }
    }
    out
}

/// URLs shown in a "not comparable" line, at most: a summary read back
/// may list any number.
const URLS_SHOWN: usize = 3;

/// URLs as a list (the first few, and how many more), or "none".
fn listed(urls: &[String]) -> String {
    if urls.is_empty() {
        return "none".to_string();
    }
    let mut shown = urls[..urls.len().min(URLS_SHOWN)].join(", ");
    if urls.len() > URLS_SHOWN {
        shown.push_str(&format!(" and {} more", urls.len() - URLS_SHOWN));
    }
    shown
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
    bounds: Bounds,
    strict: bool,
) -> Result<Compared, Error> {
    let (baseline, candidate) = (read_summary(baseline)?, read_summary(candidate)?);
    let comparison = compare(&baseline, &candidate, bounds);
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
    bounds: Bounds,
    page_at: (Option<&Path>, bool),
    strict: bool,
    format: crate::cli::output::OutputFormat,
    out: &mut dyn std::io::Write,
) -> Result<Ending, Error> {
    let (html, force) = page_at;
    // A page that may not go where asked is refused before any output.
    let at = page_inputs::destination(html, [baseline, candidate], force)?;
    let compared = run(baseline, candidate, bounds, strict)?;
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
            .map(|d| format!("not comparable: {d}"))
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
    match page_inputs::write(&at, inputs, &compared.comparison, bounds.max_regression) {
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
