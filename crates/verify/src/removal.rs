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
use super::positions::{Below, Positions};
use super::segtree::MaxTree;

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

/// The items by `x`: each item's position is its place in `(x, index)`
/// order, so the kept item with the largest `x` (the latest of equals) is
/// the kept one at the last position.
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
        let mut order: Vec<(i64, usize)> =
            items.iter().enumerate().map(|(i, it)| (it.x, i)).collect();
        // Stable, by x: equals stay in index order. (A key's requests come
        // nearly in order; the stable sort runs through sorted stretches
        // in one pass where an unstable one partitions them again.)
        order.sort_by_key(|&(x, _)| x);
        let mut pos = vec![0; items.len()];
        for (p, &(_, i)) in order.iter().enumerate() {
            pos[i] = p;
        }
        Index {
            xs: order.iter().map(|&(x, _)| x).collect(),
            pos,
            at: order.into_iter().map(|(_, i)| i).collect(),
        }
    }

    /// First position with `x > v`.
    fn above(&self, v: i64) -> usize {
        self.xs.partition_point(|&x| x <= v)
    }
}

/// A position in `xs` that only moves right, for thresholds that only
/// grow (items are taken in order of `y`, so the right end of every set
/// looked at never moves left): each step is amortized O(1), where a
/// binary search per item costs O(log n).
#[derive(Default)]
struct Cursor(usize);

impl Cursor {
    /// The first position with `x >= v` (`v` at least the last one asked).
    fn at_least(&mut self, xs: &[i64], v: i64) -> usize {
        while self.0 < xs.len() && xs[self.0] < v {
            self.0 += 1;
        }
        self.0
    }

    /// The first position with `x > v` (`v` at least the last one asked).
    fn above(&mut self, xs: &[i64], v: i64) -> usize {
        while self.0 < xs.len() && xs[self.0] <= v {
            self.0 += 1;
        }
        self.0
    }
}

/// The items as `(y, x, index)`, in order of `y` (then `x`, then index).
fn by_y(items: &[Item]) -> Vec<(i64, i64, usize)> {
    let mut order: Vec<(i64, i64, usize)> = items
        .iter()
        .enumerate()
        .map(|(i, it)| (it.y, it.x, i))
        .collect();
    // Stable: equals stay in index order (see `Index::new`).
    order.sort_by_key(|&(y, x, _)| (y, x));
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
    // The kept items, by position; how many lie below the place sets
    // are counted from.
    let mut kept = Positions::new(n);
    let mut below = Below::default();
    // Every item seen so far, dropped or not (only for witnesses).
    let mut seen = Fenwick::new(if breaks.is_some() { n } else { 0 });
    // Linear bounds: leaf p holds C(p)·per + x_p·count, where C(p) counts
    // kept items with x ≥ x_p; a set anchored at x_p breaks the bound when
    // that exceeds burst·per + (max y + slack)·count.
    let mut tree = match bound {
        Bound::Linear { .. } => Some(MaxTree::new(n, NEG)),
        Bound::Window { .. } => None,
    };
    let mut removed = 0;
    let change = |tree: &mut Option<MaxTree>, p: usize, sign: i128| {
        if let (Some(t), Bound::Linear { count, per, .. }) = (tree.as_mut(), bound) {
            let x = index.xs[p];
            t.add(0, index.above(x), sign * per as i128);
            t.add(p, p + 1, sign * (x as i128 * count as i128 - NEG));
        }
    };
    // Where the sets looked at start: each threshold below only grows.
    let (mut start, mut zero, mut from) = (Cursor::default(), Cursor::default(), Cursor::default());
    for (y, _, j) in by_y(items) {
        let p = index.pos[j];
        kept.insert(p);
        below.inserted(p);
        change(&mut tree, p, 1);
        if breaks.is_some() {
            seen.add(p, 1);
        }
        let right = y.saturating_add(slack);
        // Window: sets from the first x the window reaches back to.
        // Linear: anchors at or right of `right` span 0 (at most `burst`);
        // anchors from `from` on are in reach of `max_span`.
        let (edge, from) = match bound {
            Bound::Window {
                span, inclusive, ..
            } => (
                if inclusive {
                    start.at_least(&index.xs, right - span)
                } else {
                    start.above(&index.xs, right - span)
                },
                0,
            ),
            Bound::Linear { max_span, .. } => (
                zero.at_least(&index.xs, right),
                max_span.map_or(0, |m| from.at_least(&index.xs, right - m)),
            ),
        };
        loop {
            // Kept items from the edge on.
            let inside = below.from(&kept, edge) as u64;
            // The position of the broken set's anchor (its smallest x).
            let broken: Option<usize> = match bound {
                Bound::Window { limit, .. } => (inside > limit).then_some(edge),
                Bound::Linear {
                    burst, count, per, ..
                } => {
                    let allowed = burst as i128 * per as i128 + right as i128 * count as i128;
                    let over_rate = tree
                        .as_ref()
                        .and_then(|t| t.first_above(from, edge, allowed));
                    over_rate.or((inside > burst).then_some(edge))
                }
            };
            let Some(anchor) = broken else {
                break;
            };
            if let Some(b) = breaks.as_deref_mut() {
                note(b, &index, &kept, &seen, anchor);
            }
            // Drop the kept item with the largest x: the last kept position.
            let Some(last) = kept.last() else {
                break;
            };
            kept.remove(last);
            below.removed(last);
            change(&mut tree, last, -1);
            removed += 1;
        }
    }
    removed
}

/// Keeps the break anchored at position `anchor` if it is the first or the
/// largest so far.
fn note(breaks: &mut Breaks, index: &Index, kept: &Positions, seen: &Fenwick, anchor: usize) {
    let all = seen.suffix(anchor) as u64;
    let first = breaks.first.is_none();
    if !first && breaks.largest.as_ref().is_some_and(|b| b.all >= all) {
        return;
    }
    // The kept items at positions from the anchor on.
    let mut members: Vec<usize> =
        std::iter::successors(kept.next_from(anchor), |&p| kept.next_from(p + 1))
            .map(|p| index.at[p])
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
    let mut seen = Positions::new(items.len());
    let (mut start, mut below) = (Cursor::default(), Below::default());
    let mut best = 0;
    for (y, _, j) in by_y(items) {
        let p = index.pos[j];
        seen.insert(p);
        below.inserted(p);
        let right = y.saturating_add(slack);
        let edge = start.above(&index.xs, right - span);
        best = best.max(below.from(&seen, edge) as u64);
    }
    best
}

#[cfg(test)]
mod tests;
