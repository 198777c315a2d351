//! `report.html`: one self-contained page (scripts, styles and charts
//! inline, no network requests) with the verdict of each arm in plain
//! words, the interactive views (`report::interactive`: over time, per key),
//! its expectations, the figures, the PNG charts and the witnesses.
//! Markup by maud, which escapes every value it is given.

mod witnesses;
pub(crate) mod words;

use super::charts::CHARTS;
use super::error::ReportError;
use crate::store::summary::{ArmSummary, Summary};
use base64::Engine;
use maud::{html, Markup, PreEscaped, DOCTYPE};
use std::path::Path;
use witnesses::{witnesses, witnesses_of};
use words::{thousands, verdict};

/// One `<li>` per sentence, prefixed with its arm's name.
fn sentences<'a>(s: &'a Summary, of: impl Fn(&'a ArmSummary) -> Vec<String>) -> Markup {
    html! {
        @for a in &s.arms {
            @for sentence in of(a) {
                li { (a.name) ": " (sentence) }
            }
        }
    }
}

/// The banner names what failed: the one expectation, or how many and
/// the first (the table below lists them all).
fn failed(failures: &[String]) -> String {
    match failures {
        [one] => format!("Expectation failed: {one}."),
        [first, rest @ ..] => format!(
            "{} expectations failed: {first}, and {} more (Expectations, below).",
            rest.len() + 1,
            rest.len()
        ),
        [] => "The run did not complete.".to_string(),
    }
}

fn header(s: &Summary) -> Markup {
    let (class, words) = if s.gate.passed {
        match super::table::lines::ungated(s) {
            Some(arm) => ("gate fail", format!("Every expectation met, but {arm}.")),
            None => ("gate pass", "Every expectation met.".to_string()),
        }
    } else if s.gate.failures.is_empty() {
        ("gate fail", "The run did not complete.".to_string())
    } else {
        ("gate fail", failed(&s.gate.failures))
    };
    html! {
        h1 { "rlbench: " (s.scenario) }
        p.meta {
            "started " (s.started_at) " · " (s.duration_s) " s per arm"
            @if s.partial { " · " strong { "partial: the run did not complete" } }
        }
        p class=(class) id="gate" { (words) }
        @for a in &s.arms {
            @if let Some(sentence) = super::remote::sentence(a) {
                p.gate.remote id="remote-targets" { (a.name) ": " (sentence) }
            }
            @if let Some(sentence) = super::keys::sentence(a) {
                p.gate.keys id=(format!("keys-{}", a.name)) { "keys of " (a.name) ": " (sentence) }
            }
            @if let Some(sentence) = super::setup::sentence(a) {
                p.gate.keys id=(format!("setup-{}", a.name)) { "setup of " (a.name) ": " (sentence) }
            }
            @if let Some(sentence) = super::metrics::sentence(a) {
                p.gate.keys id=(format!("metrics-{}", a.name)) { "metrics of " (a.name) ": " (sentence) }
            }
            @if let Some(sentence) = super::spoofing::sentence(a) {
                p.gate.keys id=(format!("spoofing-{}", a.name)) { "spoofing in " (a.name) ": " (sentence) }
            }
            @if let Some(sentence) = super::slow::sentence(a) {
                p.gate.keys id=(format!("slow-{}", a.name)) { "answers of " (a.name) ": " (sentence) }
            }
        }
        @if let Some(sentence) = super::forgotten::sentence(s) {
            p.gate.keys id="keys-across-arms" { "keys across arms: " (sentence) }
        }
        h2 { "Verdicts" }
        ul.verdicts {
            @for (i, a) in s.arms.iter().enumerate() {
                li {
                    (verdict(a))
                    @if !witnesses_of(a).is_empty() {
                        " " a href=(format!("#witnesses-{i}")) { "the proof" }
                    }
                    " " span.meta { "(" (a.policy_text) ")" }
                }
            }
        }
    }
}

