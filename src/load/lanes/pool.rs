//! One target's connections in a lane, and how long its exchanges take.

use tokio::time::Instant;

/// One target's connections in a lane, and how long its exchanges take.
#[derive(Clone)]
pub(crate) struct Pool {
    pub(crate) open: usize,
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

    /// Answers take about as long as they ever did: nothing queues behind
    /// them, on the target or in this lane.
    pub(crate) fn unhurried(&self) -> bool {
        self.mean_us <= 2.0 * self.least_us + 50.0
    }
}
