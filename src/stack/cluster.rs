//! A Redis Cluster rlbench runs itself: `masters` redis-server processes
//! with `cluster-enabled yes`, each on a free loopback port with a free bus
//! port, the 16,384 hash slots split evenly between them (CLUSTER
//! ADDSLOTSRANGE), joined by CLUSTER MEET, ready once every node reports
//! `cluster_state:ok` and knows every other. With `replicas_per_master`,
//! each master gets that many replicas (CLUSTER REPLICATE), and a failover
//! kills the first master and promotes its first replica (CLUSTER FAILOVER
//! TAKEOVER). Every node has the cluster's one random password (clients
//! and a replica syncing from its master authenticate with it). Stopped
//! on every exit path, as each node is a [`RedisServer`].

use super::cluster_answers::{formed, linked, names_master, slot_ranges};
use super::error::{StackError, Waited};
use super::redis::{free_port, RedisServer};
use redis::aio::MultiplexedConnection;
use reference_api::redis_url::redact;
use std::time::Duration;
use tokio::time::Instant;

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
    ) -> Result<RedisCluster, StackError> {
        let mut cluster = RedisCluster {
            nodes: Vec::new(),
            replicas: Vec::new(),
            dead: Vec::new(),
        };
        let password = super::secret::fresh()?;
        let formed = match cluster.form(label, &password, masters).await {
            Ok(()) => {
                cluster
                    .add_replicas(label, &password, replicas_per_master)
                    .await
            }
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

    async fn form(
        &mut self,
        label: &str,
        password: &str,
        masters: usize,
    ) -> Result<(), StackError> {
        for _ in 0..masters {
            self.nodes.push(start_node(label, password).await?);
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
                .map_err(|e| command(format!("cluster node {i}: CLUSTER ADDSLOTSRANGE"), e))?;
            // Distinct epochs from the start, as `redis-cli --cluster
            // create` gives them: no collision to settle after MEET.
            let () = redis::cmd("CLUSTER")
                .arg("SET-CONFIG-EPOCH")
                .arg(i + 1)
                .query_async(conn)
                .await
                .map_err(|e| command(format!("cluster node {i}: CLUSTER SET-CONFIG-EPOCH"), e))?;
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
    async fn add_replicas(
        &mut self,
        label: &str,
        password: &str,
        per_master: usize,
    ) -> Result<(), StackError> {
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
                .map_err(|e| command(format!("CLUSTER MYID on {}", node.redacted_url()), e))?;
            ids.push(id);
        }
        let mut conns = Vec::new();
        for _ in &ids {
            let mut theirs = Vec::with_capacity(per_master);
            for _ in 0..per_master {
                let node = start_node(label, password).await?;
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
                .map_err(|e| command(format!("CLUSTER REPLICATE on {}", node.redacted_url()), e))?;
        }
        let deadline = Instant::now() + READY_WITHIN;
        let mut info = redis::cmd("INFO");
        info.arg("replication");
        for (node, conn) in self.replicas.iter().flatten().zip(&mut conns) {
            until(conn, &info, deadline, linked, || Waited::ClusterReplica {
                node: node.redacted_url(),
            })
            .await?;
        }
        Ok(())
    }

    /// Kills the first master and promotes its first replica with CLUSTER
    /// FAILOVER TAKEOVER: no handshake with the dead master and no vote of
    /// the others, so the promotion does not wait for the node timeout.
    /// Returns once every live master names the promoted node as master,
    /// so a redirection from any of them leads to it.
    pub async fn fail_over(&mut self) -> Result<(), StackError> {
        let Some(replica) = self
            .replicas
            .first_mut()
            .filter(|r| !r.is_empty())
            .map(|r| r.remove(0))
        else {
            return Err(StackError::NoReplicaToPromote);
        };
        self.nodes[0].kill().await;
        let killed = std::mem::replace(&mut self.nodes[0], replica);
        self.dead.push(killed);
        let (url, shown) = (self.nodes[0].url.clone(), self.nodes[0].redacted_url());
        let mut conn = connect(&url).await?;
        let () = redis::cmd("CLUSTER")
            .arg("FAILOVER")
            .arg("TAKEOVER")
            .query_async(&mut conn)
            .await
            .map_err(|e| command(format!("CLUSTER FAILOVER TAKEOVER on {shown}"), e))?;
        let id: String = redis::cmd("CLUSTER")
            .arg("MYID")
            .query_async(&mut conn)
            .await
            .map_err(|e| command(format!("CLUSTER MYID on {shown}"), e))?;
        let deadline = Instant::now() + READY_WITHIN;
        let mut nodes = redis::cmd("CLUSTER");
        nodes.arg("NODES");
        for node in &self.nodes {
            let mut conn = connect(&node.url).await?;
            until(
                &mut conn,
                &nodes,
                deadline,
                |n| names_master(n, &id),
                || Waited::Promotion {
                    node: node.redacted_url(),
                    promoted: shown.clone(),
                },
            )
            .await?;
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

async fn start_node(label: &str, password: &str) -> Result<RedisServer, StackError> {
    RedisServer::start_with(label, password, |_| {
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
) -> Result<(), StackError> {
    let answer: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("cluster-port")
        .query_async(conn)
        .await
        .map_err(|e| {
            command(
                format!("cluster node at port {port}: CONFIG GET cluster-port"),
                e,
            )
        })?;
    let bus: u16 = match answer.get(1).and_then(|p| p.parse().ok()) {
        Some(bus) => bus,
        None => return Err(StackError::BusPort { port, answer }),
    };
    redis::cmd("CLUSTER")
        .arg("MEET")
        .arg("127.0.0.1")
        .arg(port)
        .arg(bus)
        .query_async(first)
        .await
        .map_err(|e| command(format!("CLUSTER MEET 127.0.0.1 {port}"), e))
}

/// Waits until every node of `conns` sees the cluster formed.
async fn wait_formed(
    conns: &mut [MultiplexedConnection],
    masters: usize,
    known: usize,
) -> Result<(), StackError> {
    let deadline = Instant::now() + READY_WITHIN;
    let mut info = redis::cmd("CLUSTER");
    info.arg("INFO");
    for conn in conns.iter_mut() {
        until(
            conn,
            &info,
            deadline,
            |i| formed(i, known),
            || Waited::ClusterFormed { masters, known },
        )
        .await?;
    }
    Ok(())
}

/// Asks `ask` every 10 ms until `ok` holds of the answer, or `deadline`
/// passes (then what was `waited` for, with how long).
async fn until(
    conn: &mut MultiplexedConnection,
    ask: &redis::Cmd,
    deadline: Instant,
    ok: impl Fn(&str) -> bool,
    waited: impl Fn() -> Waited,
) -> Result<(), StackError> {
    loop {
        let answer: String =
            ask.query_async(conn)
                .await
                .map_err(|source| StackError::WaitFailed {
                    waited: waited(),
                    source,
                })?;
        if ok(&answer) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(StackError::TimedOut {
                waited: waited(),
                within: READY_WITHIN,
            });
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn connect(url: &str) -> Result<MultiplexedConnection, StackError> {
    let client = redis::Client::open(url).map_err(|source| StackError::NodeUrl {
        url: redact(url),
        source,
    })?;
    client
        .get_multiplexed_async_connection()
        .await
        .map_err(|source| StackError::NodeUnreachable {
            url: redact(url),
            source,
        })
}

/// A command to a node failed: `what` names both.
fn command(what: String, source: redis::RedisError) -> StackError {
    StackError::Command { what, source }
}
