//! The replica's clock: wall-clock microseconds since the Unix epoch plus a
//! configurable skew, so a scenario can make replicas disagree about time.
//! Wall time (not a monotonic clock) because fixed and segmented windows are
//! epoch-aligned, as most production limiters align them.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Default)]
pub struct Clock {
    skew_us: AtomicI64,
}

impl Clock {
    pub fn with_skew_us(skew_us: i64) -> Self {
        Clock {
            skew_us: AtomicI64::new(skew_us),
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
        wall_now_us() + self.skew_us()
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
    fn skew_shifts_the_clock() {
        let ahead = Clock::with_skew_us(400_000);
        let diff = ahead.now_us() - wall_now_us();
        assert!((399_000..=401_000).contains(&diff), "{diff}");
    }
}
