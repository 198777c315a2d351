//! An arm's verdict in one sentence a person can act on, and counts as
//! people read them (with thousands separators); the page, the live board
//! and compare's page say it alike.

use crate::store::summary::ArmSummary;
use std::fmt::Write;

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
        let said = crate::report::table::lines::pace_sentence(a)
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
