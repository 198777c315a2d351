//! The replica's clock: wall-clock microseconds since the Unix epoch plus a
//! configurable skew, so a scenario can make replicas disagree about time,
//! and optionally running fast or slow (`rate_ppm`), as a wall clock does
//! while NTP slews it.
//! Wall time (not a monotonic clock) because fixed and segmented windows are
//! epoch-aligned, as most production limiters align them.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Default)]
pub struct Clock {
    skew_us: AtomicI64,
    /// Parts per million the clock gains on the wall clock (negative: loses).
    rate_ppm: i64,
    /// Wall µs from which the rate counts.
    anchor_us: i64,
}

impl Clock {
    pub fn with_skew_us(skew_us: i64) -> Self {
        Clock::new(skew_us, 0)
    }

    /// A clock `skew_us` off the wall clock that gains `rate_ppm` on it
    /// from now on.
    pub fn new(skew_us: i64, rate_ppm: i64) -> Self {
        Clock {
            skew_us: AtomicI64::new(skew_us),
            rate_ppm,
            anchor_us: wall_now_us(),
        }
    }

    pub fn skew_us(&self) -> i64 {
        self.skew_us.load(Ordering::Relaxed)
    }

    /// Steps the clock (an admin action; decisions in flight keep the time
    /// they read).
    pub fn set_skew_us(&self, skew_us: i64) {
        self.skew_us.store(skew_us, Ordering::Relaxed);
    }

    pub fn now_us(&self) -> i64 {
        let wall = wall_now_us();
        let gained = (wall - self.anchor_us) as i128 * self.rate_ppm as i128 / 1_000_000;
        wall + gained as i64 + self.skew_us()
    }
}

/// Microseconds since the Unix epoch by the system clock.
pub fn wall_now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_makes_the_clock_gain_on_the_wall_clock() {
        let fast = Clock::new(0, 50_000);
        let slow = Clock::new(0, -50_000);
        std::thread::sleep(std::time::Duration::from_millis(200));
        let (f, w, s) = (fast.now_us(), wall_now_us(), slow.now_us());
        // 5% of at least 200 ms: at least 10 ms ahead, and behind.
        assert!(f - w >= 9_900, "{}", f - w);
        assert!(w - s >= 9_900, "{}", w - s);
    }

    #[test]
    fn skew_shifts_the_clock() {
        let ahead = Clock::with_skew_us(400_000);
        let diff = ahead.now_us() - wall_now_us();
        assert!((399_000..=401_000).contains(&diff), "{diff}");
    }
}
