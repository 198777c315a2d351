//! Limiters: the decision type every algorithm returns and the in-process
//! ("local") limiter that keeps per-key state in this replica's memory —
//! correct on one replica, a fake global limit on several.

mod fixed_window;
mod gcra;
pub mod redis_backed;
mod sliding_counter;
mod sliding_log;
mod sliding_window;
mod store;
mod token_bucket;

use crate::policy::Policy;
use store::Store;

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
}

struct Keyed<A: Algorithm> {
    algorithm: A,
    store: Store<A::State>,
}

impl<A: Algorithm> LocalLimiter for Keyed<A> {
    fn decide(&self, key: &str, now: i64) -> Decision {
        self.store
            .with_state(key, now, &self.algorithm)
            .unwrap_or_else(|| Decision::deny(1_000_000))
    }

    fn live_keys(&self) -> usize {
        self.store.len()
    }
}

/// The in-process limiter for `policy`, holding at most `max_keys` live keys.
pub fn local(policy: &Policy, max_keys: usize) -> Box<dyn LocalLimiter> {
    fn boxed<A: Algorithm>(algorithm: A, max_keys: usize) -> Box<dyn LocalLimiter> {
        Box::new(Keyed {
            algorithm,
            store: Store::new(max_keys),
        })
    }
    match *policy {
        Policy::SlidingLog { limit, window_us } => {
            boxed(sliding_log::SlidingLog::new(limit, window_us), max_keys)
        }
        Policy::SlidingWindow {
            limit,
            window_us,
            segments,
        } => boxed(
            sliding_window::SlidingWindow::new(limit, window_us, segments),
            max_keys,
        ),
        Policy::FixedWindow { limit, window_us } => {
            boxed(fixed_window::FixedWindow::new(limit, window_us), max_keys)
        }
        Policy::TokenBucket { capacity, refill } => {
            boxed(token_bucket::TokenBucket::new(capacity, refill), max_keys)
        }
        Policy::Gcra { rate, burst } => boxed(gcra::Gcra::new(rate, burst), max_keys),
        Policy::SlidingCounter { limit, window_us } => boxed(
            sliding_counter::SlidingCounter::new(limit, window_us),
            max_keys,
        ),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::Algorithm;

    /// Runs `algorithm` over request times (µs) for one key; returns which were admitted.
    pub fn admits<A: Algorithm>(algorithm: &A, times: &[i64]) -> Vec<bool> {
        let mut state = algorithm.fresh(times[0]);
        times
            .iter()
            .map(|&t| algorithm.decide(&mut state, t).allowed)
            .collect()
    }

    pub fn count(admits: &[bool]) -> usize {
        admits.iter().filter(|a| **a).count()
    }
}
