//! `report.html`: one self-contained page (charts embedded as data URIs,
//! inline CSS, no network requests) with the verdict of each arm in plain
//! words, its expectations, the figures and the charts.

use super::charts::CHARTS;
use super::error::ReportError;
use crate::store::summary::{ArmSummary, Summary};
use base64::Engine;
use std::fmt::Write;
use std::path::Path;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// 1234567 → "1,234,567"
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One sentence a person can act on, e.g. "local: 1,200 admitted where a
/// correct limiter could admit at most 400 — 3.00×, 800 definite violations."
pub(crate) fn verdict(a: &ArmSummary) -> String {
    let admitted = thousands(a.requests.admitted);
    let Some(c) = &a.correctness else {
        return format!(
            "{}: {} sent, {admitted} admitted, {} rejected; no policy was given, so nothing is judged",
            a.name,
            thousands(a.requests.sent),
            thousands(a.requests.rejected)
        );
    };
    let allowed = thousands(c.allowed_max);
    let mut s = match (c.definite_violations, c.over_admission_ratio) {
        (0, Some(r)) => format!(
            "{}: {admitted} admitted where a correct limiter could admit at most {allowed} ({r:.2}×); no admit is proven beyond the policy",
            a.name
        ),
        (v, Some(r)) => format!(
            "{}: {admitted} admitted where a correct limiter could admit at most {allowed} — {r:.2}×, {} definite violation{}",
            a.name,
            thousands(v),
            if v == 1 { "" } else { "s" }
        ),
        (v, None) => format!(
            "{}: {admitted} admitted where a correct limiter could admit none — {} definite violations",
            a.name,
            thousands(v)
        ),
    };
    if c.false_rejects > 0 {
        let _ = write!(
            s,
            "; {} reject{} a correct limiter would certainly have admitted",
            thousands(c.false_rejects),
            if c.false_rejects == 1 { "" } else { "s" }
        );
    }
    if let Some(r) = &a.redis_errors {
        if r.total > 0 {
            let _ = write!(
                s,
                "; {} decisions without Redis ({} admitted, {} rejected)",
                thousands(r.total),
                thousands(r.failed_open),
                thousands(r.failed_closed)
            );
        }
    }
    if a.rate.generator_saturated {
        let said = super::table::pace_sentence(a)
            .map(|(_, s)| s)
            .unwrap_or_default();
        let _ = write!(s, "; the load generator fell behind: {said}");
    }
    let errors = a.requests.errors + a.requests.timeouts;
    if errors > 0 {
        let _ = write!(s, "; {} requests failed or timed out", thousands(errors));
    }
    s.push('.');
    s
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:2rem auto;max-width:1040px;color:#222;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
.meta{color:#666}.gate{padding:.6rem 1rem;border-radius:6px;font-weight:600}.pass{background:#e6f4ea;color:#137333}.fail{background:#fce8e6;color:#a50e0e}.remote{background:#fef7e0;color:#7a4f01}
ul.verdicts li{margin:.35rem 0}table{border-collapse:collapse;width:100%;font-size:.9rem;margin:.5rem 0}
th,td{border-bottom:1px solid #eee;padding:.3rem .5rem;text-align:right}th:nth-child(-n+2),td:nth-child(-n+2){text-align:left}
td.ok{color:#137333;font-weight:600}td.bad{color:#a50e0e;font-weight:600}li.finding{color:#a50e0e}img{width:100%;height:auto;border:1px solid #eee;margin:.5rem 0}";

fn witnesses_of(a: &ArmSummary) -> &[crate::store::summary::ArmWitness] {
    a.correctness
        .as_ref()
        .map_or(&[], |c| c.witnesses.as_slice())
}

/// Each arm's witnesses: the sentence, then the requests that prove it.
fn witnesses(h: &mut String, s: &Summary) {
    if s.arms.iter().all(|a| witnesses_of(a).is_empty()) {
        return;
    }
    h.push_str("<h2>Witnesses</h2><p class=\"meta\">The requests behind each verdict (the earliest and the largest of each kind; <code>rlbench explain RUN_DIR</code> prints them too).</p>");
    for (i, a) in s.arms.iter().enumerate() {
        let list = witnesses_of(a);
        if list.is_empty() {
            continue;
        }
        let _ = write!(h, "<h3 id=\"witnesses-{i}\">{}</h3>", esc(&a.name));
        for w in list {
            let what = super::explain::what(w.kind);
            let _ = write!(
                h,
                "<p class=\"witness\"><b>{what}</b>: {}</p><table><tr><th>seq</th><th>replica</th><th>sent s</th><th>done s</th><th>outcome</th></tr>",
                esc(&w.rule)
            );
            let rows = w
                .reject
                .iter()
                .map(|r| (r, true))
                .chain(w.requests.iter().map(|r| (r, false)));
            for (r, is_reject) in rows {
                let _ = write!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{:.4}</td><td>{:.4}</td><td>{}</td></tr>",
                    r.seq,
                    r.replica,
                    r.sent_s,
                    r.done_s,
                    if is_reject {
                        "the reject"
                    } else {
                        r.outcome.as_str()
                    }
                );
            }
            if w.more_requests > 0 {
                let _ = write!(
                    h,
                    "<tr><td colspan=\"5\">… and {} more</td></tr>",
                    w.more_requests
                );
            }
            h.push_str("</table>");
        }
    }
}

pub(crate) fn render(s: &Summary, dir: &Path) -> Result<String, ReportError> {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>rlbench: {name}</title><style>{STYLE}</style></head><body>",
        name = esc(&s.scenario)
    );
    let _ = write!(
        h,
        "<h1>rlbench: {}</h1><p class=\"meta\">started {} · {} s per arm{}</p>",
        esc(&s.scenario),
        esc(&s.started_at),
        s.duration_s,
        if s.partial {
            " · <strong>partial: the run did not complete</strong>"
        } else {
            ""
        }
    );
    let (class, words) = if s.gate.passed {
        ("pass", "Every expectation met.".to_string())
    } else if s.gate.failures.is_empty() {
        ("fail", "The run did not complete.".to_string())
    } else {
        (
            "fail",
            format!("{} expectation(s) failed.", s.gate.failures.len()),
        )
    };
    let _ = write!(h, "<p class=\"gate {class}\" id=\"gate\">{words}</p>");
    for a in &s.arms {
        if let Some(sentence) = super::remote::sentence(a) {
            let _ = write!(
                h,
                "<p class=\"gate remote\" id=\"remote-targets\">{}: {}</p>",
                esc(&a.name),
                esc(&sentence)
            );
        }
        if let Some(sentence) = super::keys::sentence(a) {
            let _ = write!(
                h,
                "<p class=\"gate keys\" id=\"keys-{}\">keys of {}: {}</p>",
                esc(&a.name),
                esc(&a.name),
                esc(&sentence)
            );
        }
    }

    h.push_str("<h2>Verdicts</h2><ul class=\"verdicts\">");
    for (i, a) in s.arms.iter().enumerate() {
        let proof = if witnesses_of(a).is_empty() {
            String::new()
        } else {
            format!(" <a href=\"#witnesses-{i}\">the proof</a>")
        };
        let _ = write!(
            h,
            "<li>{}{proof} <span class=\"meta\">({})</span></li>",
            esc(&verdict(a)),
            esc(&a.policy_text)
        );
    }
    h.push_str("</ul>");
    // Beside the replicas: the machines that sent the load, when several did.
    if s.arms.iter().any(|a| !a.per_agent.is_empty()) {
        h.push_str("<h2 id=\"agents\">Load agents</h2><ul class=\"agents\">");
        for a in &s.arms {
            for sentence in super::agents::sentences(a) {
                let _ = write!(h, "<li>{}: {}</li>", esc(&a.name), esc(&sentence));
            }
        }
        h.push_str("</ul>");
    }

    if s.arms.iter().any(|a| !a.faults.is_empty()) {
        h.push_str("<h2>Faults</h2><ul class=\"verdicts\">");
        for a in &s.arms {
            for sentence in super::phases::sentences(a) {
                let _ = write!(h, "<li>{}: {}</li>", esc(&a.name), esc(&sentence));
            }
        }
        h.push_str("</ul><table><tr><th>arm</th><th>phase</th><th>from s</th><th>to s</th><th>sent</th><th>admitted</th><th>rejected</th><th>failed</th><th>definite</th><th>false rejects</th><th>p99 ms</th></tr>");
        let opt = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.3}"));
        let count = |v: Option<u64>| v.map_or("–".to_string(), thousands);
        for a in &s.arms {
            for p in &a.phases {
                let _ = write!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td></tr>",
                    esc(&a.name),
                    esc(&p.name),
                    opt(p.from_s),
                    opt(p.to_s),
                    thousands(p.sent),
                    thousands(p.admitted),
                    thousands(p.rejected),
                    thousands(p.errors),
                    count(p.definite_violations),
                    count(p.false_rejects),
                    p.p99_ms
                );
            }
        }
        h.push_str("</table>");
    }

    if s.arms.iter().any(|a| a.redis.is_some()) {
        h.push_str("<h2 id=\"redis\">Redis: what each decision cost</h2><table><tr><th>arm</th><th>node</th><th>commands</th><th>share</th><th>script calls</th><th>CPU ms</th><th>keys</th><th>bytes per key</th><th>memory</th></tr>");
        for a in &s.arms {
            for n in a.redis.iter().flat_map(|r| &r.nodes) {
                let _ = write!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&a.name),
                    esc(&n.address),
                    thousands(n.commands),
                    100.0 * n.share,
                    thousands(n.script_calls),
                    n.cpu_ms,
                    thousands(n.keys),
                    super::redis_use::bytes(n.bytes_per_key),
                    super::redis_use::bytes(n.used_memory_bytes)
                );
            }
        }
        h.push_str("</table><ul class=\"verdicts\">");
        for a in &s.arms {
            let sentences = [
                super::redis_use::sentence(a),
                super::redis_use::lease_sentence(a),
            ];
            for sentence in sentences.iter().flatten() {
                let _ = write!(h, "<li>{}: {}</li>", esc(&a.name), esc(sentence));
            }
        }
        h.push_str("</ul>");
    }

    if s.arms.iter().any(|a| a.clock.is_some()) {
        h.push_str("<h2 id=\"clocks\">Clocks</h2><ul class=\"verdicts\">");
        for a in &s.arms {
            if let Some(sentence) = super::clock::sentence(a) {
                let _ = write!(h, "<li>{}: {}</li>", esc(&a.name), esc(&sentence));
            }
        }
        h.push_str("</ul>");
    }

    if s.arms.iter().any(|a| a.goodput.is_some()) {
        h.push_str("<h2 id=\"goodput\">Goodput of retrying callers</h2><ul class=\"verdicts\">");
        for a in &s.arms {
            if let Some(sentence) = super::goodput::sentence(a) {
                let _ = write!(h, "<li>{}: {}</li>", esc(&a.name), esc(&sentence));
            }
        }
        h.push_str("</ul>");
    }

    if s.arms.iter().any(|a| a.headers.responses > 0) {
        h.push_str("<h2 id=\"headers\">Rate-limit headers</h2><ul class=\"verdicts\">");
        for a in &s.arms {
            for (i, sentence) in super::headers::sentences(a).iter().enumerate() {
                let class = if i == 0 { "" } else { " class=\"finding\"" };
                let _ = write!(h, "<li{class}>{}: {}</li>", esc(&a.name), esc(sentence));
            }
        }
        h.push_str("</ul>");
    }

    h.push_str("<h2>Expectations</h2><table><tr><th>arm</th><th>expectation</th><th>bound</th><th>value</th><th>result</th></tr>");
    for a in &s.arms {
        for e in &a.expect {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{} {}</td><td>{}</td><td class=\"{}\">{}</td></tr>",
                esc(&a.name),
                esc(&e.expectation),
                esc(&e.kind),
                e.bound,
                e.value
                    .map_or("unbounded".to_string(), |v| format!("{:.3}", v)),
                if e.passed { "ok" } else { "bad" },
                if e.passed { "passed" } else { "FAILED" }
            );
        }
    }
    h.push_str("</table>");

    h.push_str("<h2>Figures</h2><table><tr><th>arm</th><th>mode</th><th>replicas</th><th>sent</th><th>admitted</th><th>at most</th><th>over-admission</th><th>peak window</th><th>definite</th><th>possible</th><th>false rejects</th><th>p50 ms</th><th>p99 ms</th><th>achieved rps</th></tr>");
    for a in &s.arms {
        let judged = a.correctness.as_ref().map_or_else(
            || vec!["–".to_string(); 6],
            |c| {
                vec![
                    thousands(c.allowed_max),
                    c.over_admission_ratio
                        .map_or("∞".to_string(), |r| format!("{r:.2}×")),
                    format!("{:.2}", c.peak_window_ratio),
                    thousands(c.definite_violations),
                    thousands(c.possible_violations),
                    thousands(c.false_rejects),
                ]
            },
        );
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}<td>{:.2}</td><td>{:.2}</td><td>{:.0}</td></tr>",
            esc(&a.name),
            esc(&a.mode),
            a.replicas,
            thousands(a.requests.sent),
            thousands(a.requests.admitted),
            judged
                .iter()
                .map(|cell| format!("<td>{cell}</td>"))
                .collect::<String>(),
            a.latency_ms.p50,
            a.latency_ms.p99,
            a.rate.achieved_rps
        );
    }
    h.push_str("</table>");

    h.push_str("<h2>Charts</h2>");
    // Drawn only for runs with leases: known from the summary itself.
    let trade = (!super::trade::points(s).is_empty()).then_some(&super::trade::TRADE);
    for chart in CHARTS.iter().chain(trade) {
        let path = dir.join(chart.file);
        let bytes = std::fs::read(&path).map_err(|source| ReportError::Read {
            path: path.clone(),
            source,
        })?;
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        let _ = write!(
            h,
            "<figure><img class=\"chart\" alt=\"{t}\" title=\"{t}\" src=\"data:image/png;base64,{data}\"></figure>",
            t = esc(chart.title)
        );
    }
    h.push_str("<p class=\"meta\">Definite violations are admits beyond the policy that no timing can explain; possible ones need the most favourable timing. Latency is measured from each request's intended send time. Figures and histograms: summary.json beside this file.</p>");
    // The proofs last: long, and read after the verdicts that link them.
    witnesses(&mut h, s);
    // Lets a headless browser confirm every chart decoded.
    h.push_str("<script>addEventListener('load',()=>{const i=[...document.images];document.body.dataset.charts=i.filter(x=>x.complete&&x.naturalWidth>0).length+'/'+i.length;});</script>");
    h.push_str("</body></html>\n");
    Ok(h)
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
    fn markup_is_escaped() {
        assert_eq!(esc("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
    }
}
