//! What Redis answers, in the limiter's terms: a script's or the naive
//! path's `{allowed, remaining, reset, retry}` as a [`Decision`].

use crate::limiter::contract::Decision;

/// Turns a script's or naive path's `{allowed, remaining, reset, retry}`.
pub(super) fn decision(allowed: bool, remaining: i64, reset_us: i64, retry_us: i64) -> Decision {
    if allowed {
        Decision::allow(remaining.max(0) as u64, reset_us)
    } else {
        Decision::deny(retry_us)
    }
}
