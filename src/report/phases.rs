//! Faults in words: one sentence per fault of an arm, built from its
//! summary (the terminal and report.html print the same sentences).

use crate::store::summary::{ArmSummary, Phase};

/// e.g. "redis_down (pause) 3.0–5.0 s: 594 of 600 admitted, 6 rejected,
/// 0 failed; 387 definite violations, 0 false rejects; failures and false
/// rejects ended 10 ms after it did". Over-admission after a fault shows
/// in the phase figures, not in the recovery time.
pub(crate) fn sentences(a: &ArmSummary) -> Vec<String> {
    let mut during = a.phases.iter().filter(|p| p.name.starts_with("during "));
    a.faults
        .iter()
        .map(|f| {
            let when = format!("{} {:.1}–{:.1} s", f.fault, f.from_s, f.to_s);
            if !f.applied {
                return format!("{when}: nothing to break in this arm");
            }
            let phase = during.next();
            let mut s = match phase {
                Some(p) => format!("{when}: {}", phase_words(p)),
                None => when,
            };
            if f.fault == "redis_failover" {
                s.push_str(&format!(
                    "; the replica was promoted {:.0} ms after the primary was killed, and only what was still on its way to the replica is lost",
                    (f.to_s - f.from_s) * 1000.0
                ));
            } else if let (true, Some(p)) = (f.fault.starts_with("redis_failover"), phase) {
                s.push_str(&format!(
                    "; {} admit{} in the replication lag, each an increment the promoted replica lacks unless a replica acknowledged it first",
                    p.admitted,
                    if p.admitted == 1 { "" } else { "s" }
                ));
            }
            match f.recovery_ms {
                Some(ms) => s.push_str(&format!(
                    "; failures and false rejects ended {ms:.0} ms after it did"
                )),
                None => s.push_str("; nothing was decided after it"),
            }
            if let Some(e) = &f.error {
                s.push_str(&format!("; undoing it failed: {e}"));
            }
            s
        })
        .collect()
}

fn phase_words(p: &Phase) -> String {
    let mut s = format!(
        "{} sent, {} admitted, {} rejected, {} failed",
        p.sent, p.admitted, p.rejected, p.errors
    );
    if let (Some(d), Some(f)) = (p.definite_violations, p.false_rejects) {
        s.push_str(&format!(
            "; {d} definite violation{}, {f} false reject{}",
            if d == 1 { "" } else { "s" },
            if f == 1 { "" } else { "s" }
        ));
    }
    s
}
