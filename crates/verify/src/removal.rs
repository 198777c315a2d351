//! The counting engine behind definite and possible violations.
//!
//! Each admit is an item with a left coordinate `x` and a right coordinate
//! `y`. A set of items spans `max(y) + slack - min(x)` (never below 0). A
//! bound says how many items any set of a given span may hold. The engine
//! returns the fewest items that must be dropped so that no set breaks the
//! bound: a lower bound on how many admits were wrong.
//!
//! For definite violations `x = sent`, `y = done` (every decision surely
//! happened inside the set's span); for possible ones `x = done`, `y = sent`
//! (the decisions may have been that close together).
//!
//! Greedy and optimal: items are taken in order of `y`; when the newest one
//! makes some set too big, the kept item with the largest `x` is dropped. Every
//! later set that could contain any item of the violating set also contains
//! that one (sets are "all kept items with x ≥ anchor"), so dropping it is
//! never worse than dropping another — the classic exchange argument.

use super::fenwick::Fenwick;
use super::segtree::MaxTree;
use std::collections::BTreeSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Item {
    pub x: i64,
    pub y: i64,
}

/// How many items a set of span `L` (µs) may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    /// `limit` items per span shorter than `span` (at most `span` when `inclusive`).
    Window {
        limit: u64,
        span: i64,
        inclusive: bool,
    },
    /// `burst + L * count / per` items per span `L`, for `L <= max_span` when given.
    Linear {
        burst: u64,
        count: u64,
        per: i64,
        max_span: Option<i64>,
    },
}

/// Leaves of items not (or no longer) kept sit this far below any real value.
const NEG: i128 = -(1i128 << 100);

struct Index {
    /// `x` of every item, ascending.
    xs: Vec<i64>,
    /// Position of each item in `xs`.
    pos: Vec<usize>,
    /// The item at each position.
    at: Vec<usize>,
}

impl Index {
    fn new(items: &[Item]) -> Self {
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&i| (items[i].x, i));
        let mut pos = vec![0; items.len()];
        for (p, &i) in order.iter().enumerate() {
            pos[i] = p;
        }
        Index {
            xs: order.iter().map(|&i| items[i].x).collect(),
            pos,
            at: order,
        }
    }

    /// First position with `x >= v`.
    fn at_least(&self, v: i64) -> usize {
        self.xs.partition_point(|&x| x < v)
    }

    /// First position with `x > v`.
    fn above(&self, v: i64) -> usize {
        self.xs.partition_point(|&x| x <= v)
    }
}

fn order_by_y(items: &[Item]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| (items[i].y, items[i].x, i));
    order
}

/// A set that broke the bound while the greedy ran: proof of a violation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Break {
    /// The items kept at that moment that form the set (indices into the
    /// items given), the newest last: a smallest set the bound rejects.
    pub members: Vec<usize>,
    /// Every item (kept or dropped) inside the set's span: how far over it was.
    pub all: u64,
}

/// The first and the largest (most items in its span) of the breaks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Breaks {
    pub first: Option<Break>,
    pub largest: Option<Break>,
}

/// The fewest items to drop so that no set of items breaks `bound`.
pub(crate) fn min_removals(items: &[Item], bound: Bound, slack: i64) -> u64 {
    run(items, bound, slack, None)
}

/// [`min_removals`], and the sets that proved it.
pub(crate) fn witnessed(items: &[Item], bound: Bound, slack: i64) -> (u64, Breaks) {
    let mut breaks = Breaks::default();
    let removed = run(items, bound, slack, Some(&mut breaks));
    (removed, breaks)
}

