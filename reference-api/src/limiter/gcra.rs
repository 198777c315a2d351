//! GCRA (virtual scheduling): a theoretical arrival time advances one
//! emission interval per admit; a request is admitted unless it comes more
//! than the burst tolerance ahead of it. `burst` admits fit at once.

use super::contract::{Algorithm, Decision};
use crate::policy::Rate;

pub(super) struct Gcra {
    interval: f64,
    tolerance: f64,
}

pub(super) struct State {
    tat: f64,
}

impl Gcra {
    pub(super) fn new(rate: Rate, burst: u64) -> Self {
        let interval = rate.interval_us();
        Gcra {
            interval,
            tolerance: burst.saturating_sub(1) as f64 * interval,
        }
    }
}

impl Algorithm for Gcra {
    type State = State;

    fn fresh(&self, now: i64) -> State {
        State { tat: now as f64 }
    }

    fn decide(&self, s: &mut State, now: i64) -> Decision {
        let now_f = now as f64;
        let tat = s.tat.max(now_f);
        let allow_at = tat - self.tolerance;
        if now_f < allow_at {
            return Decision::deny((allow_at - now_f).ceil() as i64);
        }
        s.tat = tat + self.interval;
        let room = (now_f + self.tolerance - s.tat) / self.interval;
        let remaining = if room < 0.0 {
            0
        } else {
            room.floor() as u64 + 1
        };
        Decision::allow(remaining, (s.tat - now_f).ceil() as i64)
    }

    fn idle_after(&self, s: &State) -> i64 {
        s.tat.ceil() as i64
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::admits;
    use super::*;

    #[test]
    fn burst_at_once_then_one_per_interval() {
        let algo = Gcra::new(
            Rate {
                count: 1,
                per_us: 100,
            },
            3,
        );
        let got = admits(
            &algo,
            &[0, 0, 0, 0, 99, 100, 150, 200, 1_000, 1_000, 1_000, 1_000],
        );
        assert_eq!(
            got,
            [true, true, true, false, false, true, false, true, true, true, true, false]
        );
    }

    #[test]
    fn remaining_counts_down_the_burst() {
        let algo = Gcra::new(
            Rate {
                count: 10,
                per_us: 1_000,
            },
            3,
        );
        let mut s = algo.fresh(0);
        let r: Vec<u64> = (0..3).map(|_| algo.decide(&mut s, 0).remaining).collect();
        assert_eq!(r, [2, 1, 0]);
        let d = algo.decide(&mut s, 0);
        assert!(!d.allowed);
        assert_eq!(d.retry_after_us, 100);
    }
}
