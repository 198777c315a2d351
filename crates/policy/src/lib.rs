//! The policy a limiter enforces, in engine units (microseconds, counts).
//! rlbench builds it from a scenario and hands it to replicas as JSON; the
//! reference API enforces it; the verifier judges against it. A crate of
//! its own, serde alone, so that the verifier can depend on it and on
//! nothing of the limiters it judges.

use serde::{Deserialize, Serialize};

/// `count` events per `per_us` microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rate {
    pub count: u64,
    pub per_us: u64,
}

impl Rate {
    /// Microseconds between two events at this rate (the GCRA emission interval).
    pub fn interval_us(&self) -> f64 {
        self.per_us as f64 / self.count as f64
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "algorithm", rename_all = "snake_case")]
pub enum Policy {
    /// At most `limit` admits in any window of `window_us` (a log of admit times).
    SlidingLog { limit: u64, window_us: u64 },
    /// The window split into `segments` epoch-aligned segments; a request is
    /// admitted while the last `segments` segments hold fewer than `limit`
    /// (ASP.NET Core's SlidingWindowRateLimiter with SegmentsPerWindow).
    SlidingWindow {
        limit: u64,
        window_us: u64,
        segments: u64,
    },
    /// At most `limit` admits per epoch-aligned window.
    FixedWindow { limit: u64, window_us: u64 },
    /// A bucket of `capacity` tokens, refilled continuously at `refill`.
    TokenBucket { capacity: u64, refill: Rate },
    /// Generic cell rate algorithm: `burst` admits at once, then one per
    /// emission interval of `rate`.
    Gcra { rate: Rate, burst: u64 },
    /// Two epoch-aligned fixed windows, the previous one weighted by how much
    /// of it still overlaps the sliding window (Cloudflare's approximation).
    SlidingCounter { limit: u64, window_us: u64 },
}

impl Policy {
    pub fn algorithm(&self) -> &'static str {
        match self {
            Policy::SlidingLog { .. } => "sliding_log",
            Policy::SlidingWindow { .. } => "sliding_window",
            Policy::FixedWindow { .. } => "fixed_window",
            Policy::TokenBucket { .. } => "token_bucket",
            Policy::Gcra { .. } => "gcra",
            Policy::SlidingCounter { .. } => "sliding_counter",
        }
    }

    /// The quota and the window it applies to, as the `RateLimit-Policy`
    /// header states them (`q` requests per `w`). For the bucket algorithms
    /// the window is the time a drained bucket takes to refill completely.
    pub fn quota(&self) -> (u64, u64) {
        match *self {
            Policy::SlidingLog { limit, window_us }
            | Policy::SlidingWindow {
                limit, window_us, ..
            }
            | Policy::FixedWindow { limit, window_us }
            | Policy::SlidingCounter { limit, window_us } => (limit, window_us),
            Policy::TokenBucket { capacity, refill } => {
                (capacity, (capacity as f64 * refill.interval_us()) as u64)
            }
            Policy::Gcra { rate, burst } => (burst, (burst as f64 * rate.interval_us()) as u64),
        }
    }

    /// One line a person can read, e.g. `sliding_log: 10 per 2s`.
    pub fn describe(&self) -> String {
        let d = |us: u64| humanize_us(us);
        match *self {
            Policy::SlidingLog { limit, window_us } => {
                format!("sliding_log: {limit} per {}", d(window_us))
            }
            Policy::SlidingWindow {
                limit,
                window_us,
                segments,
            } => format!(
                "sliding_window: {limit} per {} in {segments} segments",
                d(window_us)
            ),
            Policy::FixedWindow { limit, window_us } => {
                format!("fixed_window: {limit} per {}", d(window_us))
            }
            Policy::SlidingCounter { limit, window_us } => {
                format!("sliding_counter: {limit} per {}", d(window_us))
            }
            Policy::TokenBucket { capacity, refill } => format!(
                "token_bucket: capacity {capacity}, refill {} per {}",
                refill.count,
                d(refill.per_us)
            ),
            Policy::Gcra { rate, burst } => {
                format!("gcra: {} per {}, burst {burst}", rate.count, d(rate.per_us))
            }
        }
    }
}

fn humanize_us(us: u64) -> String {
    if us % 1_000_000 == 0 {
        format!("{}s", us / 1_000_000)
    } else if us % 1_000 == 0 {
        format!("{}ms", us / 1_000)
    } else {
        format!("{us}us")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_round_trips_through_json_with_its_algorithm_tag() {
        let p = Policy::Gcra {
            rate: Rate {
                count: 10,
                per_us: 1_000_000,
            },
            burst: 5,
        };
        let json = serde_json::to_string(&p).unwrap();
        assert!(json.contains("\"algorithm\":\"gcra\""), "{json}");
        assert_eq!(serde_json::from_str::<Policy>(&json).unwrap(), p);
    }

    #[test]
    fn quota_of_buckets_is_capacity_over_refill_time() {
        let p = Policy::TokenBucket {
            capacity: 20,
            refill: Rate {
                count: 10,
                per_us: 1_000_000,
            },
        };
        assert_eq!(p.quota(), (20, 2_000_000));
        assert_eq!(p.describe(), "token_bucket: capacity 20, refill 10 per 1s");
    }
}
