//! Sliding counter: two epoch-aligned fixed windows; the previous window's
//! count is weighted by the share of it the sliding window still covers.
//! Admits while `previous * weight + current + 1 <= limit`.

use super::contract::{Algorithm, Decision};

pub(super) struct SlidingCounter {
    limit: u64,
    window: i64,
}

pub(super) struct State {
    index: i64,
    previous: u64,
    current: u64,
}

impl SlidingCounter {
    pub(super) fn new(limit: u64, window_us: u64) -> Self {
        SlidingCounter {
            limit,
            window: (window_us as i64).max(1),
        }
    }
}

impl Algorithm for SlidingCounter {
    type State = State;

    fn fresh(&self, now: i64) -> State {
        State {
            index: now.div_euclid(self.window),
            previous: 0,
            current: 0,
        }
    }

    fn decide(&self, s: &mut State, now: i64) -> Decision {
        // A request stamped before the current window (threads take their
        // timestamps before the lock) is judged at that window's start.
        let now = now.max(s.index * self.window);
        let index = now.div_euclid(self.window);
        if index == s.index + 1 {
            s.previous = s.current;
            s.current = 0;
            s.index = index;
        } else if index > s.index + 1 {
            *s = self.fresh(now);
        }
        let elapsed = (now - index * self.window) as i128;
        let w = self.window as i128;
        // Everything in units of 1/window to stay in integers.
        let used = s.previous as i128 * (w - elapsed) + s.current as i128 * w;
        let limit = self.limit as i128 * w;
        let window_end = (index + 1) * self.window - now;
        if used + w <= limit {
            s.current += 1;
            let remaining = ((limit - used - w) / w) as u64;
            Decision::allow(remaining, window_end)
        } else {
            // Waiting helps only while the previous window's weight still falls.
            let retry = if s.previous == 0 || (s.current + 1) > self.limit {
                window_end
            } else {
                let need = used + w - limit; // weight units to shed
                ((need + s.previous as i128 - 1) / s.previous as i128) as i64
            };
            Decision::deny(retry.min(window_end).max(1))
        }
    }

    fn idle_after(&self, s: &State) -> i64 {
        (s.index + 2) * self.window
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{admits, count};
    use super::*;

    #[test]
    fn a_late_request_from_the_previous_window_does_not_reset_the_count() {
        let algo = SlidingCounter::new(2, 1_000);
        let mut s = algo.fresh(1_000);
        assert!(algo.decide(&mut s, 1_000).allowed);
        assert!(algo.decide(&mut s, 999).allowed, "counted in window 1");
        assert!(!algo.decide(&mut s, 1_001).allowed, "window 1 holds 2 of 2");
    }

    #[test]
    fn first_window_is_a_plain_counter() {
        let algo = SlidingCounter::new(3, 1_000);
        assert_eq!(admits(&algo, &[0, 1, 2, 3]), [true, true, true, false]);
    }

    #[test]
    fn previous_window_weighs_by_remaining_overlap() {
        // 10 per 1000 µs; 10 admitted late in window 0.
        let algo = SlidingCounter::new(10, 1_000);
        let mut s = algo.fresh(900);
        for t in 900..910 {
            assert!(algo.decide(&mut s, t).allowed);
        }
        // At 1500, previous weighs 0.5: 5 + current + 1 <= 10 holds for current 0..=4.
        let later: Vec<i64> = vec![1_500; 6];
        let got: Vec<bool> = later
            .iter()
            .map(|&t| algo.decide(&mut s, t).allowed)
            .collect();
        assert_eq!(count(&got), 5);
    }
}
