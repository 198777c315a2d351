//! What the Redis nodes did for an arm, read from Redis itself: `INFO`
//! (commands by name, CPU, memory) and `DBSIZE`, once before the load and
//! once after; the difference is the arm's. After the load a few of the
//! arm's keys are found by `SCAN` on its prefix and weighed with `MEMORY
//! USAGE`. A cluster's masters are found with `CLUSTER NODES` from any
//! node. A node that cannot be read is left out rather than failing the arm.

use crate::store::records::RedisNodeUse;
use reference_api::config::Topology;
use reference_api::redis_url;
use std::collections::BTreeMap;
use std::time::Duration;

const WITHIN: Duration = Duration::from_secs(2);
/// Keys weighed per node.
const WEIGHED: usize = 16;

/// Commands that are the bookkeeping of clients (this sampler's, the
/// cluster client's slot refreshes, connection set-up), not decisions.
const BOOKKEEPING: &[&str] = &[
    "info", "dbsize", "client", "hello", "ping", "cluster", "command", "config", "select",
    "readonly", "auth", "scan", "memory",
];

/// One node's counters at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Sample {
    /// `host:port`: where the node is, never how to log in to it.
    pub address: String,
    /// `total_commands_processed`.
    pub processed: u64,
    /// Calls by command name (lower case), from `INFO commandstats`.
    pub calls: BTreeMap<String, u64>,
    pub cpu_us: u64,
    pub keys: u64,
    pub used_memory: u64,
    /// Keys weighed, and their bytes (only when asked for a prefix).
    pub sampled_keys: u64,
    pub sampled_bytes: u64,
}

/// The nodes behind `url`: itself, or a cluster's masters (reached with
/// `url`'s credentials).
pub(crate) async fn nodes(url: &str, topology: Topology) -> Vec<String> {
    match topology {
        Topology::Single | Topology::Replicated => vec![url.to_string()],
        Topology::Cluster => {
            let listed = async {
                let mut conn = connect(url).await?;
                redis::cmd("CLUSTER")
                    .arg("NODES")
                    .query_async::<String>(&mut conn)
                    .await
                    .ok()
            };
            match tokio::time::timeout(WITHIN, listed).await {
                Ok(Some(text)) => masters(&text)
                    .into_iter()
                    .filter_map(|a| redis_url::at(url, &a))
                    .collect(),
                _ => Vec::new(),
            }
        }
    }
}

/// Every node's counters; `None` for a node that did not answer. With
/// `weigh`, a few keys under that prefix are weighed too.
pub(crate) async fn sample(urls: &[String], weigh: Option<&str>) -> Vec<Option<Sample>> {
    let mut out = Vec::with_capacity(urls.len());
    for url in urls {
        let one = sample_one(url, weigh);
        out.push(tokio::time::timeout(WITHIN, one).await.ok().flatten());
    }
    out
}

async fn connect(url: &str) -> Option<redis::aio::MultiplexedConnection> {
    let client = redis::Client::open(url).ok()?;
    client.get_multiplexed_async_connection().await.ok()
}

async fn sample_one(url: &str, weigh: Option<&str>) -> Option<Sample> {
    let mut conn = connect(url).await?;
    let (sampled_keys, sampled_bytes) = match weigh {
        Some(prefix) => weigh_keys(&mut conn, prefix).await,
        None => (0, 0),
    };
    let info: String = redis::cmd("INFO")
        .arg("stats")
        .arg("cpu")
        .arg("memory")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .ok()?;
    let keys: u64 = redis::cmd("DBSIZE").query_async(&mut conn).await.ok()?;
    let mut s = parse(&info);
    s.keys = keys;
    s.sampled_keys = sampled_keys;
    s.sampled_bytes = sampled_bytes;
    s.address = redis_url::address(url);
    Some(s)
}

/// Up to [`WEIGHED`] keys under `prefix` and their `MEMORY USAGE` summed.
async fn weigh_keys(conn: &mut redis::aio::MultiplexedConnection, prefix: &str) -> (u64, u64) {
    // A cluster replica answers key commands only after READONLY (else
    // MOVED); anything else refuses READONLY, which changes nothing.
    let _: redis::RedisResult<()> = redis::cmd("READONLY").query_async(conn).await;
    let pattern = format!("{}*", glob_escape(prefix));
    let mut cursor = 0u64;
    let mut keys: Vec<String> = Vec::new();
    // A bounded walk: enough rounds to find a few keys in a large database.
    for _ in 0..64 {
        let found: redis::RedisResult<(u64, Vec<String>)> = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(conn)
            .await;
        let Ok((next, found)) = found else {
            break;
        };
        keys.extend(found);
        cursor = next;
        if cursor == 0 || keys.len() >= WEIGHED {
            break;
        }
    }
    keys.truncate(WEIGHED);
    let (mut n, mut bytes) = (0, 0);
    for key in &keys {
        let used: redis::RedisResult<Option<u64>> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(key)
            .arg("SAMPLES")
            .arg(0)
            .query_async(conn)
            .await;
        if let Ok(Some(b)) = used {
            n += 1;
            bytes += b;
        }
    }
    (n, bytes)
}

