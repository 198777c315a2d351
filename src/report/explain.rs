//! `rlbench explain` as text: each witness's sentence, then the requests
//! involved with a small timeline of their `[sent, done]` intervals.

use crate::store::summary::{ArmWitness, WitnessKind, WitnessRequest};
use std::fmt::Write;

/// Columns of the timeline.
const WIDTH: usize = 40;

pub(crate) fn render(arms: &[Explained]) -> String {
    let mut out = String::new();
    for a in arms {
        let policy = a.policy.as_deref().unwrap_or("no policy: nothing judged");
        let _ = writeln!(
            out,
            "arm {}: {} definite violations, {} false rejects ({policy})",
            a.arm, a.definite_violations, a.false_rejects
        );
        if let Some(keys) = &a.keys {
            let _ = writeln!(out, "  first, the keys: {keys}");
        }
        if let Some(setup) = &a.setup {
            let _ = writeln!(out, "  first, the setup: {setup}");
        }
        if let Some(slow) = &a.slow {
            let _ = writeln!(out, "  the answers: {slow}");
        }
        if let Some(spoofing) = &a.spoofing {
            let _ = writeln!(out, "  who called: {spoofing}");
        }
        if a.witnesses.is_empty() {
            let _ = writeln!(
                out,
                "  nothing to prove: no violation and no false reject\n"
            );
            continue;
        }
        for w in &a.witnesses {
            witness(&mut out, w, &a.mode);
        }
    }
    out
}

/// A witness' kind as the views name it.
pub(super) fn what(kind: WitnessKind) -> &'static str {
    match kind {
        WitnessKind::Violation => "violation",
        WitnessKind::FalseReject => "false reject",
    }
}

