//! The atomic path: one script from `lua/` per decision, run by EVALSHA.
//! redis-rs loads the script and retries on NOSCRIPT (the script did not
//! run, so the retry cannot double-count); nothing else is ever retried.

use super::{decision, Decision};
use crate::policy::Policy;
use redis::aio::ConnectionManager;
use redis::Script;

pub const SLIDING_LOG: &str = include_str!("../../../../lua/sliding_log.lua");
pub const FIXED_WINDOW: &str = include_str!("../../../../lua/fixed_window.lua");
pub const SLIDING_WINDOW: &str = include_str!("../../../../lua/sliding_window.lua");
pub const SLIDING_COUNTER: &str = include_str!("../../../../lua/sliding_counter.lua");
pub const TOKEN_BUCKET: &str = include_str!("../../../../lua/token_bucket.lua");
pub const GCRA: &str = include_str!("../../../../lua/gcra.lua");

/// A policy's script and its fixed arguments: every script takes
/// `ARGV = {param1, param2, now or "", param4}`.
pub struct PolicyScript {
    script: Script,
    first: u64,
    second: u64,
    /// `None` for the sliding log, whose 4th argument is a unique member.
    fourth: Option<u64>,
}

impl PolicyScript {
    pub fn new(policy: &Policy) -> Self {
        let (source, first, second, fourth) = match *policy {
            Policy::SlidingLog { limit, window_us } => (SLIDING_LOG, limit, window_us, None),
            Policy::FixedWindow { limit, window_us } => (FIXED_WINDOW, limit, window_us, Some(0)),
            Policy::SlidingWindow {
                limit,
                window_us,
                segments,
            } => (SLIDING_WINDOW, limit, window_us, Some(segments)),
            Policy::SlidingCounter { limit, window_us } => {
                (SLIDING_COUNTER, limit, window_us, Some(0))
            }
            Policy::TokenBucket { capacity, refill } => {
                (TOKEN_BUCKET, capacity, refill.count, Some(refill.per_us))
            }
            Policy::Gcra { rate, burst } => (GCRA, burst, rate.count, Some(rate.per_us)),
        };
        PolicyScript {
            script: Script::new(source),
            first,
            second,
            fourth,
        }
    }

    pub async fn run(
        &self,
        conn: &mut ConnectionManager,
        key: &str,
        now: Option<i64>,
        member: &str,
    ) -> redis::RedisResult<Decision> {
        let mut call = self.script.key(key);
        call.arg(self.first)
            .arg(self.second)
            .arg(now.map(|n| n.to_string()).unwrap_or_default());
        match self.fourth {
            Some(v) => call.arg(v),
            None => call.arg(member),
        };
        let r: (i64, i64, i64, i64) = call.invoke_async(conn).await?;
        Ok(decision(r.0 == 1, r.1, r.2, r.3))
    }
}
