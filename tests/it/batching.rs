//! Leased admits (`redis_batched`) against a real redis-server: three
//! replicas' limiters share one key's fixed window, leasing 5 admits per
//! script call, under concurrent requests that straddle many window edges.
//! No window ever holds more than the bound the verifier is given —
//! limit + min(limit, replicas·(lease − 1)) — and Redis sees far fewer
//! script calls than decisions. Then through the real binary: a batched arm's summary
//! carries that bound, and its report the trade chart.

use crate::common;

use reference_api::config::{ClockSource, OnError, RedisBackend, RedisMode, Topology};
use reference_api::limiter::redis_backed::RedisLimiter;
use reference_api::Policy;
use rlbench::testing::RedisServer;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const LIMIT: u64 = 10;
const WINDOW_US: i64 = 200_000;
const LEASE: u64 = 5;
const REPLICAS: u64 = 3;

fn wall_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_never_let_a_window_pass_the_bound() {
    let server = RedisServer::start("rlbench-test").await.unwrap();
    let policy = Policy::FixedWindow {
        limit: LIMIT,
        window_us: WINDOW_US as u64,
    };
    let mut limiters = Vec::new();
    for r in 0..REPLICAS {
        let backend = RedisBackend {
            url: server.url.clone(),
            topology: Topology::Single,
            prefix: "lease:".into(),
            mode: RedisMode::Batched,
            clock: ClockSource::Replica,
            timeout_us: 1_000_000,
            on_error: OnError::FailClosed,
            wait_replicas: 0,
            deadline: false,
            lease: LEASE,
            lease_ttl_us: 0,
        };
        let l = RedisLimiter::connect(backend, policy.clone(), &format!("r{r}"))
            .await
            .unwrap();
        limiters.push(Arc::new(l));
    }
    // Admits by window, counting those surely inside one: read the clock
    // before and after the decision, both in the window (as the verifier's
    // aligned rule does with a request's send and answer).
    let admits: Arc<Mutex<BTreeMap<i64, u64>>> = Arc::default();
    let decisions = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let until = Instant::now() + Duration::from_millis(1_500);
    let mut tasks = Vec::new();
    for worker in 0..12 {
        let l = limiters[worker % REPLICAS as usize].clone();
        let (admits, decisions) = (admits.clone(), decisions.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < until {
                let now = wall_us();
                let allowed = l.decide("k", now).await.allowed;
                let window = now / WINDOW_US;
                if allowed && wall_us() / WINDOW_US == window {
                    *admits.lock().unwrap().entry(window).or_default() += 1;
                }
                decisions.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_micros(500)).await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let admits = admits.lock().unwrap().clone();
    // Each replica carries at most one lease's rest into the next window,
    // and never more than the window before held.
    let bound = LIMIT + (REPLICAS * (LEASE - 1)).min(LIMIT);
    assert_eq!(bound, 20);
    assert!(admits.len() >= 6, "windows seen: {admits:?}");
    for (window, n) in &admits {
        assert!(
            *n <= bound,
            "window {window} held {n} admits, past {bound}: {admits:?}"
        );
    }
    assert!(
        admits.values().any(|n| *n >= LIMIT),
        "the load used each window's limit: {admits:?}"
    );
    assert!(limiters.iter().all(|l| l.fallbacks().failed_closed == 0));
    // Script calls, from Redis: far fewer than decisions.
    let client = redis::Client::open(server.url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .unwrap();
    let calls: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let decided = decisions.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        calls > 0 && calls * 3 < decided,
        "{calls} script calls for {decided} decisions"
    );
    // The replicas' own count of their lease refills (`/metrics`'
    // rlbench_lease_calls_total): each one script call, and a call asking
    // for one admit while a lease is being asked is none.
    let leased: Vec<_> = limiters.iter().map(|l| l.lease_calls().unwrap()).collect();
    let refills: u64 = leased.iter().map(|c| c.granted + c.denied).sum();
    assert!(
        leased.iter().all(|c| c.granted > 0) && refills <= calls,
        "{leased:?}: {refills} lease calls counted, {calls} script calls in Redis"
    );
}

const BATCHED: &str = r#"
name = "batched-small"
duration = "3s"
seed = 6

[redis]
timeout = "1s"

[policy]
algorithm = "fixed_window"
limit = 20
window = "1s"

[cluster]
replicas = 3

[load]
rate = 300
keys = 5
fanout = "round_robin"

[[arms]]
name = "leased"
mode = "redis_batched"
lease = 5
lease_ttl = "1s"
[arms.expect]
max_lease_bound_violations = 0
"#;

/// Through the real binary: the arm is judged against its policy and
/// against the bound, and the report draws the trade.
#[test]
fn a_batched_arm_is_judged_against_its_bound_and_charted() {
    let dir = tempfile::tempdir().unwrap();
    let (out, pid) = common::run_scenario(dir.path(), BATCHED, &[], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out.stderr));
    let s = common::summary(&dir.path().join("out"));
    let a = common::arm(&s, "leased");
    // 20 + 3 replicas · (5 − 1).
    assert_eq!(
        a["lease_bound"]["limit_per_window"], 32,
        "{}",
        a["lease_bound"]
    );
    assert_eq!(a["lease_bound"]["definite_violations"], 0);
    let per = a["redis"]["commands_per_decision"].as_f64().unwrap();
    assert!(per < 1.5, "leases save Redis calls: {}", a["redis"]);
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(
        html.contains("Redis commands per decision against wrong decisions"),
        "the trade chart is in the report"
    );
    assert!(dir.path().join("out/lease-trade.png").exists());
    let left = common::wait_no_replicas(pid, Duration::from_secs(5));
    assert!(left.is_empty(), "left running: {left:?}");
}
