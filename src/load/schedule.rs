//! When each request should leave: the open-loop schedule. Pure arithmetic
//! on offsets from the start, so it is tested without sleeping.

use std::time::Duration;

/// `rate` requests per second, evenly spaced, for `duration`.
#[derive(Clone, Copy, Debug)]
pub struct ConstantRate {
    rate: f64,
    duration: Duration,
}

impl ConstantRate {
    pub fn new(rate: f64, duration: Duration) -> Self {
        ConstantRate { rate, duration }
    }

    /// Intended send offset of request `k` (0-based).
    pub fn at(&self, k: u64) -> Duration {
        Duration::from_secs_f64(k as f64 / self.rate)
    }

    /// How many requests fall strictly inside the duration.
    pub fn total(&self) -> u64 {
        let n = (self.duration.as_secs_f64() * self.rate).ceil() as u64;
        // Guard against rounding: keep only those that start before the end.
        (n.saturating_sub(1)..=n)
            .rev()
            .find(|&k| k == 0 || self.at(k - 1) < self.duration)
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_evenly_spaced() {
        let s = ConstantRate::new(400.0, Duration::from_secs(2));
        assert_eq!(s.at(0), Duration::ZERO);
        assert_eq!(s.at(1), Duration::from_micros(2_500));
        assert_eq!(s.at(400), Duration::from_secs(1));
        assert_eq!(s.total(), 800);
    }

    #[test]
    fn totals_round_sensibly() {
        assert_eq!(
            ConstantRate::new(3.0, Duration::from_millis(1_000)).total(),
            3
        );
        assert_eq!(
            ConstantRate::new(3.0, Duration::from_millis(1_001)).total(),
            4
        );
        assert_eq!(ConstantRate::new(0.5, Duration::from_secs(3)).total(), 2);
        assert_eq!(
            ConstantRate::new(1_000.0, Duration::from_millis(1)).total(),
            1
        );
    }
}
