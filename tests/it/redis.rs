//! The Redis limiters against a real redis-server that the test starts:
//! every Lua script judged by the verifier (and matched against the ideal
//! replay), the naive race, NOSCRIPT recovery, fail-open and fail-closed.

use reference_api::config::{ClockSource, OnError, RedisBackend, RedisMode, Topology};
use reference_api::limiter::redis_backed::RedisLimiter;
use reference_api::{Policy, Rate};
use rlbench::testing::RedisServer;
use rlbench::verify::{self, Decided, Obs};
use std::time::{Duration, Instant};

fn backend(url: &str, prefix: &str, mode: RedisMode, on_error: OnError) -> RedisBackend {
    RedisBackend {
        url: url.to_string(),
        topology: Topology::Single,
        prefix: prefix.to_string(),
        mode,
        clock: ClockSource::Replica,
        timeout_us: 50_000,
        on_error,
        wait_replicas: 0,
        deadline: false,
        lease: 1,
        lease_ttl_us: 0,
    }
}

/// A Redis-backed limiter on `server`, failing closed.
async fn limiter(
    server: &RedisServer,
    prefix: &str,
    mode: RedisMode,
    policy: &Policy,
) -> RedisLimiter {
    // These tests judge what Redis decided, not how fast: a busy machine's
    // Redis gets 2 s per call (the tests of timeouts build their own).
    let mut b = backend(&server.url, prefix, mode, OnError::FailClosed);
    b.timeout_us = 2_000_000;
    RedisLimiter::connect(b, policy.clone(), "r0")
        .await
        .unwrap()
}

/// Request times (µs from 0) with bursts and pauses, the same every run.
fn times() -> Vec<i64> {
    let mut t = 0i64;
    let mut x = 12345u64;
    (0..600)
        .map(|i| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (x >> 33) % 1000;
            t += if i % 97 == 0 {
                700_000
            } else {
                (r as i64) * 60
            };
            t
        })
        .collect()
}

#[tokio::test]
async fn every_lua_script_is_exact_and_the_verifier_agrees() {
    let server = RedisServer::start("rlbench-test").await.unwrap();
    let rate = Rate {
        count: 5,
        per_us: 1_000_000,
    };
    let policies = [
        Policy::SlidingLog {
            limit: 10,
            window_us: 2_000_000,
        },
        Policy::FixedWindow {
            limit: 10,
            window_us: 2_000_000,
        },
        Policy::SlidingWindow {
            limit: 10,
            window_us: 2_000_000,
            segments: 4,
        },
        Policy::SlidingCounter {
            limit: 10,
            window_us: 2_000_000,
        },
        Policy::TokenBucket {
            capacity: 10,
            refill: rate,
        },
        Policy::Gcra { rate, burst: 10 },
    ];
    // Epoch-aligned like a real clock, not on a window boundary.
    let epoch = 1_790_000_000_123_457i64;
    for (i, policy) in policies.iter().enumerate() {
        let l = limiter(&server, &format!("exact{i}:"), RedisMode::Lua, policy).await;
        let mut trace = Vec::new();
        for t in times() {
            let d = l.decide("alice", epoch + t).await;
            let decided = if d.allowed {
                Decided::Admitted
            } else {
                Decided::Rejected
            };
            trace.push(Obs {
                sent: t,
                done: t,
                decided,
            });
        }
        assert_eq!(
            l.fallbacks().failed_closed,
            0,
            "{policy:?}: Redis answered every call"
        );
        let opts = verify::Options {
            slack_us: 0,
            epoch_offset_us: epoch,
            epoch_uncertainty_us: 0,
            aligned: true,
            unknown_history: false,
            ..verify::Options::default()
        };
        let v = verify::verify_key(policy, &trace, &opts);
        assert!(
            v.rejected > 50,
            "{policy:?}: the trace must press the limit"
        );
        assert_eq!(v.definite_violations, 0, "{policy:?}");
        assert_eq!(v.false_rejects, 0, "{policy:?}");
        // Decisions at exactly the send times: the script is the ideal
        // algorithm. (The token bucket's floating-point refill may round a
        // token's arrival by a microsecond.)
        let tolerance = if matches!(policy, Policy::TokenBucket { .. }) {
            2
        } else {
            0
        };
        assert!(
            v.admitted.abs_diff(v.replay_admits) <= tolerance,
            "{policy:?}: {} vs {}",
            v.admitted,
            v.replay_admits
        );
    }
}