/// `prefix` as a `MATCH` pattern that matches only itself.
fn glob_escape(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len());
    for c in prefix.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The figures of an `INFO` answer.
pub(crate) fn parse(info: &str) -> Sample {
    let mut s = Sample::default();
    let mut cpu = 0.0;
    for line in info.lines() {
        let Some((name, value)) = line.trim().split_once(':') else {
            continue;
        };
        match name {
            "total_commands_processed" => s.processed = value.parse().unwrap_or(0),
            "used_cpu_sys" | "used_cpu_user" => cpu += value.parse::<f64>().unwrap_or(0.0),
            "used_memory" => s.used_memory = value.parse().unwrap_or(0),
            _ => {
                if let Some(command) = name.strip_prefix("cmdstat_") {
                    let calls = value
                        .split(',')
                        .find_map(|kv| kv.strip_prefix("calls="))
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0);
                    s.calls.insert(command.to_ascii_lowercase(), calls);
                }
            }
        }
    }
    s.cpu_us = (cpu * 1e6).round() as u64;
    s
}

/// What each node did between two samples of the same nodes.
pub(crate) fn between(before: &[Option<Sample>], after: &[Option<Sample>]) -> Vec<RedisNodeUse> {
    before
        .iter()
        .zip(after)
        .filter_map(|(b, a)| Some(used(b.as_ref()?, a.as_ref()?)))
        .collect()
}

fn used(before: &Sample, after: &Sample) -> RedisNodeUse {
    let delta = |name: &str| {
        let at = |s: &Sample| s.calls.get(name).copied().unwrap_or(0);
        at(after).saturating_sub(at(before))
    };
    let bookkeeping: u64 = BOOKKEEPING.iter().map(|c| delta(c)).sum();
    RedisNodeUse {
        address: after.address.clone(),
        commands: after
            .processed
            .saturating_sub(before.processed)
            .saturating_sub(bookkeeping),
        script_calls: delta("evalsha") + delta("eval"),
        cpu_us: after.cpu_us.saturating_sub(before.cpu_us),
        keys: after.keys,
        used_memory: after.used_memory,
        sampled_keys: after.sampled_keys,
        sampled_bytes: after.sampled_bytes,
    }
}

/// The masters' `host:port` in a `CLUSTER NODES` answer, in the order
/// listed (failed ones left out).
pub(crate) fn masters(nodes: &str) -> Vec<String> {
    super::cluster_answers::node_lines(nodes)
        .into_iter()
        .filter(|n| n.live_master)
        .map(|n| n.address.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "# Stats\r\ntotal_connections_received:3\r\ntotal_commands_processed:120\r\n\
# CPU\r\nused_cpu_sys:0.250000\r\nused_cpu_user:1.5\r\n# Memory\r\nused_memory:1048576\r\n\
# Commandstats\r\ncmdstat_evalsha:calls=100,usec=900,usec_per_call=9.00,rejected_calls=0,failed_calls=0\r\n\
cmdstat_info:calls=4,usec=40,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n";

    #[test]
    fn info_gives_commands_cpu_and_memory() {
        let s = parse(INFO);
        assert_eq!(s.processed, 120);
        assert_eq!(s.cpu_us, 1_750_000);
        assert_eq!(s.used_memory, 1_048_576);
        assert_eq!(s.calls.get("evalsha"), Some(&100));
        assert_eq!(s.calls.get("info"), Some(&4));
        assert_eq!(parse(""), Sample::default());
    }

    #[test]
    fn bookkeeping_is_not_counted_as_work() {
        let before = Sample {
            address: "a:1".into(),
            processed: 10,
            calls: [("info".to_string(), 2), ("evalsha".to_string(), 5)].into(),
            cpu_us: 100,
            keys: 0,
            used_memory: 10,
            sampled_keys: 0,
            sampled_bytes: 0,
        };
        let mut after = before.clone();
        after.processed = 10 + 50 + 3;
        after.calls.insert("evalsha".into(), 55);
        after.calls.insert("info".into(), 4);
        after.calls.insert("cluster".into(), 1);
        after.cpu_us = 400;
        after.keys = 7;
        let used = between(&[Some(before.clone()), None], &[Some(after), Some(before)]);
        assert_eq!(used.len(), 1, "a node unread before or after is left out");
        assert_eq!(used[0].commands, 50);
        assert_eq!(used[0].script_calls, 50);
        assert_eq!(used[0].cpu_us, 300);
        assert_eq!(used[0].keys, 7);
    }

    #[test]
    fn masters_come_from_cluster_nodes() {
        let text = "\
07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003,host.example master - 0 1426238318243 3 connected 10923-16383
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460
824fe116063bc5fcf9f4ffd895bc17aee7731ac3 127.0.0.1:30006@31006 master,fail - 1426238316232 0 6 disconnected
";
        assert_eq!(
            masters(text),
            vec!["127.0.0.1:30002", "127.0.0.1:30003", "127.0.0.1:30001"]
        );
        assert!(masters("").is_empty());
    }

    #[test]
    fn a_prefix_matches_only_itself() {
        assert_eq!(glob_escape("rlbench:r1:arm:"), "rlbench:r1:arm:");
        assert_eq!(glob_escape(r"a*b?[c]\"), r"a\*b\?\[c\]\\");
    }
}
