//! Rate-limit response headers: the IETF draft fields `RateLimit-Policy`
//! and `RateLimit` (draft-ietf-httpapi-ratelimit-headers, structured
//! fields), and `Retry-After` in whole seconds on a 429.

use crate::limiter::Decision;
use crate::policy::Policy;

pub const POLICY_NAME: &str = "default";

/// Seconds, rounded up: a client that waits this long is never early.
pub fn ceil_secs(us: u64) -> u64 {
    us.div_ceil(1_000_000)
}

/// `"default";q=10;w=60`
pub fn ratelimit_policy(policy: &Policy) -> String {
    let (quota, window_us) = policy.quota();
    format!(
        "\"{POLICY_NAME}\";q={quota};w={}",
        ceil_secs(window_us).max(1)
    )
}

/// `"default";r=0;t=12`
pub fn ratelimit(decision: &Decision) -> String {
    format!(
        "\"{POLICY_NAME}\";r={};t={}",
        decision.remaining,
        ceil_secs(decision.reset_us)
    )
}

/// `Retry-After` delta-seconds, at least 1 so a client never retries at once.
pub fn retry_after(decision: &Decision) -> String {
    ceil_secs(decision.retry_after_us).max(1).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_follow_the_draft_syntax() {
        let p = Policy::SlidingLog {
            limit: 10,
            window_us: 60_000_000,
        };
        assert_eq!(ratelimit_policy(&p), "\"default\";q=10;w=60");
        let d = Decision {
            allowed: false,
            remaining: 0,
            reset_us: 11_200_000,
            retry_after_us: 11_200_000,
        };
        assert_eq!(ratelimit(&d), "\"default\";r=0;t=12");
        assert_eq!(retry_after(&d), "12");
    }

    #[test]
    fn sub_second_waits_round_up_to_one_second() {
        let d = Decision {
            allowed: false,
            remaining: 0,
            reset_us: 1,
            retry_after_us: 1,
        };
        assert_eq!(retry_after(&d), "1");
    }
}