async fn burst(l: &std::sync::Arc<RedisLimiter>, n: usize, now: i64) -> usize {
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..n {
        let l = l.clone();
        set.spawn(async move { l.decide("hot", now).await.allowed });
    }
    let mut admitted = 0;
    while let Some(ok) = set.join_next().await {
        admitted += ok.unwrap() as usize;
    }
    admitted
}

#[tokio::test]
async fn the_naive_path_races_and_the_script_does_not() {
    let server = RedisServer::start("rlbench-test").await.unwrap();
    let now = 1_790_000_000_500_000;
    for policy in [
        Policy::FixedWindow {
            limit: 5,
            window_us: 60_000_000,
        },
        Policy::SlidingLog {
            limit: 5,
            window_us: 60_000_000,
        },
        Policy::TokenBucket {
            capacity: 5,
            refill: Rate {
                count: 1,
                per_us: 60_000_000,
            },
        },
    ] {
        let naive =
            std::sync::Arc::new(limiter(&server, "naive:", RedisMode::Naive, &policy).await);
        let lua = std::sync::Arc::new(limiter(&server, "lua:", RedisMode::Lua, &policy).await);
        // 200 concurrent requests for one key: reads interleave with writes.
        let raced = burst(&naive, 200, now).await;
        assert!(
            raced > 5,
            "{policy:?}: the naive path admitted only {raced}"
        );
        assert_eq!(burst(&lua, 200, now).await, 5, "{policy:?}");
        assert_eq!(lua.fallbacks().failed_closed, 0);
        assert_eq!(naive.fallbacks().failed_closed, 0);
        let _ = redis_cmd(&server, &["DEL", "naive:{hot}", "lua:{hot}"]).await;
    }
}

