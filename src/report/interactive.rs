//! report.html's interactive views: each arm's requests over time (uPlot
//! charts sharing one time axis, faults shaded, the band a correct
//! limiter stays inside) and the per-key timeline (SVG: every request as
//! its `[sent, done]`, one lane per replica, the policy's window following
//! the pointer, a witness's requests outlined). Drawn in the browser by
//! the scripts in `assets/` from page.json's figures, embedded as JSON; no
//! network request.

use crate::store::page_json::PageData;
use crate::store::summary::Summary;
use maud::{html, Markup, PreEscaped};

/// The page's styles: uPlot's, then rlbench's.
pub(crate) const STYLE: &str = concat!(
    include_str!("assets/uPlot.min.css"),
    "\n",
    include_str!("assets/report.css")
);
const UPLOT: &str = include_str!("assets/uPlot.iife.min.js");
const SCRIPT: &str = include_str!("assets/report.js");

/// The over-time charts and the timeline's frame, filled by the script.
pub(crate) fn sections(s: &Summary, page: Option<&PageData>) -> Markup {
    let Some(page) = page else {
        return html! {
            h2 { "Over time" }
            p.meta { "This run folder has no page.json (it was written by an older rlbench): "
                code { "rlbench report RUN_DIR" } " draws the charts over time and the per-key timeline again from its trace." }
        };
    };
    html! {
        h2 id="over-time" { "Over time" }
        p.meta { "Rates per second, counted in buckets of send time (each chart names the width) and drawn as steps; each arm on its own time axis (s since its load started). Legends give totals and peaks; hover for a bucket's values, drag across a chart to zoom, double-click to zoom out. Shaded orange: a fault's window." }
        @for (i, arm) in page.arms.iter().enumerate() {
            h3 { (arm.name) }
            div.over-time id=(format!("over-time-{i}")) {}
        }
        h2 id="timeline" { "Per-key timeline" }
        p.meta { "Every request of one key as a bar from its send to its answer (the limiter decided somewhere inside), one lane per replica; "
            span.legend { span style="background:#2e7d32" {} "admitted" span style="background:#ef6c00" {} "rejected" span style="background:#9e9e9e" {} "unknown" }
            ". The policy's window follows the pointer with the admits decided inside it. A witness's requests are outlined and its span is yellow." }
        div.controls {
            label { "arm " select id="timeline-arm" {} }
            label { "key " select id="timeline-key" {} }
            label { "search " input id="timeline-search" list="timeline-keys" placeholder="key name"; }
            datalist id="timeline-keys" {}
        }
        div id="timeline-witness" {}
        svg id="timeline-svg" xmlns="http://www.w3.org/2000/svg" width="960" height="60" {}
        p.meta id="timeline-note" {}
        @if s.arms.iter().any(|a| a.correctness.is_none()) {
            p.meta { "Arms without a policy have no window to draw." }
        }
    }
}

/// The data (page.json's figures with each arm's witnesses from the
/// summary) and the scripts that draw it.
pub(crate) fn scripts(s: &Summary, page: Option<&PageData>) -> Markup {
    let Some(page) = page else {
        return html! {};
    };
    html! {
        script type="application/json" id="rlbench-data" { (PreEscaped(data(s, page))) }
        script { (PreEscaped(UPLOT)) }
        script { (PreEscaped(SCRIPT)) }
    }
}

/// The figures as JSON safe inside `<script>`: every `<` escaped, so no
/// key name can end the element.
fn data(s: &Summary, page: &PageData) -> String {
    let arms: Vec<serde_json::Value> = page
        .arms
        .iter()
        .map(|arm| {
            let mut v = serde_json::to_value(arm).unwrap_or(serde_json::Value::Null);
            // Each witness with what its replicas mean for the arm's mode
            // (the sentence `rlbench explain` prints).
            let summary = s.arms.iter().find(|a| a.name == arm.name);
            let witnesses: Vec<serde_json::Value> = summary
                .and_then(|a| a.correctness.as_ref().map(|c| (a, c)))
                .map(|(a, c)| {
                    c.witnesses
                        .iter()
                        .map(|w| {
                            let mut v = serde_json::to_value(w).unwrap_or_default();
                            if let (Some(o), Some(said)) =
                                (v.as_object_mut(), super::explain::replicas(w, &a.mode))
                            {
                                o.insert("replicas".into(), said.into());
                            }
                            v
                        })
                        .collect()
                })
                .unwrap_or_default();
            let witnesses = serde_json::Value::Array(witnesses);
            if let Some(o) = v.as_object_mut() {
                o.insert("witnesses".into(), witnesses);
            }
            v
        })
        .collect();
    serde_json::json!({ "arms": arms })
        .to_string()
        .replace('<', "\\u003c")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::page_json::{ArmPage, KeyView};

    #[test]
    fn a_key_name_cannot_end_the_script_it_is_carried_in() {
        let page = PageData {
            arms: vec![ArmPage {
                name: "local".into(),
                keys: vec![KeyView {
                    key: "</script><script>alert(1)</script>".into(),
                    ..KeyView::default()
                }],
                ..ArmPage::default()
            }],
        };
        let summary: Summary =
            serde_json::from_str(include_str!("../../tests/fixtures/report-v1/summary.json"))
                .unwrap();
        let text = data(&summary, &page);
        assert!(!text.contains('<'), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back["arms"][0]["keys"][0]["key"],
            "</script><script>alert(1)</script>"
        );
    }
}
