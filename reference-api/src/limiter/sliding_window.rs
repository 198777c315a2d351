//! Segmented sliding window (ASP.NET Core's SlidingWindowRateLimiter): the
//! window is split into `segments` epoch-aligned segments; a request is
//! admitted while the current segment and the `segments - 1` before it hold
//! fewer than `limit` admits. More segments, closer to a true sliding log.

use super::contract::{Algorithm, Decision};

pub(super) struct SlidingWindow {
    limit: u64,
    segments: i64,
    segment: i64,
}

pub(super) struct State {
    counts: Vec<u64>,
    /// Index of the newest segment the counts describe.
    last: i64,
}

impl SlidingWindow {
    pub(super) fn new(limit: u64, window_us: u64, segments: u64) -> Self {
        let segments = segments.max(1) as i64;
        SlidingWindow {
            limit,
            segments,
            segment: (window_us as i64 / segments).max(1),
        }
    }

    fn slot(&self, index: i64) -> usize {
        index.rem_euclid(self.segments) as usize
    }

    fn advance(&self, state: &mut State, index: i64) {
        if index <= state.last {
            return;
        }
        let first = (state.last + 1).max(index - self.segments + 1);
        for i in first..=index {
            let slot = self.slot(i);
            state.counts[slot] = 0;
        }
        state.last = index;
    }
}

impl Algorithm for SlidingWindow {
    type State = State;

    fn fresh(&self, now: i64) -> State {
        State {
            counts: vec![0; self.segments as usize],
            last: now.div_euclid(self.segment),
        }
    }

    fn decide(&self, state: &mut State, now: i64) -> Decision {
        self.advance(state, now.div_euclid(self.segment));
        let current = state.last;
        let total: u64 = state.counts.iter().sum();
        // The quota comes back segment by segment, oldest first: find when
        // enough admits have left for one more to fit.
        let need = (total + 1).saturating_sub(self.limit).max(1);
        let mut freed = 0;
        let mut back_at = (current + self.segments) * self.segment;
        for i in (current - self.segments + 1)..=current {
            freed += state.counts[self.slot(i)];
            if freed >= need {
                back_at = (i + self.segments) * self.segment;
                break;
            }
        }
        if total < self.limit {
            let slot = self.slot(current);
            state.counts[slot] += 1;
            Decision::allow(self.limit - total - 1, back_at - now)
        } else {
            Decision::deny(back_at - now)
        }
    }

    fn idle_after(&self, state: &State) -> i64 {
        // A window past the last count: a request stamped earlier may arrive late.
        (state.last + 2 * self.segments) * self.segment
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::admits;
    use super::*;

    #[test]
    fn one_segment_is_a_fixed_window() {
        let algo = SlidingWindow::new(2, 1_000, 1);
        let got = admits(&algo, &[0, 1, 2, 999, 1_000, 1_001, 1_002]);
        assert_eq!(got, [true, true, false, false, true, true, false]);
    }

    #[test]
    fn quota_returns_when_the_oldest_segment_slides_out() {
        // 4 per 1000 µs in 4 segments of 250 µs.
        let algo = SlidingWindow::new(4, 1_000, 4);
        let mut s = algo.fresh(0);
        for t in [0, 10, 260, 270] {
            assert!(algo.decide(&mut s, t).allowed, "t={t}");
        }
        let d = algo.decide(&mut s, 900);
        assert!(!d.allowed);
        assert_eq!(d.retry_after_us, 100, "segment 0 leaves at 1000");
        assert!(!algo.decide(&mut s, 999).allowed);
        assert!(algo.decide(&mut s, 1_000).allowed);
        assert!(algo.decide(&mut s, 1_001).allowed);
        assert!(!algo.decide(&mut s, 1_249).allowed);
        assert!(algo.decide(&mut s, 1_250).allowed);
    }

    #[test]
    fn a_long_pause_clears_every_segment() {
        let algo = SlidingWindow::new(1, 1_000, 10);
        let mut s = algo.fresh(0);
        assert!(algo.decide(&mut s, 0).allowed);
        assert!(!algo.decide(&mut s, 999).allowed);
        assert!(algo.decide(&mut s, 50_000).allowed);
    }
}
