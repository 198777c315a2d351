//! `rlbench explain` as text: each witness's sentence, then the requests
//! involved with a small timeline of their `[sent, done]` intervals.

use crate::store::summary::{ArmWitness, WitnessKind, WitnessRequest};
use std::fmt::Write;

/// Columns of the timeline, when the lines need not fold.
const WIDTH: usize = 40;
/// Its fewest columns, on a narrow terminal.
const NARROWEST: usize = 12;
/// A row's columns before its timeline (and the two `|` around it).
const BEFORE_BAR: usize = 57;

/// The timeline's columns for lines folded at `columns` (`None`: not
/// folded): as many as keep a row within them, from 12 to 40 — a row
/// folded in two would leave its `|` alone on a line.
pub(crate) fn bar_width(columns: Option<usize>) -> usize {
    columns.map_or(WIDTH, |c| {
        c.saturating_sub(BEFORE_BAR).clamp(NARROWEST, WIDTH)
    })
}

/// The witnesses of `arms` in words, their timelines `bar` columns wide
/// ([`bar_width`]).
pub(crate) fn render(arms: &[Explained], bar: usize) -> String {
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
            witness(&mut out, w, &a.mode, bar);
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

fn witness(out: &mut String, w: &ArmWitness, mode: &str, width: usize) {
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
        w = width.saturating_sub(3)
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
                (lo, hi),
                (r.sent_s, r.done_s),
                if is_reject { 'x' } else { '#' },
                width
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

/// `[from, to]` drawn across `[lo, hi]` in `width` columns.
fn bar((lo, hi): (f64, f64), (from, to): (f64, f64), mark: char, width: usize) -> String {
    let span = (hi - lo).max(1e-9);
    let last = width.saturating_sub(1);
    let col = |t: f64| {
        (((t - lo) / span) * last as f64)
            .round()
            .clamp(0.0, last as f64) as usize
    };
    let (a, b) = (col(from), col(to.min(hi)));
    (0..width)
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
        assert_eq!(bar((0.0, 1.0), (0.0, 0.0), '#', WIDTH).trim_end(), "#");
        let full = bar((0.0, 1.0), (0.0, 1.0), '#', WIDTH);
        assert_eq!(full, "#".repeat(WIDTH));
        let half = bar((0.0, 1.0), (0.5, 1.0), 'x', 20);
        assert!(half.starts_with(' ') && half.ends_with('x') && half.len() == 20);
    }

    /// Folded at 80 columns, a row keeps its timeline whole on its line:
    /// no `|` left alone on the next.
    #[test]
    fn rows_fit_the_columns_they_are_folded_at() {
        let w = ArmWitness {
            kind: WitnessKind::Violation,
            rule: "rule".into(),
            from_s: 0.0,
            to_s: 1.5,
            key: "k".into(),
            excess: 1,
            requests: vec![request(0, "admitted"), request(1, "admitted")],
            reject: None,
            more_requests: 0,
        };
        for (columns, bar) in [(Some(80), 23), (Some(60), NARROWEST), (None, WIDTH)] {
            assert_eq!(bar_width(columns), bar);
            let mut out = String::new();
            witness(&mut out, &w, "local", bar_width(columns));
            let rows: Vec<&str> = out.lines().filter(|l| l.ends_with('|')).collect();
            assert_eq!(rows.len(), 2, "{out}");
            for row in rows {
                assert_eq!(row.chars().count(), BEFORE_BAR + bar, "{row}");
            }
        }
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
