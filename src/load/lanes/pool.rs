//! One target's connections in a lane, and how long its exchanges take.

use super::tuning::{FLOOR, HEADROOM};
use tokio::time::Instant;

/// One target's connections in a lane, and how long its exchanges take.
#[derive(Clone)]
pub(crate) struct Pool {
    pub(crate) open: usize,
    /// How many the growth rule may open (see `tuning::HEADROOM`).
    pub(crate) cap: usize,
    /// Opened ahead of their requests and still connecting.
    pub(crate) opening: usize,
    /// When the last connection was added.
    pub(crate) grown: Instant,
    /// Exchanges' service time (µs): a moving mean, and the least seen.
    pub(crate) mean_us: f64,
    pub(crate) least_us: f64,
}

impl Pool {
    pub(crate) fn new() -> Self {
        Pool {
            open: 0,
            cap: FLOOR,
            opening: 0,
            grown: Instant::now(),
            mean_us: 0.0,
            least_us: f64::INFINITY,
        }
    }

    pub(crate) fn took(&mut self, us: u64) {
        let us = us as f64;
        self.least_us = self.least_us.min(us);
        self.mean_us = if self.mean_us == 0.0 {
            us
        } else {
            self.mean_us + (us - self.mean_us) / 64.0
        };
    }

    /// Sets the growth cap for `coming` requests due within `within`.
    pub(crate) fn expect(&mut self, coming: usize, within: std::time::Duration) {
        let in_flight = coming as f64 * self.mean_us / within.as_micros().max(1) as f64;
        self.cap = FLOOR + (HEADROOM * in_flight).ceil() as usize;
    }

    /// Answers take about as long as they ever did: nothing queues behind
    /// them, on the target or in this lane.
    pub(crate) fn unhurried(&self) -> bool {
        self.mean_us <= 2.0 * self.least_us + 50.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_cap_follows_the_rate_times_the_service_time() {
        let mut pool = Pool::new();
        // No answer yet: the floor.
        pool.expect(750, Duration::from_millis(50));
        assert_eq!(pool.cap, FLOOR);
        // 15,000 requests/s at 100 µs: 1.5 in flight, 6 of headroom.
        pool.took(100);
        pool.expect(750, Duration::from_millis(50));
        assert_eq!(pool.cap, FLOOR + 6);
        // 500 requests/s at 50 ms: 25 in flight (the slow target).
        let mut slow = Pool::new();
        slow.took(50_000);
        slow.expect(25, Duration::from_millis(50));
        assert_eq!(slow.cap, FLOOR + 100);
        // Nothing coming: the floor.
        slow.expect(0, Duration::from_millis(50));
        assert_eq!(slow.cap, FLOOR);
    }

    #[test]
    fn a_target_is_unhurried_while_answers_take_what_they_always_did() {
        let mut pool = Pool::new();
        pool.took(100);
        assert!(pool.unhurried());
        for _ in 0..200 {
            pool.took(2_000);
        }
        assert!(!pool.unhurried());
    }
}
