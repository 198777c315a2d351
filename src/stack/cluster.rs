//! A Redis Cluster rlbench runs itself: `masters` redis-server processes
//! with `cluster-enabled yes`, each on a free loopback port with a free bus
//! port, the 16,384 hash slots split evenly between them (CLUSTER
//! ADDSLOTSRANGE), joined by CLUSTER MEET, ready once every node reports
//! `cluster_state:ok` and knows every other. With `replicas_per_master`,
//! each master gets that many replicas (CLUSTER REPLICATE), and a failover
//! kills the first master and promotes its first replica (CLUSTER FAILOVER
//! TAKEOVER). Stopped on every exit path, as each node is a
//! [`RedisServer`].

use super::redis::{free_port, RedisServer};
use redis::aio::MultiplexedConnection;
use std::time::Duration;
use tokio::time::Instant;

pub const SLOTS: u16 = 16_384;
const READY_WITHIN: Duration = Duration::from_secs(20);

pub struct RedisCluster {
    /// The masters, in slot order; after a failover the promoted replica
    /// stands in its master's place.
    pub nodes: Vec<RedisServer>,
    /// Each master's replicas, by the master's place in `nodes`.
    pub replicas: Vec<Vec<RedisServer>>,
    /// Masters a failover killed, kept to be stopped with the rest.
    dead: Vec<RedisServer>,
}

impl RedisCluster {
    pub async fn start(
        label: &str,
        masters: usize,
        replicas_per_master: usize,
    ) -> Result<RedisCluster, String> {
        let mut cluster = RedisCluster {
            nodes: Vec::new(),
            replicas: Vec::new(),
            dead: Vec::new(),
        };
        let formed = match cluster.form(label, masters).await {
            Ok(()) => cluster.add_replicas(label, replicas_per_master).await,
            Err(e) => Err(e),
        };
        match formed {
            Ok(()) => Ok(cluster),
            Err(e) => {
                cluster.stop().await;
                Err(e)
            }
        }
    }

    async fn form(&mut self, label: &str, masters: usize) -> Result<(), String> {
        for _ in 0..masters {
            self.nodes.push(start_node(label).await?);
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
        if let Some((first, rest)) = conns.split_first_mut() {
            for (node, conn) in self.nodes[1..].iter().zip(rest) {
                meet(first, node.port, conn).await?;
            }
        }
        wait_formed(&mut conns, masters, masters).await
    }

    /// Each master's replicas: joined, then told whom to follow, then
    /// waited for until each has the whole of its master's data.
    async fn add_replicas(&mut self, label: &str, per_master: usize) -> Result<(), String> {
        if per_master == 0 {
            return Ok(());
        }
        let mut first = connect(&self.nodes[0].url).await?;
        let mut ids = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            let mut conn = connect(&node.url).await?;
            let id: String = redis::cmd("CLUSTER")
                .arg("MYID")
                .query_async(&mut conn)
                .await
                .map_err(|e| format!("CLUSTER MYID on {}: {e}", node.url))?;
            ids.push(id);
        }
        let mut conns = Vec::new();
        for _ in &ids {
            let mut theirs = Vec::with_capacity(per_master);
            for _ in 0..per_master {
                let node = start_node(label).await?;
                let mut conn = connect(&node.url).await?;
                meet(&mut first, node.port, &mut conn).await?;
                conns.push(conn);
                theirs.push(node);
            }
            self.replicas.push(theirs);
        }
        let masters = self.nodes.len();
        let total = masters * (1 + per_master);
        wait_formed(&mut conns, masters, total).await?;
        let followers = self
            .replicas
            .iter()
            .zip(&ids)
            .flat_map(|(r, id)| r.iter().map(move |n| (n, id)));
        for ((node, id), conn) in followers.zip(&mut conns) {
            let () = redis::cmd("CLUSTER")
                .arg("REPLICATE")
                .arg(id)
                .query_async(conn)
                .await
                .map_err(|e| format!("CLUSTER REPLICATE on {}: {e}", node.url))?;
        }
        let deadline = Instant::now() + READY_WITHIN;
        for (node, conn) in self.replicas.iter().flatten().zip(&mut conns) {
            loop {
                let info: String = redis::cmd("INFO")
                    .arg("replication")
                    .query_async(conn)
                    .await
                    .map_err(|e| format!("INFO replication on {}: {e}", node.url))?;
                if linked(&info) {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!(
                        "the cluster replica at {} did not link to its master within {READY_WITHIN:?}",
                        node.url
                    ));
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        Ok(())
    }

    /// Kills the first master and promotes its first replica with CLUSTER
    /// FAILOVER TAKEOVER: no handshake with the dead master and no vote of
    /// the others, so the promotion does not wait for the node timeout.
    /// Returns once every live master names the promoted node as master,
    /// so a redirection from any of them leads to it.
    pub async fn fail_over(&mut self) -> Result<(), String> {
        let Some(replica) = self
            .replicas
            .first_mut()
            .filter(|r| !r.is_empty())
            .map(|r| r.remove(0))
        else {
            return Err("the cluster's first master has no replica left to promote".to_string());
        };
        self.nodes[0].kill().await;
        let killed = std::mem::replace(&mut self.nodes[0], replica);
        self.dead.push(killed);
        let url = self.nodes[0].url.clone();
        let mut conn = connect(&url).await?;
        let () = redis::cmd("CLUSTER")
            .arg("FAILOVER")
            .arg("TAKEOVER")
            .query_async(&mut conn)
            .await
            .map_err(|e| format!("CLUSTER FAILOVER TAKEOVER on {url}: {e}"))?;
        let id: String = redis::cmd("CLUSTER")
            .arg("MYID")
            .query_async(&mut conn)
            .await
            .map_err(|e| format!("CLUSTER MYID on {url}: {e}"))?;
        let deadline = Instant::now() + READY_WITHIN;
        for node in &self.nodes {
            let mut conn = connect(&node.url).await?;
            loop {
                let nodes: String = redis::cmd("CLUSTER")
                    .arg("NODES")
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| format!("CLUSTER NODES on {}: {e}", node.url))?;
                if names_master(&nodes, &id) {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!(
                        "{} did not learn of the promoted master {url} within {READY_WITHIN:?}",
                        node.url
                    ));
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        Ok(())
    }

    /// Any node: the replicas' client learns the rest from it.
    pub fn url(&self) -> Option<&str> {
        self.nodes.first().map(|n| n.url.as_str())
    }

    /// Every node holding data: the masters, then their replicas (whose
    /// replayed writes are part of what a decision costs).
    pub fn data_nodes(&self) -> impl Iterator<Item = &RedisServer> {
        self.nodes.iter().chain(self.replicas.iter().flatten())
    }

    pub fn pids(&self) -> impl Iterator<Item = u32> + '_ {
        self.data_nodes()
            .chain(&self.dead)
            .filter_map(RedisServer::pid)
    }

    pub async fn stop(&mut self) {
        let all = self
            .nodes
            .iter_mut()
            .chain(self.replicas.iter_mut().flatten())
            .chain(&mut self.dead);
        for node in all {
            node.stop().await;
        }
        self.nodes.clear();
        self.replicas.clear();
        self.dead.clear();
    }
}

async fn start_node(label: &str) -> Result<RedisServer, String> {
    RedisServer::start_with(label, |_| {
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
            // A replica promoted by rlbench only, at the time the fault
            // says, not on its own after the node timeout.
            "--cluster-replica-no-failover".into(),
            "yes".into(),
            "--repl-diskless-sync-delay".into(),
            "0".into(),
        ])
    })
    .await
}

