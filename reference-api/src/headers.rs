//! Rate-limit response headers: the IETF draft fields `RateLimit-Policy`
//! and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-10, structured
//! fields), the de-facto `X-RateLimit-Limit` / `-Remaining` / `-Reset`, and
//! `Retry-After` in whole seconds on a 429. Every wait is delta seconds,
//! rounded up: never a Unix time, which needs the client's clock to agree.

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

/// `X-RateLimit-Limit`: the quota alone (its window is not said).
pub fn x_ratelimit_limit(policy: &Policy) -> String {
    policy.quota().0.to_string()
}

/// `X-RateLimit-Remaining` and `X-RateLimit-Reset` (delta seconds, as the
/// draft's `t`; GitHub sends a Unix time instead, which rlbench reads too).
pub fn x_ratelimit(decision: &Decision) -> [(&'static str, String); 2] {
    [
        ("x-ratelimit-remaining", decision.remaining.to_string()),
        (
            "x-ratelimit-reset",
            ceil_secs(decision.reset_us).to_string(),
        ),
    ]
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
        assert_eq!(x_ratelimit_limit(&p), "10");
        assert_eq!(
            x_ratelimit(&d),
            [
                ("x-ratelimit-remaining", "0".to_string()),
                ("x-ratelimit-reset", "12".to_string())
            ]
        );
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
