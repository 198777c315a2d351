//! Fixed window: one counter per epoch-aligned window. Cheap, and admits up
//! to twice the limit across a window boundary — which rlbench shows.

use super::contract::{Algorithm, Decision};

pub(super) struct FixedWindow {
    limit: u64,
    window: i64,
}

pub(super) struct State {
    index: i64,
    count: u64,
}

impl FixedWindow {
    pub(super) fn new(limit: u64, window_us: u64) -> Self {
        FixedWindow {
            limit,
            window: (window_us as i64).max(1),
        }
    }
}

impl Algorithm for FixedWindow {
    type State = State;

    fn fresh(&self, now: i64) -> State {
        State {
            index: now.div_euclid(self.window),
            count: 0,
        }
    }

    fn decide(&self, state: &mut State, now: i64) -> Decision {
        let index = now.div_euclid(self.window);
        if index > state.index {
            *state = State { index, count: 0 };
        }
        let reset = (state.index + 1) * self.window - now;
        if state.count < self.limit {
            state.count += 1;
            Decision::allow(self.limit - state.count, reset)
        } else {
            Decision::deny(reset)
        }
    }

    fn idle_after(&self, state: &State) -> i64 {
        // A window past its end: a request stamped in it may arrive late.
        (state.index + 2) * self.window
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{admits, count};
    use super::*;

    #[test]
    fn counts_reset_at_aligned_boundaries() {
        let algo = FixedWindow::new(2, 1_000);
        let got = admits(&algo, &[500, 600, 700, 999, 1_000, 1_001, 1_002]);
        assert_eq!(got, [true, true, false, false, true, true, false]);
    }

    #[test]
    fn a_late_request_from_the_previous_window_counts_in_the_current_one() {
        let algo = FixedWindow::new(2, 1_000);
        assert_eq!(admits(&algo, &[1_000, 999, 1_001]), [true, true, false]);
    }

    #[test]
    fn admits_twice_the_limit_across_a_boundary() {
        let algo = FixedWindow::new(10, 1_000);
        let times: Vec<i64> = (0..10).map(|i| 990 + i).chain(1_000..1_010).collect();
        assert_eq!(count(&admits(&algo, &times)), 20);
    }
}