fn witness(out: &mut String, w: &ArmWitness, mode: &str) {
    let what = what(w.kind);
    let _ = writeln!(out, "  {what}: {}", w.rule);
    if let Some(spread) = replicas(w, mode) {
        let _ = writeln!(out, "    {spread}");
    }
    let mut rows: Vec<(&WitnessRequest, bool)> = w.requests.iter().map(|r| (r, false)).collect();
    if let Some(r) = &w.reject {
        rows.push((r, true));
    }
    rows.sort_by(|a, b| {
        a.0.sent_s
            .partial_cmp(&b.0.sent_s)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let lo = rows.iter().map(|(r, _)| r.sent_s).fold(w.from_s, f64::min);
    let hi = rows
        .iter()
        .map(|(r, _)| r.done_s.min(1e12))
        .fold(w.to_s, f64::max);
    let _ = writeln!(
        out,
        "    {:>8}  {:>7}  {:>9}  {:>9}  {:<9} {:.3} s{:>w$}",
        "seq",
        "replica",
        "sent s",
        "done s",
        "outcome",
        lo,
        format!("{hi:.3} s"),
        w = WIDTH - 3
    );
    for (r, is_reject) in rows {
        let outcome = if is_reject { "REJECTED" } else { &r.outcome };
        let _ = writeln!(
            out,
            "    {:>8}  {:>7}  {:>9.4}  {:>9.4}  {:<9} |{}|",
            r.seq,
            r.replica,
            r.sent_s,
            r.done_s,
            outcome,
            bar(
                lo,
                hi,
                r.sent_s,
                r.done_s,
                if is_reject { 'x' } else { '#' }
            )
        );
    }
    if w.more_requests > 0 {
        let _ = writeln!(out, "    … and {} more", w.more_requests);
    }
    out.push('\n');
}

/// For a violation whose admits came from more than one replica, what
/// that means for the arm's `mode`: "admits from replicas 0, 1 and 2 (4,
/// 4 and 3 of them; the replica column)", then, for replicas that keep
/// their own counts (`local`), that each counts alone; for a target rlbench
/// did not start (`external`), that each may be.
pub(crate) fn replicas(w: &ArmWitness, mode: &str) -> Option<String> {
    if w.kind != WitnessKind::Violation {
        return None;
    }
    let mut by: std::collections::BTreeMap<u32, usize> = std::collections::BTreeMap::new();
    for r in w.requests.iter().filter(|r| r.outcome == "admitted") {
        *by.entry(r.replica).or_insert(0) += 1;
    }
    if by.len() < 2 {
        return None;
    }
    let list = |items: Vec<String>| match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => items.concat(),
    };
    let why = match mode {
        "local" => ": each replica counts alone, so each admits up to the limit",
        "external" => ": replicas that each count alone admit up to the limit each",
        _ => "",
    };
    Some(format!(
        "admits from replicas {} ({} of them; the replica column){why}",
        list(by.keys().map(u32::to_string).collect()),
        list(by.values().map(usize::to_string).collect())
    ))
}

/// `[from, to]` drawn across `[lo, hi]` in `WIDTH` columns.
fn bar(lo: f64, hi: f64, from: f64, to: f64, mark: char) -> String {
    let span = (hi - lo).max(1e-9);
    let col = |t: f64| {
        (((t - lo) / span) * (WIDTH - 1) as f64)
            .round()
            .clamp(0.0, (WIDTH - 1) as f64) as usize
    };
    let (a, b) = (col(from), col(to.min(hi)));
    (0..WIDTH)
        .map(|i| if i >= a && i <= b { mark } else { ' ' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(replica: u32, outcome: &str) -> WitnessRequest {
        WitnessRequest {
            seq: 1,
            replica,
            sent_s: 0.0,
            done_s: 0.1,
            outcome: outcome.to_string(),
        }
    }

    #[test]
    fn admits_from_several_replicas_are_said_to_count_alone() {
        let text = include_str!("../../tests/fixtures/report-v1/summary.json");
        let s: crate::store::summary::Summary = serde_json::from_str(text).unwrap();
        let mut w = s
            .arms
            .iter()
            .flat_map(|a| a.correctness.iter().flat_map(|c| c.witnesses.clone()))
            .find(|w| w.kind == WitnessKind::Violation)
            .unwrap();
        w.requests = [0, 1, 2, 0, 1, 2, 0]
            .into_iter()
            .map(|r| request(r, "admitted"))
            .chain([request(3, "rejected")])
            .collect();
        let said = replicas(&w, "local").unwrap();
        assert_eq!(
            said,
            "admits from replicas 0, 1 and 2 (3, 2 and 2 of them; the replica column): \
             each replica counts alone, so each admits up to the limit"
        );
        // Shared counts (Redis): the spread, without a cause that is not theirs.
        let said = replicas(&w, "redis_naive").unwrap();
        assert!(
            said.ends_with("(3, 2 and 2 of them; the replica column)"),
            "{said}"
        );
        // One replica's admits, or a false reject: nothing to add.
        w.requests = vec![request(1, "admitted"), request(1, "admitted")];
        assert_eq!(replicas(&w, "local"), None);
        w.kind = WitnessKind::FalseReject;
        w.requests = vec![request(0, "admitted"), request(1, "admitted")];
        assert_eq!(replicas(&w, "local"), None);
    }

    #[test]
    fn a_bar_covers_its_interval() {
        assert_eq!(bar(0.0, 1.0, 0.0, 0.0, '#').trim_end(), "#");
        let full = bar(0.0, 1.0, 0.0, 1.0, '#');
        assert_eq!(full, "#".repeat(WIDTH));
        let half = bar(0.0, 1.0, 0.5, 1.0, 'x');
        assert!(half.starts_with(' ') && half.ends_with('x'));
    }
}

/// One arm's verdict counts and the witnesses kept.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Explained {
    pub arm: String,
    /// The arm's mode (`local`, `redis_lua`, `external`, …).
    pub mode: String,
    pub policy: Option<String>,
    pub definite_violations: u64,
    pub false_rejects: u64,
    pub witnesses: Vec<ArmWitness>,
    /// Whether the limiter seems not to have told the keys apart
    /// (`report::keys`), in words.
    pub keys: Option<String>,
    /// The setup named before the limiter is blamed (`report::setup`).
    pub setup: Option<String>,
    /// Admits too slow for the policy's sharp rules (`report::slow`).
    pub slow: Option<String>,
    /// Principals under forged identities (`report::spoofing`).
    pub spoofing: Option<String>,
}