fn run(items: &[Item], bound: Bound, slack: i64, mut breaks: Option<&mut Breaks>) -> u64 {
    if items.is_empty() {
        return 0;
    }
    let n = items.len();
    let index = Index::new(items);
    let mut counts = Fenwick::new(n);
    // Every item seen so far, dropped or not (only for witnesses).
    let mut seen = Fenwick::new(if breaks.is_some() { n } else { 0 });
    let mut kept: BTreeSet<(i64, usize)> = BTreeSet::new();
    // Linear bounds: leaf p holds C(p)·per + x_p·count, where C(p) counts
    // kept items with x ≥ x_p; a set anchored at x_p breaks the bound when
    // that exceeds burst·per + (max y + slack)·count.
    let mut tree = match bound {
        Bound::Linear { .. } => Some(MaxTree::new(n, NEG)),
        Bound::Window { .. } => None,
    };
    let mut removed = 0;
    let change = |tree: &mut Option<MaxTree>, counts: &mut Fenwick, x: i64, p: usize, sign: i64| {
        counts.add(p, sign);
        if let (Some(t), Bound::Linear { count, per, .. }) = (tree.as_mut(), bound) {
            let sign = sign as i128;
            t.add(0, index.above(x), sign * per as i128);
            t.add(p, p + 1, sign * (x as i128 * count as i128 - NEG));
        }
    };
    for j in order_by_y(items) {
        let Item { x, y } = items[j];
        let p = index.pos[j];
        change(&mut tree, &mut counts, x, p, 1);
        kept.insert((x, p));
        if breaks.is_some() {
            seen.add(p, 1);
        }
        let right = y.saturating_add(slack);
        loop {
            // The position of the broken set's anchor (its smallest x).
            let broken: Option<usize> = match bound {
                Bound::Window {
                    limit,
                    span,
                    inclusive,
                } => {
                    let start = if inclusive {
                        index.at_least(right - span)
                    } else {
                        index.above(right - span)
                    };
                    (counts.suffix(start) as u64 > limit).then_some(start)
                }
                Bound::Linear {
                    burst,
                    count,
                    per,
                    max_span,
                } => {
                    // Anchors at or right of `right` span 0: at most `burst`.
                    let zero = index.at_least(right);
                    let over_burst = counts.suffix(zero) as u64 > burst;
                    let from = max_span.map_or(0, |m| index.at_least(right - m));
                    let allowed = burst as i128 * per as i128 + right as i128 * count as i128;
                    let over_rate = tree
                        .as_ref()
                        .and_then(|t| t.first_above(from, zero, allowed));
                    over_rate.or(over_burst.then_some(zero))
                }
            };
            let Some(anchor) = broken else {
                break;
            };
            if let Some(b) = breaks.as_deref_mut() {
                note(b, &index, &kept, &seen, anchor);
            }
            let Some((dx, dp)) = kept.pop_last() else {
                break;
            };
            change(&mut tree, &mut counts, dx, dp, -1);
            removed += 1;
        }
    }
    removed
}

/// Keeps the break anchored at position `anchor` if it is the first or the
/// largest so far.
fn note(
    breaks: &mut Breaks,
    index: &Index,
    kept: &BTreeSet<(i64, usize)>,
    seen: &Fenwick,
    anchor: usize,
) {
    let all = seen.suffix(anchor) as u64;
    let first = breaks.first.is_none();
    if !first && breaks.largest.as_ref().is_some_and(|b| b.all >= all) {
        return;
    }
    let mut members: Vec<usize> = kept
        .range((index.xs[anchor], 0)..)
        .map(|&(_, p)| index.at[p])
        .collect();
    members.sort_unstable();
    let b = Break { members, all };
    if first {
        breaks.first = Some(b.clone());
    }
    breaks.largest = Some(b);
}

/// The most items any set of span shorter than `span` holds (nothing dropped).
pub(crate) fn peak(items: &[Item], span: i64, slack: i64) -> u64 {
    if items.is_empty() {
        return 0;
    }
    let index = Index::new(items);
    let mut counts = Fenwick::new(items.len());
    let mut best = 0;
    for j in order_by_y(items) {
        counts.add(index.pos[j], 1);
        let right = items[j].y.saturating_add(slack);
        best = best.max(counts.suffix(index.above(right - span)) as u64);
    }
    best
}

#[cfg(test)]
mod tests;
