//! The page's witnesses: each arm's proofs, the sentence then the requests
//! behind it, with a link that shows it on the per-key timeline.

use crate::store::summary::{ArmSummary, ArmWitness, Summary};
use maud::{html, Markup};

pub(crate) fn witnesses_of(a: &ArmSummary) -> &[ArmWitness] {
    a.correctness
        .as_ref()
        .map_or(&[], |c| c.witnesses.as_slice())
}

/// Each arm's witnesses: the sentence, then the requests that prove it,
/// and a link that shows it on the per-key timeline.
pub(crate) fn witnesses(s: &Summary) -> Markup {
    if s.arms.iter().all(|a| witnesses_of(a).is_empty()) {
        return html! {};
    }
    html! {
        h2 { "Witnesses" }
        p.meta { "The requests behind each verdict (the earliest and the largest of each kind; "
            code { "rlbench explain RUN_DIR" } " prints them too)." }
        @for (i, a) in s.arms.iter().enumerate() {
            @let list = witnesses_of(a);
            @if !list.is_empty() {
                h3 id=(format!("witnesses-{i}")) { (a.name) }
                @for (j, w) in list.iter().enumerate() {
                    p.witness {
                        b { (crate::report::explain::what(w.kind)) } ": " (w.rule) " "
                        a.show-witness href="#timeline" data-arm=(i) data-key=(w.key) data-witness=(j) { "show on the timeline" }
                    }
                    table {
                        tr { th { "seq" } th { "replica" } th { "sent s" } th { "done s" } th { "outcome" } }
                        @if let Some(r) = &w.reject {
                            (request_row(r, "the reject"))
                        }
                        @for r in &w.requests {
                            (request_row(r, &r.outcome))
                        }
                        @if w.more_requests > 0 {
                            tr { td colspan="5" { "… and " (w.more_requests) " more" } }
                        }
                    }
                }
            }
        }
    }
}

fn request_row(r: &crate::store::summary::WitnessRequest, outcome: &str) -> Markup {
    html! {
        tr {
            td { (r.seq) } td { (r.replica) }
            td { (format!("{:.4}", r.sent_s)) } td { (format!("{:.4}", r.done_s)) }
            td { (outcome) }
        }
    }
}
