//! Violations on a known window grid. When every decision read this
//! machine's wall clock, an epoch-aligned window's boundaries are known in
//! trace time; an admit whose whole `[sent, done]` lies inside one segment
//! surely counted there. More than `limit` such admits within `segments`
//! consecutive segments is a violation (a fixed window is one segment).

use super::removal::{Break, Breaks, Item};
use std::collections::{BTreeMap, VecDeque};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Grid {
    pub segment_us: i64,
    pub segments: i64,
    pub limit: u64,
}

/// The fewest admits to drop so no `segments` consecutive segments hold
/// more than `limit` sure admits. Left to right, each segment keeps as many
/// as its window still allows: keeping early is never worse, since an
/// earlier segment belongs to fewer of the windows still to come.
pub(crate) fn min_removals(items: &[Item], grid: Grid, epoch_offset: i64, slack: i64) -> u64 {
    witnessed(items, grid, epoch_offset, slack).0
}

/// [`min_removals`], and the windows that proved it: each break's members
/// are every sure admit of the window's segments.
pub(crate) fn witnessed(
    items: &[Item],
    grid: Grid,
    epoch_offset: i64,
    slack: i64,
) -> (u64, Breaks) {
    let seg = grid.segment_us.max(1);
    let mut sure: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for (i, it) in items.iter().enumerate() {
        let first = (it.x + epoch_offset - slack).div_euclid(seg);
        let last = (it.y + epoch_offset + slack).div_euclid(seg);
        if first == last {
            sure.entry(first).or_default().push(i);
        }
    }
    let mut window: VecDeque<(i64, u64)> = VecDeque::new();
    let (mut kept_in_window, mut removed) = (0u64, 0u64);
    let mut breaks = Breaks::default();
    for (&segment, members) in &sure {
        let count = members.len() as u64;
        while window
            .front()
            .is_some_and(|&(j, _)| j <= segment - grid.segments)
        {
            kept_in_window -= window.pop_front().map_or(0, |(_, k)| k);
        }
        let keep = count.min(grid.limit.saturating_sub(kept_in_window));
        if keep < count {
            let all: Vec<usize> = sure
                .range(segment - grid.segments + 1..=segment)
                .flat_map(|(_, m)| m.iter().copied())
                .collect();
            let b = Break {
                all: all.len() as u64,
                members: all,
            };
            if breaks.first.is_none() {
                breaks.first = Some(b.clone());
            }
            if breaks.largest.as_ref().map_or(true, |l| l.all < b.all) {
                breaks.largest = Some(b);
            }
        }
        removed += count - keep;
        kept_in_window += keep;
        window.push_back((segment, keep));
    }
    (removed, breaks)
}

/// The window of `grid` that ends with `segment`, in trace time (µs).
pub(crate) fn window_of(grid: Grid, epoch_offset: i64, item: &Item, slack: i64) -> (i64, i64) {
    let seg = grid.segment_us.max(1);
    let k = (item.x + epoch_offset - slack).div_euclid(seg);
    let end = (k + 1) * seg - epoch_offset;
    (end - grid.segments * seg, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(points: &[(i64, i64)]) -> Vec<Item> {
        points.iter().map(|&(x, y)| Item { x, y }).collect()
    }

    const FIXED: Grid = Grid {
        segment_us: 1_000,
        segments: 1,
        limit: 2,
    };

    #[test]
    fn more_than_the_limit_inside_one_aligned_window_is_a_violation() {
        assert_eq!(
            min_removals(&at(&[(100, 110), (500, 510), (900, 990)]), FIXED, 0, 0),
            1
        );
    }

    #[test]
    fn the_same_admits_across_a_boundary_are_fine() {
        // With the epoch offset the boundary falls at trace time 500.
        assert_eq!(
            min_removals(&at(&[(100, 110), (500, 510), (900, 990)]), FIXED, 500, 0),
            0
        );
    }

    #[test]
    fn an_admit_straddling_a_boundary_proves_nothing() {
        let t = at(&[(100, 110), (500, 510), (990, 1_010)]);
        assert_eq!(min_removals(&t, FIXED, 0, 0), 0);
        // Slack widens every interval: 995 - 5 slips below 1000 ... and back.
        let t = at(&[(100, 110), (500, 510), (990, 996)]);
        assert_eq!(min_removals(&t, FIXED, 0, 0), 1);
        assert_eq!(min_removals(&t, FIXED, 0, 5), 0);
    }

    #[test]
    fn segments_count_over_consecutive_windows() {
        // 2 per 4 segments of 250: segments 0..3 may hold 2 in all.
        let g = Grid {
            segment_us: 250,
            segments: 4,
            limit: 2,
        };
        let ok = at(&[(0, 1), (300, 301), (1_000, 1_001), (1_300, 1_301)]);
        assert_eq!(min_removals(&ok, g, 0, 0), 0);
        let bad = at(&[(0, 1), (300, 301), (700, 701), (1_000, 1_001)]);
        assert_eq!(min_removals(&bad, g, 0, 0), 1, "segments 0, 1, 2 hold 3");
    }

    /// The fewest sure admits to drop, by trying every subset.
    fn brute(items: &[Item], grid: Grid, epoch: i64, slack: i64) -> u64 {
        let seg = grid.segment_us;
        let sure: Vec<i64> = items
            .iter()
            .filter_map(|it| {
                let first = (it.x + epoch - slack).div_euclid(seg);
                let last = (it.y + epoch + slack).div_euclid(seg);
                (first == last).then_some(first)
            })
            .collect();
        let n = sure.len();
        (0u32..1 << n)
            .filter(|&mask| {
                let kept: Vec<i64> = (0..n)
                    .filter(|i| mask & (1 << i) != 0)
                    .map(|i| sure[i])
                    .collect();
                kept.iter().all(|&k| {
                    kept.iter()
                        .filter(|&&j| j > k - grid.segments && j <= k)
                        .count() as u64
                        <= grid.limit
                })
            })
            .map(|mask| (n - mask.count_ones() as usize) as u64)
            .min()
            .unwrap_or(0)
    }

    #[test]
    fn agrees_with_brute_force_on_random_traces() {
        use rand::rngs::SmallRng;
        use rand::{Rng, SeedableRng};
        let mut rng = SmallRng::seed_from_u64(7);
        for case in 0..2_000 {
            let grid = Grid {
                segment_us: rng.random_range(50..300),
                segments: rng.random_range(1..5),
                limit: rng.random_range(1..4),
            };
            let n = rng.random_range(0..12);
            let items: Vec<Item> = (0..n)
                .map(|_| {
                    let x = rng.random_range(0..2_000);
                    Item {
                        x,
                        y: x + rng.random_range(0..120),
                    }
                })
                .collect();
            let (epoch, slack) = (rng.random_range(0..500), rng.random_range(0..20));
            let (got, breaks) = witnessed(&items, grid, epoch, slack);
            assert_eq!(
                got,
                brute(&items, grid, epoch, slack),
                "case {case}: {grid:?} {items:?}"
            );
            assert_eq!(got > 0, breaks.first.is_some(), "case {case}");
        }
    }
}
