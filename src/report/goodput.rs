//! What retrying callers got, in words, for the terminal table and the
//! HTML page: successes per second at the first try and in the end,
//! beside every attempt the limiter saw.

use crate::store::summary::ArmSummary;

fn share(n: u64, of: u64) -> String {
    if of == 0 {
        "0%".to_string()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / of as f64)
    }
}

/// One sentence; none when the callers did not retry.
pub(crate) fn sentence(a: &ArmSummary) -> Option<String> {
    let g = a.goodput.as_ref()?;
    Some(format!(
        "{} requests, {} retries ({}); first try {:.1} admitted/s ({}), eventually {:.1}/s ({}), {} gave up; {:.1} attempts/s",
        g.requests,
        g.retries,
        g.retry,
        g.first_try_rps,
        share(g.first_try_admitted, g.requests),
        g.eventual_rps,
        share(g.eventually_admitted, g.requests),
        g.gave_up,
        g.attempts_rps
    ))
}
