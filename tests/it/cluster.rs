//! Redis Cluster end to end through the real binary: rlbench starts a real
//! cluster (redis-server processes with cluster-enabled, slots assigned,
//! joined), the replicas reach it through the cluster client, the Lua arm
//! holds the limit and the naive arm races on it as on one server, each
//! master does its share of the work, and no node survives the run. A
//! cluster with a password kept up beside a run is used by `[redis] url`.

use crate::common;

use common::{arm, summary, text, wait_no_replicas};
use rlbench::testing::RedisCluster;
use serde_json::Value;
use std::time::Duration;

const CLUSTER: &str = r#"
name = "cluster-small"
duration = "3s"
seed = 3

[redis]
topology = "cluster"
# A timed-out decision is a fallback reject: keep a busy test machine from
# turning a slow moment into one.
timeout = "1s"

[policy]
algorithm = "token_bucket"
capacity = 5
refill = "5/1s"

[cluster]
replicas = 3

[load]
# Bursts of 300 in 10 ms over 30 keys: concurrent requests on each key, so
# the naive arm's read-check-write races.
schedule = "bursts"
burst = 300
burst_spread = "10ms"
keys = 30
fanout = "round_robin"

[[arms]]
name = "lua"
mode = "redis_lua"
on_redis_error = "fail_closed"
[arms.expect]
max_definite_violations = 0
max_false_reject_ratio = 0.0
max_error_ratio = 0.0

[[arms]]
name = "naive"
mode = "redis_naive"
[arms.policy]
algorithm = "fixed_window"
limit = 5
window = "1s"
[arms.expect]
min_definite_violations = 1
"#;

/// Each of the cluster's masters did a fair share of the arm's commands.
fn spread_over_masters(a: &Value, masters: usize) {
    let nodes = a["redis"]["nodes"].as_array().expect("redis nodes");
    assert_eq!(nodes.len(), masters, "{}", a["redis"]);
    let mut addresses: Vec<&str> = nodes
        .iter()
        .map(|n| n["address"].as_str().unwrap())
        .collect();
    addresses.dedup();
    assert_eq!(addresses.len(), masters, "{addresses:?}");
    for n in nodes {
        let share = n["share"].as_f64().unwrap();
        // 30 keys over 3 masters by hash slot: none is empty, none has all.
        assert!((0.1..0.6).contains(&share), "{}", a["redis"]);
        assert!(n["keys"].as_u64().unwrap() > 0, "{n}");
    }
    let per = a["redis"]["commands_per_decision"].as_f64().unwrap();
    assert!(per >= 1.0, "{}", a["redis"]);
    // The arm's keys were found on the masters and weighed.
    assert!(
        a["redis"]["bytes_per_key"].as_u64().unwrap() > 0,
        "{}",
        a["redis"]
    );
}

#[test]
fn a_cluster_rlbench_starts_is_exact_with_lua_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (out, pid) = common::run_scenario(dir.path(), CLUSTER, &[], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let s = summary(&dir.path().join("out"));
    let lua = arm(&s, "lua");
    assert_eq!(lua["correctness"]["definite_violations"], 0);
    assert_eq!(lua["correctness"]["false_rejects"], 0);
    assert!(lua["requests"]["rejected"].as_u64().unwrap() > 0, "{lua}");
    spread_over_masters(lua, 3);
    // One script call per decision on the Lua path.
    let scripts: u64 = lua["redis"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["script_calls"].as_u64().unwrap())
        .sum();
    let decisions = lua["redis"]["decisions"].as_u64().unwrap();
    assert!(
        scripts >= decisions,
        "{scripts} script calls for {decisions} decisions"
    );
    let naive = arm(&s, "naive");
    assert!(
        naive["correctness"]["definite_violations"]
            .as_u64()
            .unwrap()
            > 0
    );
    spread_over_masters(naive, 3);
    assert_eq!(naive["redis"]["nodes"][0]["script_calls"], 0);
    // The terminal and the page say it too.
    let table = text(&out.stdout);
    assert!(table.contains("redis of lua: 3 nodes"), "{table}");
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(html.contains("Redis: what each decision cost"));
    let left = wait_no_replicas(pid, Duration::from_secs(5));
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn an_existing_cluster_with_a_password_is_used_by_its_url() {
    let dir = tempfile::tempdir().unwrap();
    // A cluster of two masters kept up beside the run, with a password as
    // a team's would have one (rlbench's own code starts it: the URL
    // carries the password); the run names one of its nodes and must find
    // the other master, logging in to it with the same password.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut cluster = runtime
        .block_on(RedisCluster::start("rlbench-test-cluster", 2, 0))
        .unwrap();
    let url = cluster.url().unwrap().to_string();
    let password = url
        .strip_prefix("redis://:")
        .and_then(|rest| rest.split_once('@'))
        .map(|(p, _)| p.to_string())
        .expect("the cluster's URL carries its password");
    let scenario = CLUSTER.replace(
        "[redis]\ntopology = \"cluster\"\n",
        &format!("[redis]\ntopology = \"cluster\"\nurl = \"{url}\"\n"),
    );
    let (out, _) = common::run_scenario(dir.path(), &scenario, &[], &["--arm", "lua"]);
    runtime.block_on(cluster.stop());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let s = summary(&dir.path().join("out"));
    let lua = arm(&s, "lua");
    assert_eq!(lua["correctness"]["definite_violations"], 0);
    spread_over_masters(lua, 2);
    for file in [
        "summary.json",
        "events/lua.json",
        "report.html",
        "scenario.toml",
    ] {
        let kept = std::fs::read_to_string(dir.path().join("out").join(file)).unwrap();
        assert!(!kept.contains(&password), "{file} holds the password");
    }
}
