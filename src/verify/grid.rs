//! Violations on a known window grid. When every decision read this
//! machine's wall clock, an epoch-aligned window's boundaries are known in
//! trace time; an admit whose whole `[sent, done]` lies inside one segment
//! surely counted there. More than `limit` such admits within `segments`
//! consecutive segments is a violation (a fixed window is one segment).

use super::removal::Item;
use std::collections::{BTreeMap, VecDeque};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    pub segment_us: i64,
    pub segments: i64,
    pub limit: u64,
}

/// The fewest admits to drop so no `segments` consecutive segments hold
/// more than `limit` sure admits. Left to right, each segment keeps as many
/// as its window still allows: keeping early is never worse, since an
/// earlier segment belongs to fewer of the windows still to come.
pub fn min_removals(items: &[Item], grid: Grid, epoch_offset: i64, slack: i64) -> u64 {
    let seg = grid.segment_us.max(1);
    let mut counts: BTreeMap<i64, u64> = BTreeMap::new();
    for it in items {
        let first = (it.x + epoch_offset - slack).div_euclid(seg);
        let last = (it.y + epoch_offset + slack).div_euclid(seg);
        if first == last {
            *counts.entry(first).or_default() += 1;
        }
    }
    let mut window: VecDeque<(i64, u64)> = VecDeque::new();
    let (mut kept_in_window, mut removed) = (0u64, 0u64);
    for (segment, count) in counts {
        while window
            .front()
            .is_some_and(|&(j, _)| j <= segment - grid.segments)
        {
            kept_in_window -= window.pop_front().map_or(0, |(_, k)| k);
        }
        let keep = count.min(grid.limit.saturating_sub(kept_in_window));
        removed += count - keep;
        kept_in_window += keep;
        window.push_back((segment, keep));
    }
    removed
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
}