fn faults(s: &Summary) -> Markup {
    if s.arms.iter().all(|a| a.faults.is_empty()) {
        return html! {};
    }
    let opt = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.3}"));
    let count = |v: Option<u64>| v.map_or("–".to_string(), thousands);
    html! {
        h2 { "Faults" }
        ul.verdicts { (sentences(s, super::phases::sentences)) }
        table {
            tr { th { "arm" } th { "phase" } th { "from s" } th { "to s" } th { "sent" } th { "admitted" }
                 th { "rejected" } th { "failed" } th { "definite" } th { "false rejects" } th { "p99 ms" } }
            @for a in &s.arms {
                @for p in &a.phases {
                    tr {
                        td { (a.name) } td { (p.name) } td { (opt(p.from_s)) } td { (opt(p.to_s)) }
                        td { (thousands(p.sent)) } td { (thousands(p.admitted)) } td { (thousands(p.rejected)) }
                        td { (thousands(p.errors)) } td { (count(p.definite_violations)) }
                        td { (count(p.false_rejects)) } td { (format!("{:.2}", p.p99_ms)) }
                    }
                }
            }
        }
    }
}

fn redis(s: &Summary) -> Markup {
    if s.arms.iter().all(|a| a.redis.is_none()) {
        return html! {};
    }
    html! {
        h2 id="redis" { "Redis: what each decision cost" }
        table {
            tr { th { "arm" } th { "node" } th { "commands" } th { "share" } th { "script calls" }
                 th { "CPU ms" } th { "keys" } th { "bytes per key" } th { "memory" } }
            @for a in &s.arms {
                @for n in a.redis.iter().flat_map(|r| &r.nodes) {
                    tr {
                        td { (a.name) } td { (n.address) } td { (thousands(n.commands)) }
                        td { (format!("{:.1}%", 100.0 * n.share)) } td { (thousands(n.script_calls)) }
                        td { (format!("{:.1}", n.cpu_ms)) } td { (thousands(n.keys)) }
                        td { (super::redis_use::bytes(n.bytes_per_key)) }
                        td { (super::redis_use::bytes(n.used_memory_bytes)) }
                    }
                }
            }
        }
        ul.verdicts {
            (sentences(s, |a| [super::redis_use::sentence(a), super::redis_use::lease_sentence(a)]
                .into_iter().flatten().collect()))
        }
    }
}

/// Clocks, goodput and the rate-limit headers: a list of sentences each,
/// shown when any arm has something to say.
fn findings(s: &Summary) -> Markup {
    html! {
        @if s.arms.iter().any(|a| a.clock.is_some()) {
            h2 id="clocks" { "Clocks" }
            ul.verdicts { (sentences(s, |a| super::clock_words::sentence(a).into_iter().collect())) }
        }
        @if s.arms.iter().any(|a| a.goodput.is_some()) {
            h2 id="goodput" { "Goodput of retrying callers" }
            ul.verdicts { (sentences(s, |a| super::goodput::sentence(a).into_iter().collect())) }
        }
        @if s.arms.iter().any(|a| a.headers.responses > 0) {
            h2 id="headers" { "Rate-limit headers" }
            ul.verdicts {
                @for a in &s.arms {
                    @for (i, sentence) in super::headers::sentences(a).iter().enumerate() {
                        li class=[(i > 0).then_some("finding")] { (a.name) ": " (sentence) }
                    }
                }
            }
        }
    }
}

fn expectations(s: &Summary) -> Markup {
    html! {
        h2 { "Expectations" }
        table {
            tr { th { "arm" } th { "expectation" } th { "bound" } th { "value" } th { "result" } }
            @for a in &s.arms {
                @for e in &a.expect {
                    tr {
                        td { (a.name) } td { (e.expectation) } td { (e.kind) " " (e.bound) }
                        td { (e.value.map_or("unbounded".to_string(), |v| format!("{v:.3}"))) }
                        @if e.passed { td.ok { "passed" } } @else { td.bad { "FAILED" } }
                    }
                }
            }
        }
    }
}

