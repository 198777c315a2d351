//! A Redis Cluster rlbench runs itself: `masters` redis-server processes
//! with `cluster-enabled yes`, each on a free loopback port with a free bus
//! port, the 16,384 hash slots split evenly between them (CLUSTER
//! ADDSLOTSRANGE), joined by CLUSTER MEET, ready once every node reports
//! `cluster_state:ok` and knows every other. Stopped on every exit path,
//! as each node is a [`RedisServer`].

use super::redis::{free_port, RedisServer};
use redis::aio::MultiplexedConnection;
use std::time::Duration;
use tokio::time::Instant;

pub const SLOTS: u16 = 16_384;
const READY_WITHIN: Duration = Duration::from_secs(20);

pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub async fn start(label: &str, masters: usize) -> Result<RedisCluster, String> {
        let mut cluster = RedisCluster { nodes: Vec::new() };
        match cluster.form(label, masters).await {
            Ok(()) => Ok(cluster),
            Err(e) => {
                cluster.stop().await;
                Err(e)
            }
        }
    }

    async fn form(&mut self, label: &str, masters: usize) -> Result<(), String> {
        for _ in 0..masters {
            let node = RedisServer::start_with(label, |_| {
                Ok(vec![
                    "--cluster-enabled".into(),
                    "yes".into(),
                    "--cluster-config-file".into(),
                    "nodes.conf".into(),
                    "--cluster-port".into(),
                    free_port()?.to_string(),
                    "--cluster-node-timeout".into(),
                    "2000".into(),
                    // A master down leaves the others serving their slots.
                    "--cluster-require-full-coverage".into(),
                    "no".into(),
                ])
            })
            .await?;
            self.nodes.push(node);
        }
        let mut conns = Vec::with_capacity(masters);
        for node in &self.nodes {
            conns.push(connect(&node.url).await?);
        }
        for (i, (range, conn)) in slot_ranges(masters).into_iter().zip(&mut conns).enumerate() {
            let () = redis::cmd("CLUSTER")
                .arg("ADDSLOTSRANGE")
                .arg(range.0)
                .arg(range.1)
                .query_async(conn)
                .await
                .map_err(|e| format!("cluster node {i}: CLUSTER ADDSLOTSRANGE: {e}"))?;
            // Distinct epochs from the start, as `redis-cli --cluster
            // create` gives them: no collision to settle after MEET.
            let () = redis::cmd("CLUSTER")
                .arg("SET-CONFIG-EPOCH")
                .arg(i + 1)
                .query_async(conn)
                .await
                .map_err(|e| format!("cluster node {i}: CLUSTER SET-CONFIG-EPOCH: {e}"))?;
        }
        let ports: Vec<(u16, u16)> = {
            let mut out = Vec::new();
            for (i, conn) in conns.iter_mut().enumerate() {
                let port: Vec<String> = redis::cmd("CONFIG")
                    .arg("GET")
                    .arg("cluster-port")
                    .query_async(conn)
                    .await
                    .map_err(|e| format!("cluster node {i}: CONFIG GET cluster-port: {e}"))?;
                let bus = port.get(1).and_then(|p| p.parse().ok()).ok_or_else(|| {
                    format!("cluster node {i} did not say its bus port: {port:?}")
                })?;
                out.push((self.nodes[i].port, bus));
            }
            out
        };
        if let Some(first) = conns.first_mut() {
            for (port, bus) in &ports[1..] {
                let () = redis::cmd("CLUSTER")
                    .arg("MEET")
                    .arg("127.0.0.1")
                    .arg(*port)
                    .arg(*bus)
                    .query_async(first)
                    .await
                    .map_err(|e| format!("CLUSTER MEET 127.0.0.1 {port}: {e}"))?;
            }
        }
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            let mut ready = true;
            for conn in &mut conns {
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query_async(conn)
                    .await
                    .map_err(|e| format!("CLUSTER INFO: {e}"))?;
                ready &= formed(&info, masters);
            }
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "the redis cluster of {masters} masters did not form within {READY_WITHIN:?}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Any node: the replicas' client learns the rest from it.
    pub fn url(&self) -> Option<&str> {
        self.nodes.first().map(|n| n.url.as_str())
    }

    pub fn pids(&self) -> impl Iterator<Item = u32> + '_ {
        self.nodes.iter().filter_map(RedisServer::pid)
    }

    pub async fn stop(&mut self) {
        for node in &mut self.nodes {
            node.stop().await;
        }
        self.nodes.clear();
    }
}

async fn connect(url: &str) -> Result<MultiplexedConnection, String> {
    let client = redis::Client::open(url).map_err(|e| format!("bad redis url {url}: {e}"))?;
    client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| format!("cannot connect to cluster node {url}: {e}"))
}

/// Slots split into `masters` contiguous ranges, as even as they go.
pub fn slot_ranges(masters: usize) -> Vec<(u16, u16)> {
    let n = masters.max(1) as u32;
    (0..n)
        .map(|i| {
            let from = (u32::from(SLOTS) * i / n) as u16;
            let to = (u32::from(SLOTS) * (i + 1) / n - 1) as u16;
            (from, to)
        })
        .collect()
}

/// Whether a node's CLUSTER INFO shows the whole cluster formed.
fn formed(info: &str, masters: usize) -> bool {
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    field("cluster_state") == Some("ok")
        && field("cluster_slots_assigned") == Some("16384")
        && field("cluster_known_nodes").and_then(|n| n.parse::<usize>().ok()) == Some(masters)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_ranges_cover_every_slot_once() {
        for masters in 1..=16 {
            let ranges = slot_ranges(masters);
            assert_eq!(ranges.len(), masters);
            assert_eq!(ranges[0].0, 0);
            assert_eq!(ranges[masters - 1].1, SLOTS - 1);
            for pair in ranges.windows(2) {
                assert_eq!(pair[0].1 + 1, pair[1].0, "{ranges:?}");
            }
            let sizes: Vec<u16> = ranges.iter().map(|r| r.1 - r.0 + 1).collect();
            let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(max - min <= 1, "{sizes:?}");
        }
        assert_eq!(
            slot_ranges(3),
            vec![(0, 5460), (5461, 10921), (10922, 16383)]
        );
    }

    #[test]
    fn formed_needs_state_slots_and_every_node() {
        let ok = "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_known_nodes:3\r\n";
        assert!(formed(ok, 3));
        assert!(!formed(ok, 4));
        assert!(!formed(&ok.replace("state:ok", "state:fail"), 3));
        assert!(!formed(&ok.replace("16384", "10922"), 3));
        assert!(!formed("", 3));
    }
}
