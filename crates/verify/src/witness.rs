//! Witnesses: for a violation, the admits that no placement of decisions
//! can reconcile with the policy; for a false reject, the reject and the
//! possible admits that bound its window — each with the rule in words.
//! Built from what the counting engines found; one key at a time.

use super::false_reject::{self, RejectCheck};
use super::grid::{self, Grid};
use super::removal::{Bound, Breaks, Item};
use super::rules::Rules;
use super::trace::Options;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Violation,
    FalseReject,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Violation => "violation",
            Kind::FalseReject => "false_reject",
        }
    }
}

/// The proof of one verdict on one key; indices refer to the key's
/// requests as they were given to the verifier.
#[derive(Clone, Debug, PartialEq)]
pub struct Witness {
    pub kind: Kind,
    /// The admits that prove a violation; for a false reject, every request
    /// that may have counted against it.
    pub requests: Vec<usize>,
    /// The false reject itself.
    pub reject: Option<usize>,
    /// The span the rule speaks of (µs, trace time).
    pub from_us: i64,
    pub to_us: i64,
    /// Admits beyond what the span allows, or a false reject's spare capacity.
    pub excess: u64,
    /// The rule in words, without the key.
    pub rule: String,
}

fn s(us: i64) -> String {
    format!("{:.3} s", us as f64 / 1e6)
}

/// A duration as people write it: `2 s`, `250 ms`, `1.391 s`; one that
/// is not whole milliseconds (a window shortened for a clock's rate) is
/// the policy's round figure less the rest, `2 s − 208 µs`, so the
/// sentence shows the number the policy was written with and stays exact.
fn span(us: i64) -> String {
    if us % 1_000 == 0 {
        return whole(us);
    }
    let up = (us / 1_000 + 1) * 1_000;
    format!("{} − {} µs", whole(up), up - us)
}

/// Whole milliseconds in the largest unit that keeps them whole.
fn whole(us: i64) -> String {
    if us % 1_000_000 == 0 {
        format!("{} s", us / 1_000_000)
    } else if us < 1_000_000 {
        format!("{} ms", us / 1_000)
    } else {
        s(us)
    }
}

fn extent(items: &[Item], members: &[usize]) -> (i64, i64) {
    let from = members.iter().map(|&m| items[m].x).min().unwrap_or(0);
    let to = members.iter().map(|&m| items[m].y).max().unwrap_or(0);
    (from, to)
}

/// Witnesses of one continuous bound's first and largest break.
pub(crate) fn bound(
    b: Bound,
    why: &str,
    admits: &[Item],
    at: &[usize],
    breaks: Breaks,
    slack: i64,
) -> Vec<Witness> {
    [breaks.first, breaks.largest]
        .into_iter()
        .flatten()
        .map(|br| {
            let (from, to) = extent(admits, &br.members);
            let n = br.members.len() as u64;
            let held = (to + slack - from).max(0);
            let (allowed, limit_words) = match b {
                Bound::Window {
                    limit,
                    span: w,
                    inclusive,
                } => (
                    limit as f64,
                    format!(
                        "({} {} {}); the policy allows {limit}",
                        s(to - from),
                        if inclusive { "≤" } else { "<" },
                        span(w)
                    ),
                ),
                Bound::Linear {
                    burst, count, per, ..
                } => {
                    let allowed = burst as f64 + held as f64 * count as f64 / per as f64;
                    (
                        allowed,
                        format!(
                            "({}); the policy allows at most {burst} + {count} per {} = {:.1} in that time",
                            s(to - from),
                            span(per),
                            allowed
                        ),
                    )
                }
            };
            let more = if br.all > n {
                format!(" — {} admitted in that span in all", br.all)
            } else {
                String::new()
            };
            Witness {
                kind: Kind::Violation,
                requests: br.members.iter().map(|&m| at[m]).collect(),
                reject: None,
                from_us: from,
                to_us: to,
                excess: (br.all as f64 - allowed.floor()).max(1.0) as u64,
                rule: format!(
                    "{n} admits, all decided between {} and {} {limit_words} ({why}){more}",
                    s(from),
                    s(to)
                ),
            }
        })
        .collect()
}

