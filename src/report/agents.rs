//! The load agents of a distributed arm (`run --agents`), one sentence
//! each, in the terminal and report.html: what each sent, how late, and
//! its clock against the coordinator's with the uncertainty its requests
//! were widened by.

use crate::store::summary::{ArmSummary, PerAgent};

/// One sentence per agent (none when one machine sent the load).
pub(crate) fn sentences(a: &ArmSummary) -> Vec<String> {
    a.per_agent.iter().map(sentence).collect()
}

fn sentence(p: &PerAgent) -> String {
    let clock = if p.clock_estimated {
        format!(
            "clock {:+.2} ms from the coordinator's, requests widened by ±{:.2} ms",
            -p.clock_offset_ms, p.clock_uncertainty_ms
        )
    } else {
        format!(
            "clock trusted, not measured (±{:.2} ms assumed)",
            p.clock_uncertainty_ms
        )
    };
    let end = match (&p.lost_at_s, &p.failed) {
        (Some(at), _) => match &p.taken_over {
            Some(t) => format!(
                "; LOST at {at:.1} s, its segment is incomplete: {} sent its {} requests due \
                 from {:.1} s on",
                t.by, t.requests, t.from_s
            ),
            None => format!("; LOST at {at:.1} s, its segment is incomplete"),
        },
        (None, Some(why)) => format!("; FAILED: {why}"),
        (None, None) => String::new(),
    };
    format!(
        "{} (segment {} of {}, {}): {} sent, {} admitted, {} rejected, {} errors, {} requests/s, schedule lag p99 {:.2} ms; {clock}{end}",
        p.agent,
        p.segment,
        p.of,
        p.host,
        p.sent,
        p.admitted,
        p.rejected,
        p.errors,
        p.achieved_rps,
        p.schedule_lag_p99_ms
    )
}