/// `first` meets the node at `port`, whose bus port `conn` is asked for.
async fn meet(
    first: &mut MultiplexedConnection,
    port: u16,
    conn: &mut MultiplexedConnection,
) -> Result<(), String> {
    let answer: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("cluster-port")
        .query_async(conn)
        .await
        .map_err(|e| format!("cluster node at port {port}: CONFIG GET cluster-port: {e}"))?;
    let bus: u16 = answer.get(1).and_then(|p| p.parse().ok()).ok_or_else(|| {
        format!("cluster node at port {port} did not say its bus port: {answer:?}")
    })?;
    redis::cmd("CLUSTER")
        .arg("MEET")
        .arg("127.0.0.1")
        .arg(port)
        .arg(bus)
        .query_async(first)
        .await
        .map_err(|e| format!("CLUSTER MEET 127.0.0.1 {port}: {e}"))
}

/// Waits until every node of `conns` sees the cluster formed.
async fn wait_formed(
    conns: &mut [MultiplexedConnection],
    masters: usize,
    known: usize,
) -> Result<(), String> {
    let deadline = Instant::now() + READY_WITHIN;
    loop {
        let mut ready = true;
        for conn in conns.iter_mut() {
            let info: String = redis::cmd("CLUSTER")
                .arg("INFO")
                .query_async(conn)
                .await
                .map_err(|e| format!("CLUSTER INFO: {e}"))?;
            ready &= formed(&info, known);
        }
        if ready {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the redis cluster of {masters} masters ({known} nodes) did not form within {READY_WITHIN:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
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

/// Whether a replica's `INFO replication` shows its link up and synced.
fn linked(info: &str) -> bool {
    let lines: Vec<&str> = info.lines().map(str::trim).collect();
    lines.contains(&"master_link_status:up") && lines.contains(&"master_sync_in_progress:0")
}

/// Whether a `CLUSTER NODES` answer lists the node `id` as a live master.
fn names_master(nodes: &str, id: &str) -> bool {
    nodes.lines().any(|line| {
        let mut fields = line.split_whitespace();
        let (Some(node), Some(_), Some(flags)) = (fields.next(), fields.next(), fields.next())
        else {
            return false;
        };
        let flags: Vec<&str> = flags.split(',').collect();
        node == id && flags.contains(&"master") && !flags.contains(&"fail")
    })
}

/// Whether a node's CLUSTER INFO shows the whole cluster formed, with
/// `nodes` nodes known.
fn formed(info: &str, nodes: usize) -> bool {
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    field("cluster_state") == Some("ok")
        && field("cluster_slots_assigned") == Some("16384")
        && field("cluster_known_nodes").and_then(|n| n.parse::<usize>().ok()) == Some(nodes)
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

    #[test]
    fn a_replica_is_linked_once_synced() {
        let up =
            "# Replication\r\nrole:slave\r\nmaster_link_status:up\r\nmaster_sync_in_progress:0\r\n";
        assert!(linked(up));
        assert!(!linked(&up.replace("status:up", "status:down")));
        assert!(!linked(&up.replace("progress:0", "progress:1")));
        assert!(!linked("role:master\r\n"));
    }

    #[test]
    fn the_promoted_node_must_be_a_live_master() {
        let nodes = "aaa 127.0.0.1:7001@17001 myself,master - 0 0 4 connected 0-5460\n\
bbb 127.0.0.1:7002@17002 master,fail - 0 0 1 connected\n\
ccc 127.0.0.1:7003@17003 slave aaa 0 0 4 connected\n";
        assert!(names_master(nodes, "aaa"));
        assert!(!names_master(nodes, "bbb"), "a failed master");
        assert!(!names_master(nodes, "ccc"), "a replica");
        assert!(!names_master(nodes, "ddd"), "unknown");
        assert!(!names_master("", "aaa"));
    }
}