async fn redis_cmd(server: &RedisServer, args: &[&str]) -> redis::Value {
    let client = redis::Client::open(server.url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query_async(&mut conn).await.unwrap()
}

#[tokio::test]
async fn a_flushed_script_cache_is_reloaded_and_counts_survive() {
    let server = RedisServer::start("rlbench-test").await.unwrap();
    let policy = Policy::SlidingLog {
        limit: 2,
        window_us: 60_000_000,
    };
    let l = limiter(&server, "flush:", RedisMode::Lua, &policy).await;
    let now = 1_790_000_000_000_000;
    assert!(l.decide("k", now).await.allowed);
    let _ = redis_cmd(&server, &["SCRIPT", "FLUSH"]).await;
    assert!(
        l.decide("k", now + 1).await.allowed,
        "NOSCRIPT must reload, not fail"
    );
    assert!(
        !l.decide("k", now + 2).await.allowed,
        "the count survived: 2 of 2 used"
    );
    assert_eq!(l.fallbacks().failed_closed, 0, "no decision fell back");
}

#[tokio::test]
async fn with_redis_gone_fail_open_admits_and_fail_closed_rejects() {
    let mut server = RedisServer::start("rlbench-test").await.unwrap();
    let policy = Policy::SlidingLog {
        limit: 100,
        window_us: 1_000_000,
    };
    let open = RedisLimiter::connect(
        backend(&server.url, "o:", RedisMode::Lua, OnError::FailOpen),
        policy.clone(),
        "r0",
    )
    .await
    .unwrap();
    let closed = RedisLimiter::connect(
        backend(&server.url, "c:", RedisMode::Lua, OnError::FailClosed),
        policy,
        "r0",
    )
    .await
    .unwrap();
    let now = 1_790_000_000_000_000;
    assert!(open.decide("k", now).await.allowed);
    assert!(
        closed.decide("k", now).await.allowed,
        "Redis up: a normal admit"
    );
    server.stop().await;
    for i in 1..=5 {
        let started = Instant::now();
        assert!(open.decide("k", now + i).await.allowed, "fail_open admits");
        assert!(
            !closed.decide("k", now + i).await.allowed,
            "fail_closed rejects"
        );
        // Each decision is bounded by the 50 ms timeout (generously here).
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
    assert_eq!(open.fallbacks().failed_open, 5);
    assert_eq!(closed.fallbacks().failed_closed, 5);
}

#[tokio::test]
async fn a_request_stamped_before_a_boundary_but_arriving_after_it_resets_nothing() {
    // Replicas stamp a request before calling Redis; across replicas the
    // calls can arrive out of order around a window boundary.
    let server = RedisServer::start("rlbench-test").await.unwrap();
    let boundary = 1_790_000_002_000_000i64;
    for policy in [
        Policy::FixedWindow {
            limit: 2,
            window_us: 1_000_000,
        },
        Policy::SlidingWindow {
            limit: 2,
            window_us: 1_000_000,
            segments: 4,
        },
        Policy::SlidingCounter {
            limit: 2,
            window_us: 1_000_000,
        },
    ] {
        let l = limiter(
            &server,
            &format!("late-{}:", policy.algorithm()),
            RedisMode::Lua,
            &policy,
        )
        .await;
        assert!(l.decide("k", boundary).await.allowed);
        assert!(
            l.decide("k", boundary - 1).await.allowed,
            "{policy:?}: the late one counts"
        );
        assert!(
            !l.decide("k", boundary + 1).await.allowed,
            "{policy:?}: 2 of 2 used"
        );
        assert!(
            !l.decide("k", boundary - 2).await.allowed,
            "{policy:?}: still nothing reset"
        );
    }
}

#[tokio::test]
async fn a_late_request_still_finds_its_window_before_it_expires() {
    // Redis expires keys by its own clock; a request stamped in a window
    // that reaches Redis a little after the window's end must still see
    // that window's count, not a fresh one.
    let server = RedisServer::start("rlbench-test").await.unwrap();
    let boundary = 1_790_000_005_000_000i64;
    for (mode, policy) in [
        (
            RedisMode::Lua,
            Policy::FixedWindow {
                limit: 2,
                window_us: 1_000_000,
            },
        ),
        (
            RedisMode::Naive,
            Policy::FixedWindow {
                limit: 2,
                window_us: 1_000_000,
            },
        ),
        (
            RedisMode::Lua,
            Policy::SlidingWindow {
                limit: 2,
                window_us: 1_000_000,
                segments: 4,
            },
        ),
    ] {
        let l = limiter(
            &server,
            &format!("expiry-{mode:?}-{}:", policy.algorithm()),
            mode,
            &policy,
        )
        .await;
        assert!(l.decide("k", boundary - 600).await.allowed);
        assert!(l.decide("k", boundary - 500).await.allowed);
        // The count was stored 0.5 ms before the window's end; wait longer.
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            !l.decide("k", boundary - 400).await.allowed,
            "{mode:?} {policy:?}: the window is still full"
        );
    }
}

#[tokio::test]
async fn a_request_that_timed_out_is_counted_once_never_twice() {
    use rlbench::testing::Proxy;
    let server = RedisServer::start("rlbench-test").await.unwrap();
    // The replica reaches Redis through a proxy adding 80 ms each way: far
    // past its 50 ms budget, so every call times out and falls back — yet
    // each script still reaches Redis and runs there, late.
    let proxy = Proxy::start(format!("127.0.0.1:{}", server.port))
        .await
        .unwrap();
    let policy = Policy::SlidingLog {
        limit: 100,
        window_us: 600_000_000,
    };
    let url = server.url_at(&proxy.address);
    let l = RedisLimiter::connect(
        backend(&url, "late:", RedisMode::Lua, OnError::FailClosed),
        policy,
        "r0",
    )
    .await
    .unwrap();
    let now = 1_790_000_000_000_000;
    // One decision in time first, so Redis has the script (a late EVALSHA
    // of an unknown script would only come back NOSCRIPT).
    assert!(l.decide("k", now).await.allowed);
    proxy.set(Duration::from_millis(80), Duration::ZERO);
    for i in 1..6 {
        assert!(!l.decide("k", now + i).await.allowed, "a fallback reject");
    }
    assert_eq!(l.fallbacks().failed_closed, 5);
    // Let the late scripts land, then count what Redis holds for the key:
    // one entry per request — a timed-out call is never sent again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = redis_cmd(&server, &["ZCARD", "late:{k}"]).await;
    assert_eq!(held, redis::Value::Int(6), "{held:?}");
    // Without the delay the next decision is Redis' again, and counts 7.
    proxy.set(Duration::ZERO, Duration::ZERO);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(l.decide("k", now + 10).await.allowed);
    assert_eq!(
        redis_cmd(&server, &["ZCARD", "late:{k}"]).await,
        redis::Value::Int(7)
    );
}

#[tokio::test]
async fn a_script_past_its_deadline_consumes_nothing() {
    use rlbench::testing::Proxy;
    let server = RedisServer::start("rlbench-test").await.unwrap();
    let proxy = Proxy::start(format!("127.0.0.1:{}", server.port))
        .await
        .unwrap();
    let policy = Policy::SlidingLog {
        limit: 100,
        window_us: 600_000_000,
    };
    let url = server.url_at(&proxy.address);
    let mut b = backend(&url, "due:", RedisMode::Lua, OnError::FailClosed);
    b.deadline = true;
    let l = RedisLimiter::connect(b, policy, "r0").await.unwrap();
    // The deadline is the replica's clock plus the 50 ms budget, read
    // against Redis' clock: the replica's must be the wall clock here.
    let wall = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros() as i64
    };
    assert!(l.decide("k", wall()).await.allowed);
    // 80 ms each way: every call times out, and its script reaches Redis
    // past the deadline — and takes nothing.
    proxy.set(Duration::from_millis(80), Duration::ZERO);
    for _ in 0..5 {
        assert!(!l.decide("k", wall()).await.allowed, "a fallback reject");
    }
    assert_eq!(l.fallbacks().failed_closed, 5);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = redis_cmd(&server, &["ZCARD", "due:{k}"]).await;
    assert_eq!(held, redis::Value::Int(1), "{held:?}");
    // The boundary: 15 ms each way stays inside the budget, so the script
    // runs before the deadline, counts, and its answer is the decision.
    proxy.set(Duration::from_millis(15), Duration::ZERO);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(l.decide("k", wall()).await.allowed);
    assert_eq!(l.fallbacks().failed_closed, 5);
    assert_eq!(
        redis_cmd(&server, &["ZCARD", "due:{k}"]).await,
        redis::Value::Int(2)
    );
}

