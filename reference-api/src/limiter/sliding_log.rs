//! Sliding log: remember every admit time; admit while fewer than `limit`
//! admits lie in the window `(now - window, now]`. Exact, memory O(limit).

use super::contract::{Algorithm, Decision};
use std::collections::VecDeque;

pub(super) struct SlidingLog {
    limit: u64,
    window: i64,
}

impl SlidingLog {
    pub(super) fn new(limit: u64, window_us: u64) -> Self {
        SlidingLog {
            limit,
            window: window_us as i64,
        }
    }
}

impl Algorithm for SlidingLog {
    type State = VecDeque<i64>;

    fn fresh(&self, _now: i64) -> Self::State {
        VecDeque::new()
    }

    fn decide(&self, log: &mut Self::State, now: i64) -> Decision {
        while log.front().is_some_and(|&t| t <= now - self.window) {
            log.pop_front();
        }
        let oldest_expiry = |log: &VecDeque<i64>| log.front().map_or(0, |&t| t + self.window - now);
        if (log.len() as u64) < self.limit {
            log.push_back(now);
            let remaining = self.limit - log.len() as u64;
            Decision::allow(remaining, oldest_expiry(log))
        } else {
            Decision::deny(oldest_expiry(log))
        }
    }

    fn idle_after(&self, log: &Self::State) -> i64 {
        log.back().map_or(i64::MIN, |&t| t + self.window)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::admits;
    use super::*;

    #[test]
    fn admits_limit_then_waits_a_full_window_after_the_oldest() {
        let algo = SlidingLog::new(3, 1_000);
        let got = admits(&algo, &[0, 10, 20, 30, 999, 1_000, 1_009, 1_010, 1_011]);
        assert_eq!(
            got,
            [true, true, true, false, false, true, false, true, false]
        );
    }

    #[test]
    fn rejection_says_when_the_oldest_admit_leaves_the_window() {
        let algo = SlidingLog::new(1, 1_000);
        let mut log = algo.fresh(0);
        assert!(algo.decide(&mut log, 100).allowed);
        let d = algo.decide(&mut log, 400);
        assert!(!d.allowed);
        assert_eq!(d.retry_after_us, 700);
        assert_eq!(algo.idle_after(&log), 1_100);
    }
}
