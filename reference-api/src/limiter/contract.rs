//! The limiter contract: the decision every algorithm returns and the
//! traits an algorithm and a local limiter implement. The algorithms
//! (`fixed_window.rs`, …) and the Redis-backed limiters import it from
//! here; only `mod.rs`, which builds them, imports the algorithms.

/// One admission decision plus what the rate-limit headers need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// Requests still admissible right now after this decision.
    pub remaining: u64,
    /// Microseconds until the quota is fully or partly restored (`t` of `RateLimit`).
    pub reset_us: u64,
    /// Microseconds until a rejected request could be admitted (`Retry-After`).
    pub retry_after_us: u64,
}

impl Decision {
    pub(crate) fn allow(remaining: u64, reset_us: i64) -> Self {
        Decision {
            allowed: true,
            remaining,
            reset_us: reset_us.max(0) as u64,
            retry_after_us: 0,
        }
    }

    pub(crate) fn deny(retry_after_us: i64) -> Self {
        let retry = retry_after_us.max(1) as u64;
        Decision {
            allowed: false,
            remaining: 0,
            reset_us: retry,
            retry_after_us: retry,
        }
    }
}

/// A rate-limiting algorithm over the state of one key. Time is the
/// replica clock in microseconds.
pub trait Algorithm: Send + Sync + 'static {
    type State: Send + 'static;
    fn fresh(&self, now: i64) -> Self::State;
    fn decide(&self, state: &mut Self::State, now: i64) -> Decision;
    /// From this time on the state is equivalent to a fresh one and may be dropped.
    fn idle_after(&self, state: &Self::State) -> i64;
}

/// A per-key limiter whose whole state lives in this process.
pub trait LocalLimiter: Send + Sync {
    fn decide(&self, key: &str, now: i64) -> Decision;
    fn live_keys(&self) -> usize;
    /// New keys refused because `max_keys` live ones were kept (the safe
    /// direction: a live count evicted would be forgotten, and admitted
    /// again).
    fn refused_keys(&self) -> u64;
}
