//! A bucket that refills in whole chunks, judged from outside: a Redis
//! token bucket in Stripe's style (scripts/limiters/stripe_bucket_server.py:
//! whole seconds of Redis TIME, 5 tokens at a time), on a redis-server this
//! test starts, declared in its own terms (scenarios/stripe-bucket.toml:
//! `refill_every = "1s"`, on the epoch of this machine's clock). Exact
//! twice in a row on one process; three processes each keeping their own
//! buckets are the fake global limit, caught. And the same bucket fed
//! whole seconds by two app servers 1 ms apart, sharing their buckets
//! (scenarios/stripe-app-clocks.toml): exact with the slack the resolution
//! plus the skew.

use crate::real_limiters::{
    exact_across_servers, exact_twice_in_a_row, fake_global_is_caught, Limiter,
};
use rlbench::testing::RedisServer;

/// A redis-server of the test's own (stopped when the runtime and the
/// server are dropped), and its URL for the bucket servers.
pub(crate) fn redis() -> (tokio::runtime::Runtime, RedisServer, &'static str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt
        .block_on(RedisServer::start("rlbench-test"))
        .expect("redis-server starts (scripts/test.sh installs it)");
    // The bucket servers' argument must outlive them: leaked, once a test.
    let url: &'static str = Box::leak(server.url.clone().into_boxed_str());
    (rt, server, url)
}

#[test]
fn a_stripe_style_bucket_is_exact_twice_in_a_row() {
    let (_rt, _redis, url) = redis();
    exact_twice_in_a_row(Limiter::Stripe(url), "stripe-bucket.toml", "one");
}

#[test]
fn a_stripe_style_bucket_on_three_processes_is_a_fake_global() {
    let (_rt, _redis, url) = redis();
    fake_global_is_caught(Limiter::Stripe(url), "stripe-bucket.toml", "three", 3, 1.5);
}

#[test]
fn a_stripe_style_bucket_fed_two_app_clocks_1_ms_apart_is_exact() {
    let (_rt, _redis, url) = redis();
    let arm = exact_across_servers(
        &[
            Limiter::StripeAppClock(url, 0),
            Limiter::StripeAppClock(url, 1_000),
        ],
        "stripe-app-clocks.toml",
        "two",
    );
    assert_eq!(arm["replicas"], 2, "{arm}");
    let policy = arm["policy_text"].as_str().unwrap();
    assert!(
        policy.contains("σ 1.001 s = resolution 1 s + skew 1 ms"),
        "{policy}"
    );
}