/// Witnesses of admits that the attempts counted before them rule out
/// (`count_rejected`): the first and the one with the most attempts.
pub(crate) fn attempts(
    admits: &[Item],
    admit_at: &[usize],
    (attempts, attempt_at): (&[Item], &[usize]),
    refused: &[Option<Vec<usize>>],
    slack: i64,
) -> Vec<Witness> {
    let found: Vec<(usize, &Vec<usize>)> = refused
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.as_ref().map(|r| (i, r)))
        .collect();
    let first = found.iter().min_by_key(|(i, _)| (admits[*i].y, *i));
    let largest = found.iter().max_by_key(|(_, r)| r.len());
    let mut out: Vec<Witness> = Vec::new();
    for &&(i, counted) in first.iter().chain(largest.iter()) {
        let a = admits[i];
        let from = counted.iter().map(|&c| attempts[c].x).min().unwrap_or(a.x);
        let mut requests: Vec<usize> = counted.iter().map(|&c| attempt_at[c]).collect();
        requests.push(admit_at[i]);
        requests.sort_unstable();
        requests.dedup();
        let w = Witness {
            kind: Kind::Violation,
            requests,
            reject: None,
            from_us: from,
            to_us: a.y,
            excess: 1,
            rule: format!(
                "an admit decided by {} after {} attempts, each decided before it was sent and \
                 within {} of it; a limiter that counts rejected attempts admits only below its \
                 limit",
                s(a.y),
                counted.len(),
                s((a.y + slack - from).max(0))
            ),
        };
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// Witnesses of the aligned-window rule.
pub(crate) fn grid(
    g: Grid,
    opts: &Options,
    admits: &[Item],
    at: &[usize],
    breaks: Breaks,
) -> Vec<Witness> {
    [breaks.first, breaks.largest]
        .into_iter()
        .flatten()
        .filter_map(|br| {
            let last = *br.members.iter().max_by_key(|&&m| admits[m].x)?;
            let (from, to) = grid::window_of(g, opts.epoch_offset_us, &admits[last], opts.slack_us);
            let n = br.members.len() as u64;
            let what = if g.segments == 1 {
                "one aligned window".to_string()
            } else {
                format!("{} consecutive aligned segments", g.segments)
            };
            Some(Witness {
                kind: Kind::Violation,
                requests: br.members.iter().map(|&m| at[m]).collect(),
                reject: None,
                from_us: from,
                to_us: to,
                excess: n.saturating_sub(g.limit).max(1),
                rule: format!(
                    "{n} admits surely decided inside {what}, [{}, {}); the policy allows {}",
                    s(from),
                    s(to),
                    g.limit
                ),
            })
        })
        .collect()
}

/// Witnesses of the first false reject and of the one that left the most
/// capacity unused.
pub(crate) fn false_rejects(
    rules: &Rules,
    opts: &Options,
    (maybe, maybe_at): (&[Item], &[usize]),
    (judged, judged_at): (&[Item], &[usize]),
    flags: &[Option<u64>],
) -> Vec<Witness> {
    let flagged = || {
        flags
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.map(|n| (i, n)))
    };
    let first = flagged().min_by_key(|&(i, _)| (judged[i].x, i));
    let largest = flagged().max_by_key(|&(i, n)| (n, std::cmp::Reverse(judged[i].x)));
    let mut picked: Vec<usize> = [first, largest]
        .into_iter()
        .flatten()
        .map(|(i, _)| i)
        .collect();
    picked.dedup();
    let start = false_reject::start(opts);
    picked
        .into_iter()
        .map(|i| {
            let r = &judged[i];
            let proof = false_reject::proof(rules.reject, maybe, r, opts.slack_us, start);
            let n = proof.counted.len();
            let rule = match rules.reject {
                RejectCheck::Lookback { limit, span: w } => format!(
                    "limited (sent {}, answered {}) although at most {n} requests could have \
                     been admitted in the {} before it; the policy allows {limit}",
                    s(r.x),
                    s(r.y),
                    span(w)
                ),
                RejectCheck::Bucket { count, per, .. } => format!(
                    "limited (sent {}, answered {}) although the bucket surely held {} token(s): \
                     from {} it refilled at least {count} per {}, and at most {n} requests could \
                     have taken tokens since",
                    s(r.x),
                    s(r.y),
                    proof.spare.max(1),
                    s(proof.from.max(0)),
                    span(per)
                ),
            };
            Witness {
                kind: Kind::FalseReject,
                requests: proof.counted.iter().map(|&m| maybe_at[m]).collect(),
                reject: Some(judged_at[i]),
                from_us: proof.from.max(0),
                to_us: r.y,
                excess: proof.spare.max(1),
                rule,
            }
        })
        .collect()
}

/// Of one key's candidates, per kind: the earliest and the largest.
pub(crate) fn keep_per_key(found: Vec<Witness>) -> Vec<Witness> {
    let mut out: Vec<Witness> = Vec::new();
    for kind in [Kind::Violation, Kind::FalseReject] {
        let of = || found.iter().filter(|w| w.kind == kind);
        let earliest = of().min_by_key(|w| (w.to_us, w.from_us));
        let largest = of().max_by_key(|w| (w.excess, std::cmp::Reverse(w.to_us)));
        for w in [earliest, largest].into_iter().flatten() {
            if !out.contains(w) {
                out.push(w.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::span;

    #[test]
    fn spans_read_in_the_policys_own_figures() {
        assert_eq!(span(2_000_000), "2 s");
        assert_eq!(span(250_000), "250 ms");
        assert_eq!(span(1_391_000), "1.391 s");
        // A window shortened for a clock's rate: the round figure less the rest.
        assert_eq!(span(1_999_792), "2 s − 208 µs");
        assert_eq!(span(499_950), "500 ms − 50 µs");
        assert_eq!(span(1_500_300), "1.501 s − 700 µs");
    }
}