/// Every key a Redis mode writes expires: a client spraying fresh keys
/// grows Redis only for as long as each key's window or refill lasts.
/// Each algorithm in each mode that keeps it (lua all; naive some;
/// batched fixed windows), 50 fresh keys each, every key found by SCAN with a TTL
/// (`PTTL`) of at most twice the policy's span and a second.
#[tokio::test]
async fn every_key_the_redis_modes_write_carries_a_ttl() {
    let server = RedisServer::start("rlbench-test").await.unwrap();
    let rate = Rate {
        count: 5,
        per_us: 1_000_000,
    };
    let window_us = 2_000_000;
    let policies = [
        Policy::SlidingLog {
            limit: 10,
            window_us,
        },
        Policy::FixedWindow {
            limit: 10,
            window_us,
        },
        Policy::SlidingWindow {
            limit: 10,
            window_us,
            segments: 4,
        },
        Policy::SlidingCounter {
            limit: 10,
            window_us,
        },
        Policy::TokenBucket {
            capacity: 10,
            refill: rate,
        },
        Policy::Gcra { rate, burst: 10 },
    ];
    let (mut written, mut kept) = (0, 0);
    for (i, policy) in policies.iter().enumerate() {
        let mut modes = vec![RedisMode::Lua, RedisMode::Naive];
        if matches!(policy, Policy::FixedWindow { .. }) {
            modes.push(RedisMode::Batched);
        }
        for (m, mode) in modes.into_iter().enumerate() {
            let mut b = backend(
                &server.url,
                &format!("ttl{i}-{m}:"),
                mode,
                OnError::FailClosed,
            );
            b.timeout_us = 2_000_000;
            // The naive mode keeps some algorithms only.
            let Ok(l) = RedisLimiter::connect(b, policy.clone(), "r0").await else {
                continue;
            };
            kept += 1;
            let now = 1_790_000_000_123_457i64;
            for k in 0..50 {
                l.decide(&format!("spray-{k}"), now + k * 1_000).await;
            }
        }
    }
    let client = redis::Client::open(server.url.as_str()).unwrap();
    let mut c = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("ttl*")
        .query_async(&mut c)
        .await
        .unwrap();
    for key in &keys {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut c)
            .await
            .unwrap();
        // The longest: a token bucket's time to refill whole (2 s) or a
        // window kept a window longer than current, and a second. -2: gone
        // since KEYS listed it — expired (a bucket one token short is whole
        // again in 200 ms); -1 would be a key kept for ever.
        assert!(
            ttl == -2 || (ttl > 0 && ttl <= 2 * window_us as i64 / 1_000 + 1_000),
            "{key}: PTTL {ttl}"
        );
        written += 1;
    }
    // 50 keys for each algorithm a mode keeps, one Redis key or more each.
    assert!(kept >= 8, "{kept}");
    assert!(written >= 50 * kept, "{written} keys of {kept}: {keys:?}");
}
