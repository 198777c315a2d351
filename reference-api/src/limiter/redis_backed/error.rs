//! Why a Redis-backed limiter could not be set up: its URL, Redis not
//! answering, or a policy its mode does not implement. A Redis URL is only
//! ever shown redacted (no password).

/// What [`super::RedisLimiter::connect`] fails with.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("bad redis url {url:?}: {source}")]
    BadUrl {
        /// Redacted.
        url: String,
        source: redis::RedisError,
    },
    #[error("cannot connect to redis at {url}: {source}")]
    Unreachable {
        /// Redacted.
        url: String,
        source: redis::RedisError,
    },
    #[error("cannot connect to the redis cluster at {url}: {source}")]
    ClusterUnreachable {
        /// Redacted.
        url: String,
        source: redis::RedisError,
    },
    /// `redis_naive` with an algorithm it has no round trips for.
    #[error(
        "redis_naive does not implement {0}; it has sliding_log, fixed_window and token_bucket"
    )]
    NaiveUnsupported(&'static str),
    /// `redis_batched` leases fixed windows only.
    #[error("redis_batched leases fixed_window admits, not {0}")]
    NotLeasable(&'static str),
}
