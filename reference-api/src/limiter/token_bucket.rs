//! Token bucket: `capacity` tokens, refilled continuously; an admit takes
//! one. Starts full, so a fresh key may burst `capacity` at once.

use super::contract::{Algorithm, Decision};
use crate::policy::Rate;

pub(super) struct TokenBucket {
    capacity: f64,
    /// Tokens per microsecond.
    rate: f64,
}

pub(super) struct State {
    tokens: f64,
    last: i64,
}

impl TokenBucket {
    pub(super) fn new(capacity: u64, refill: Rate) -> Self {
        TokenBucket {
            capacity: capacity as f64,
            rate: refill.count as f64 / refill.per_us as f64,
        }
    }
}

impl Algorithm for TokenBucket {
    type State = State;

    fn fresh(&self, now: i64) -> State {
        State {
            tokens: self.capacity,
            last: now,
        }
    }

    fn decide(&self, s: &mut State, now: i64) -> Decision {
        if now > s.last {
            s.tokens = (s.tokens + (now - s.last) as f64 * self.rate).min(self.capacity);
            s.last = now;
        }
        if s.tokens >= 1.0 {
            s.tokens -= 1.0;
            let until_full = ((self.capacity - s.tokens) / self.rate).ceil() as i64;
            Decision::allow(s.tokens.floor() as u64, until_full)
        } else {
            Decision::deny(((1.0 - s.tokens) / self.rate).ceil() as i64)
        }
    }

    fn idle_after(&self, s: &State) -> i64 {
        s.last + ((self.capacity - s.tokens) / self.rate).ceil() as i64
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::admits;
    use super::*;

    #[test]
    fn bursts_capacity_then_refills_at_rate() {
        // 3 tokens, one per 100 µs.
        let algo = TokenBucket::new(
            3,
            Rate {
                count: 1,
                per_us: 100,
            },
        );
        let got = admits(&algo, &[0, 0, 0, 0, 99, 100, 150, 200, 500, 500, 500, 500]);
        assert_eq!(
            got,
            [true, true, true, false, false, true, false, true, true, true, true, false]
        );
    }

    #[test]
    fn rejection_says_when_the_next_token_arrives() {
        let algo = TokenBucket::new(
            1,
            Rate {
                count: 1,
                per_us: 1_000,
            },
        );
        let mut s = algo.fresh(0);
        assert!(algo.decide(&mut s, 0).allowed);
        let d = algo.decide(&mut s, 250);
        assert!(!d.allowed);
        assert_eq!(d.retry_after_us, 750);
    }
}
