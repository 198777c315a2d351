//! The limiter's own metrics beside the trace (`[target] metrics`), in one
//! sentence for the terminal and the page.

use crate::store::summary::{count_text as number, ArmSummary};

/// "its own counters (the replicas' /metrics) agree with what its clients
/// saw: admitted 812, rejected 188" — or how far they are off, or why
/// they could not be read.
pub(crate) fn sentence(a: &ArmSummary) -> Option<String> {
    let m = a.limiter_metrics.as_ref()?;
    let resets = match m.resets {
        0 => String::new(),
        1 => " (one counter reset)".to_string(),
        n => format!(" ({n} counter resets)"),
    };
    Some(match (m.discrepancy, &m.error) {
        (Some(0.0), None) => {
            let seen: Vec<String> = [("admitted", &m.admitted), ("rejected", &m.rejected)]
                .into_iter()
                .filter_map(|(w, h)| h.as_ref().map(|h| format!("{w} {}", number(h.limiter))))
                .collect();
            format!(
                "its own counters ({}) agree with what its clients saw: {}{resets}",
                m.source,
                seen.join(", ")
            )
        }
        (Some(d), None) => format!(
            "its own counters ({}) are off by at least {} from what its clients saw: {}{resets}",
            m.source,
            number(d),
            m.describe()
        ),
        (_, error) => format!(
            "its own counters ({}) could not be read: {}",
            m.source,
            error.as_deref().unwrap_or("no count")
        ),
    })
}