fn figures(s: &Summary) -> Markup {
    html! {
        h2 { "Figures" }
        table {
            tr { th { "arm" } th { "mode" } th { "replicas" } th { "sent" } th { "admitted" } th { "at most" }
                 th { "over-admission" } th { "peak window" } th { "definite" } th { "possible" }
                 th { "false rejects" } th { "p50 ms" } th { "p99 ms" } th { "achieved rps" } }
            @for a in &s.arms {
                tr {
                    td { (a.name) } td { (a.mode) } td { (a.replicas) }
                    td { (thousands(a.requests.sent)) } td { (thousands(a.requests.admitted)) }
                    @if let Some(c) = &a.correctness {
                        td { (thousands(c.allowed_max)) }
                        td { (c.over_admission_ratio.map_or("∞".to_string(), |r| format!("{r:.2}×"))) }
                        td { (format!("{:.2}", c.peak_window_ratio)) }
                        td { (thousands(c.definite_violations)) } td { (thousands(c.possible_violations)) }
                        td { (thousands(c.false_rejects)) }
                    } @else {
                        @for _ in 0..6 { td { "–" } }
                    }
                    td { (format!("{:.2}", a.latency_ms.p50)) } td { (format!("{:.2}", a.latency_ms.p99)) }
                    td { (format!("{:.0}", a.rate.achieved_rps)) }
                }
            }
        }
    }
}

/// The PNG charts, embedded as data URIs (they stay files for use elsewhere).
fn charts(s: &Summary, dir: &Path) -> Result<Markup, ReportError> {
    // Drawn only for runs with leases: known from the summary itself.
    let trade =
        (!super::batching_chart::points(s).is_empty()).then_some(&super::batching_chart::TRADE);
    let mut images = Vec::new();
    for chart in CHARTS.iter().chain(trade) {
        let path = dir.join(chart.file);
        let bytes = crate::files::read(&path, crate::files::CHART_BYTES).map_err(|source| {
            ReportError::Read {
                path: path.clone(),
                source,
            }
        })?;
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        images.push((chart.title, format!("data:image/png;base64,{data}")));
    }
    Ok(html! {
        h2 { "Charts" }
        @for (title, src) in &images {
            figure { img.chart alt=(title) title=(title) src=(src); }
        }
    })
}

pub(crate) fn render(s: &Summary, dir: &Path) -> Result<String, ReportError> {
    let page = crate::store::page_json::read(&dir.join("page.json"));
    let interactive = super::interactive::sections(s, page.as_ref());
    let charts = charts(s, dir)?;
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "rlbench: " (s.scenario) }
                style { (PreEscaped(super::interactive::STYLE)) }
            }
            body {
                (header(s))
                @if s.arms.iter().any(|a| !a.per_agent.is_empty()) {
                    // Beside the replicas: the machines that sent the load.
                    h2 id="agents" { "Load agents" }
                    ul.agents { (sentences(s, super::agents::sentences)) }
                }
                (interactive)
                (faults(s))
                (redis(s))
                (findings(s))
                (expectations(s))
                (figures(s))
                (charts)
                p.meta { "Definite violations are admits beyond the policy that no timing can explain; possible ones need the most favourable timing. Latency is measured from each request's intended send time. Figures and histograms: summary.json beside this file." }
                // The proofs last: long, and read after the verdicts that link them.
                (witnesses(s))
                (super::interactive::scripts(s, page.as_ref()))
                // Lets a headless browser confirm every chart decoded.
                script { (PreEscaped("addEventListener('load',()=>{const i=[...document.images];document.body.dataset.charts=i.filter(x=>x.complete&&x.naturalWidth>0).length+'/'+i.length;});")) }
            }
        }
    };
    let mut out = markup.into_string();
    out.push('\n');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(2_970_001), "2,970,001");
    }

    #[test]
    fn the_banner_names_what_failed() {
        let one = ["local: remaining_contradictions 0 < min 1".to_string()];
        assert_eq!(
            failed(&one),
            "Expectation failed: local: remaining_contradictions 0 < min 1."
        );
        let two = [one[0].clone(), "api: definite_violations 3 > max 0".into()];
        assert_eq!(
            failed(&two),
            "2 expectations failed: local: remaining_contradictions 0 < min 1, \
             and 1 more (Expectations, below)."
        );
        assert_eq!(failed(&[]), "The run did not complete.");
    }
}
