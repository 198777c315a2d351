//! Limiters: the in-process ("local") limiter that keeps per-key state in
//! this replica's memory — correct on one replica, a fake global limit on
//! several — built here from each algorithm. The contract they all keep
//! (the decision, the traits) is `contract.rs`, re-exported here.

mod contract;
mod fixed_window;
mod gcra;
pub mod redis_backed;
mod sliding_counter;
mod sliding_log;
mod sliding_window;
mod store;
#[cfg(test)]
mod testing;
mod token_bucket;

use crate::policy::Policy;
pub use contract::{Algorithm, Decision, LocalLimiter};
use store::Store;

struct Keyed<A: Algorithm> {
    algorithm: A,
    store: Store<A::State>,
    refused: std::sync::atomic::AtomicU64,
}

impl<A: Algorithm> LocalLimiter for Keyed<A> {
    fn decide(&self, key: &str, now: i64) -> Decision {
        self.store
            .with_state(key, now, &self.algorithm)
            .unwrap_or_else(|| {
                self.refused
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Decision::deny(1_000_000)
            })
    }

    fn live_keys(&self) -> usize {
        self.store.len()
    }

    fn refused_keys(&self) -> u64 {
        self.refused.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The in-process limiter for `policy`, holding at most `max_keys` live keys.
pub fn local(policy: &Policy, max_keys: usize) -> Box<dyn LocalLimiter> {
    fn boxed<A: Algorithm>(algorithm: A, max_keys: usize) -> Box<dyn LocalLimiter> {
        Box::new(Keyed {
            algorithm,
            store: Store::new(max_keys),
            refused: Default::default(),
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
