//! The naive path, on purpose: read the state, decide in Rust, write it
//! back, as separate round trips with no MULTI/WATCH/Lua. Between the read
//! and the write other replicas (and other requests on this one) read the
//! same state, so under concurrency several requests take the same last
//! slot. This is the bug teams ship when they first move a counter to
//! Redis; rlbench keeps it to show the race and prove the Lua fix.

use super::conn::Conn;
use super::reply::decision;
use crate::limiter::contract::Decision;
use crate::policy::{Policy, Rate};

pub(super) fn supports(policy: &Policy) -> bool {
    matches!(
        policy,
        Policy::SlidingLog { .. } | Policy::FixedWindow { .. } | Policy::TokenBucket { .. }
    )
}

/// One request as the naive path sees it: its key, its member in a log,
/// and the time it is decided at (µs).
struct Ask<'a> {
    key: &'a str,
    member: &'a str,
    now: i64,
}

/// Decides one request by the algorithm of `policy`, each with its own
/// separate reads and writes (the race is the point).
pub(super) async fn decide(
    conn: &mut Conn,
    policy: &Policy,
    key: &str,
    now: Option<i64>,
    member: &str,
) -> redis::RedisResult<Decision> {
    let now = match now {
        Some(n) => n,
        None => redis_time(conn).await?,
    };
    let ask = Ask { key, member, now };
    match *policy {
        Policy::SlidingLog { limit, window_us } => sliding_log(conn, &ask, limit, window_us).await,
        Policy::FixedWindow { limit, window_us } => {
            fixed_window(conn, &ask, limit, window_us).await
        }
        Policy::TokenBucket { capacity, refill } => {
            token_bucket(conn, &ask, capacity, refill).await
        }
        _ => Err(redis::RedisError::from((
            redis::ErrorKind::Client,
            "redis_naive does not implement this algorithm",
        ))),
    }
}

/// A key's expiry in ms for a span in µs, rounded up past it.
fn ms(us: i64) -> i64 {
    us / 1_000 + 1
}

/// A sliding log: trim, count, read the oldest, then add — four round trips.
async fn sliding_log(
    conn: &mut Conn,
    ask: &Ask<'_>,
    limit: u64,
    window_us: u64,
) -> redis::RedisResult<Decision> {
    let now = ask.now;
    let w = window_us as i64;
    let () = redis::cmd("ZREMRANGEBYSCORE")
        .arg(ask.key)
        .arg("-inf")
        .arg(now - w)
        .query_async(conn)
        .await?;
    let count: u64 = redis::cmd("ZCARD").arg(ask.key).query_async(conn).await?;
    // The race: another request may add between this read and the write below.
    let oldest: Vec<(String, i64)> = redis::cmd("ZRANGE")
        .arg(ask.key)
        .arg(0)
        .arg(0)
        .arg("WITHSCORES")
        .query_async(conn)
        .await?;
    let oldest = oldest.first().map_or(now, |(_, score)| *score);
    if count < limit {
        let () = redis::pipe()
            .cmd("ZADD")
            .arg(ask.key)
            .arg(now)
            .arg(ask.member)
            .ignore()
            .cmd("PEXPIRE")
            .arg(ask.key)
            .arg(ms(w))
            .ignore()
            .query_async(conn)
            .await?;
        Ok(decision(
            true,
            (limit - count - 1) as i64,
            oldest + w - now,
            0,
        ))
    } else {
        let retry = oldest + w - now;
        Ok(decision(false, 0, retry, retry))
    }
}

/// A fixed window: read the window and its count, then write count + 1.
async fn fixed_window(
    conn: &mut Conn,
    ask: &Ask<'_>,
    limit: u64,
    window_us: u64,
) -> redis::RedisResult<Decision> {
    let now = ask.now;
    let w = window_us as i64;
    let mut start = now - now.rem_euclid(w);
    let (window, count): (Option<i64>, Option<u64>) = redis::cmd("HMGET")
        .arg(ask.key)
        .arg("window")
        .arg("count")
        .query_async(conn)
        .await?;
    // Windows never move backwards (as in the script): the only
    // flaw this path keeps is the race.
    let count = match window {
        Some(stored) if stored >= start => {
            start = stored;
            count.unwrap_or(0)
        }
        _ => 0,
    };
    let reset = (start + w - now).max(1);
    if count < limit {
        // The race: a plain write of count + 1, not an increment.
        let () = redis::pipe()
            .cmd("HSET")
            .arg(ask.key)
            .arg("window")
            .arg(start)
            .arg("count")
            .arg(count + 1)
            .ignore()
            .cmd("PEXPIRE")
            .arg(ask.key)
            .arg(ms(reset + w))
            .ignore()
            .query_async(conn)
            .await?;
        Ok(decision(true, (limit - count - 1) as i64, reset, 0))
    } else {
        Ok(decision(false, 0, reset, reset))
    }
}

/// A token bucket: read the tokens and when, then write what is left.
async fn token_bucket(
    conn: &mut Conn,
    ask: &Ask<'_>,
    capacity: u64,
    refill: Rate,
) -> redis::RedisResult<Decision> {
    let now = ask.now;
    let rate = refill.count as f64 / refill.per_us as f64;
    let cap = capacity as f64;
    let (tokens, at): (Option<f64>, Option<i64>) = redis::cmd("HMGET")
        .arg(ask.key)
        .arg("tokens")
        .arg("at")
        .query_async(conn)
        .await?;
    let (mut tokens, mut at) = match (tokens, at) {
        (Some(t), Some(a)) => (t, a),
        _ => (cap, now),
    };
    if now > at {
        tokens = (tokens + (now - at) as f64 * rate).min(cap);
        at = now;
    }
    if tokens >= 1.0 {
        tokens -= 1.0;
        let until_full = ((cap - tokens) / rate).ceil() as i64;
        // The race: a lost update when two requests read the same tokens.
        let () = redis::pipe()
            .cmd("HSET")
            .arg(ask.key)
            .arg("tokens")
            .arg(tokens)
            .arg("at")
            .arg(at)
            .ignore()
            .cmd("PEXPIRE")
            .arg(ask.key)
            .arg(ms(until_full))
            .ignore()
            .query_async(conn)
            .await?;
        Ok(decision(true, tokens.floor() as i64, until_full, 0))
    } else {
        let retry = ((1.0 - tokens) / rate).ceil() as i64;
        Ok(decision(false, 0, retry, retry))
    }
}

/// Redis' clock in µs, for the naive path with `clock = "redis"`.
async fn redis_time(conn: &mut Conn) -> redis::RedisResult<i64> {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(conn).await?;
    Ok(secs * 1_000_000 + micros)
}
