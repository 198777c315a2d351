//! compare's HTML page: one self-contained file (inline CSS, charts as
//! data URIs, no script, no network requests) with both runs named, each
//! arm's figures side by side with regressions in red and improvements in
//! green (the rows' [`Trend`], judged by `app::compare`), and both runs'
//! charts side by side. Built with maud, which escapes every value.

use super::{show, Comparison, Row, Trend};
use crate::report::charts::Chart;
use crate::report::html::words::verdict;
use crate::store::summary::{ArmSummary, Summary};
use base64::Engine;
use maud::{html, Markup, PreEscaped, DOCTYPE};

/// One side of the comparison as the page names it.
pub(crate) struct Run<'a> {
    pub summary: &'a Summary,
    /// The run folder or summary file, as given on the command line.
    pub given: String,
    /// Whether it was given as a run folder (or its summary.json), where
    /// charts are looked for; a summary file elsewhere has none.
    pub folder: bool,
}

/// One chart, read from each side's folder (`None`: not there).
pub(crate) struct ChartPair {
    pub chart: &'static Chart,
    pub baseline: Option<Vec<u8>>,
    pub candidate: Option<Vec<u8>>,
}

/// What the page draws: the two runs, their comparison, and the bound it
/// was judged against (`None`: no `--max-regression`, any move is marked).
pub(crate) struct Page<'a> {
    pub baseline: Run<'a>,
    pub candidate: Run<'a>,
    pub comparison: &'a Comparison,
    pub max_regression: Option<f64>,
    pub charts: Vec<ChartPair>,
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:2rem auto;max-width:1200px;color:#222;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}h3{margin-bottom:.3rem}
.meta{color:#666}.pair{display:grid;grid-template-columns:1fr 1fr;gap:1rem}.run{border:1px solid #eee;border-radius:6px;padding:.5rem 1rem}
.run h2{margin-top:.2rem;border:0}dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:0}dt{color:#666}dd{margin:0;overflow-wrap:anywhere}
.gate{padding:.6rem 1rem;border-radius:6px;font-weight:600}.pass{background:#e6f4ea;color:#137333}.fail{background:#fce8e6;color:#a50e0e}
table{border-collapse:collapse;width:100%;font-size:.9rem;margin:.5rem 0}th,td{border-bottom:1px solid #eee;padding:.3rem .5rem;text-align:right}th:first-child,td:first-child{text-align:left}
td.worse{background:#fce8e6;color:#a50e0e;font-weight:600}td.better{background:#e6f4ea;color:#137333;font-weight:600}.alone{color:#7a4f01;background:#fef7e0;padding:.3rem .6rem;border-radius:4px}
figure{margin:0}img{width:100%;height:auto;border:1px solid #eee}.missing{color:#7a4f01;border:1px dashed #e0c46c;padding:1rem;text-align:center}";

/// The page's mark: a file without it is not one rlbench wrote, and
/// `compare --html` does not overwrite it.
pub(crate) const GENERATOR: &str = "rlbench compare";

/// A figure's name in words.
fn label(figure: &str) -> &str {
    match figure {
        "admitted" => "admitted",
        "allowed" => "allowed (the most a correct limiter admits)",
        "over_admission_ratio" => "over-admission ratio",
        "definite_violations" => "definite violations",
        "false_reject_ratio" => "false-reject ratio",
        "p50_ms" => "p50 latency (ms)",
        "p99_ms" => "p99 latency (ms)",
        "achieved_rps" => "achieved rps",
        other => other,
    }
}

/// What the colours mean, and whether compare fails on red.
fn legend(p: &Page) -> Markup {
    let mut gated: Vec<&str> = Vec::new();
    for r in p.comparison.rows.iter().filter(|r| r.gated) {
        if !gated.contains(&label(r.figure)) {
            gated.push(label(r.figure));
        }
    }
    let gated = gated.join(", ");
    html! {
        @if !p.comparison.differences.is_empty() {
            div.gate.fail #differences {
                "Not comparable: the runs differ in what they ran, so their figures are not like for like."
                ul { @for d in &p.comparison.differences { li { (d) } } }
            }
        }
        @match p.max_regression {
            Some(max) => {
                @if p.comparison.regressions.is_empty() {
                    p.gate.pass #verdict { "No regression beyond " (percent(max)) " (--max-regression): compare passes." }
                } @else {
                    div.gate.fail #verdict {
                        "Regressions beyond " (percent(max)) " (--max-regression): compare fails."
                        ul { @for r in &p.comparison.regressions { li { (r) } } }
                    }
                }
                p.meta { "Red: worse by more than " (percent(max)) "; green: better by more than " (percent(max)) ". Judged: " (gated) "." }
            }
            None => {
                @if p.comparison.regressions.is_empty() {
                    p.gate.pass #verdict { "Nothing got worse that is not noise: compare passes." }
                } @else {
                    div.gate.fail #verdict {
                        "Worse where it is not noise: compare fails."
                        ul { @for r in &p.comparison.regressions { li { (r) } } }
                    }
                }
                p.meta {
                    "No --max-regression given: red marks " (gated)
                    " leaving what a correct limiter scores, green coming back to it; latency is shown, not judged."
                }
            },
        }
    }
}

fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// One run's header: what it ran, when, from where, and its own gate.
fn header(title: &str, r: &Run) -> Markup {
    let s = r.summary;
    html! {
        div.run {
            h2 { (title) }
            dl {
                dt { "scenario" } dd { (s.scenario) }
                dt { "started" } dd { (s.started_at) }
                dt { "duration" } dd { (s.duration_s) " s per arm" }
                dt { @if r.folder { "folder" } @else { "file" } } dd { code { (r.given) } }
                dt { "arms" } dd { (s.arms.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")) }
                dt { "gate" } dd {
                    @if s.partial { "partial: the run did not complete" }
                    @else if s.gate.passed { "every expectation met" }
                    @else { (s.gate.failures.len()) " expectation(s) failed" }
                }
            }
        }
    }
}

fn cell(row: &Row) -> Markup {
    let change = row
        .change()
        .map_or("–".to_string(), |ch| format!("{:+.1}%", ch * 100.0));
    let class = match row.trend {
        Trend::Worse => "change worse",
        Trend::Better => "change better",
        Trend::Even => "change",
    };
    html! { td class=(class) { (change) } }
}

/// One arm: said plainly when only one run has it, both verdicts side by
/// side, then each figure for A, B and the change.
fn arm<'a>(p: &Page<'a>, name: &str, rows: &[&Row]) -> Markup {
    let find = |s: &'a Summary| s.arms.iter().find(|a| a.name == name);
    let (b, c) = (find(p.baseline.summary), find(p.candidate.summary));
    let said = |a: Option<&ArmSummary>, other: &str| match a {
        Some(a) => verdict(a),
        None => format!("no arm {name} in this run: only {other} has it"),
    };
    html! {
        section.arm {
            h3 { (name) }
            @match (b, c) {
                (Some(_), None) => p.alone { "Only in A (baseline): the candidate has no arm “" (name) "”." },
                (None, Some(_)) => p.alone { "Only in B (candidate): new since the baseline, nothing to compare it with." },
                _ => {},
            }
            div.pair {
                p.verdict { b { "A " } (said(b, "B")) }
                p.verdict { b { "B " } (said(c, "A")) }
            }
            table {
                tr { th { "figure" } th { "A" } th { "B" } th { "change" } }
                @for r in rows {
                    tr {
                        td { (label(r.figure)) }
                        td { (show(r.baseline)) }
                        td { (show(r.candidate)) }
                        (cell(r))
                    }
                }
            }
        }
    }
}

fn image(bytes: &[u8], title: &str) -> Markup {
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    html! { img alt=(title) title=(title) src=(format!("data:image/png;base64,{data}")); }
}

/// One side of a chart row: the picture, or why there is none.
fn figure(chart: &Chart, bytes: Option<&[u8]>, run: &Run) -> Markup {
    html! {
        figure {
            @match bytes {
                Some(bytes) => (image(bytes, chart.title)),
                None if run.folder => div.missing { "not in this run's folder (" (chart.file) ")" },
                None => div.missing { "given as a summary file: no charts" },
            }
        }
    }
}

fn charts(p: &Page) -> Markup {
    html! {
        h2 #charts { "Charts" }
        @if !p.baseline.folder && !p.candidate.folder {
            p.meta { "Both runs were given as summary files, which hold no charts: compare their run folders to see them side by side." }
        } @else {
            @for c in &p.charts {
                h3 { (c.chart.title) }
                div.pair {
                    (figure(c.chart, c.baseline.as_deref(), &p.baseline))
                    (figure(c.chart, c.candidate.as_deref(), &p.candidate))
                }
            }
        }
    }
}

/// The whole page.
pub(crate) fn render(p: &Page) -> String {
    let mut arms: Vec<(&str, Vec<&Row>)> = Vec::new();
    for r in &p.comparison.rows {
        match arms.iter_mut().find(|(name, _)| *name == r.arm) {
            Some((_, rows)) => rows.push(r),
            None => arms.push((&r.arm, vec![r])),
        }
    }
    let title = format!(
        "rlbench compare: {} vs {}",
        p.baseline.summary.scenario, p.candidate.summary.scenario
    );
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                // What `compare --html` looks for before it overwrites a file.
                meta name="generator" content=(GENERATOR);
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                h1 { (title) }
                div.pair.runs {
                    (header("A — baseline", &p.baseline))
                    (header("B — candidate", &p.candidate))
                }
                (legend(p))
                h2 #figures { "Figures" }
                @for (name, rows) in &arms {
                    (arm(p, name, rows))
                }
                (charts(p))
                p.meta { "Change is B against A. Definite violations are admits beyond the policy that no timing can explain; latency is measured from each request's intended send time. Each run's own report.html has the rest." }
            }
        }
    };
    page.into_string()
}

#[cfg(test)]
mod tests;
