//! The Redis rlbench runs for an arm, in whichever shape the scenario
//! asks: one redis-server (with a delaying proxy in front when a fault
//! needs one), a Redis Cluster, or a primary and its replica. One place
//! says, for every shape, what the replicas connect to, which nodes hold
//! the data, which processes are ours, and which faults apply (a fault
//! that does not apply is refused by the scenario's validation before it
//! gets here; here it is simply not applied).

use super::cluster::RedisCluster;
use super::error::StackError;
use super::proxy::Proxy;
use super::redis::RedisServer;
use super::replicated::Replicated;
use std::time::Duration;

/// The Redis rlbench starts for an arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Managed {
    /// One redis-server.
    Single,
    /// A Redis Cluster of this many masters, each with this many replicas.
    Cluster {
        masters: usize,
        replicas_per_master: usize,
    },
    /// A primary and one replica, which a failover promotes.
    Replicated,
}

// One per arm, never moved in a loop: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum ManagedRedis {
    Single {
        server: RedisServer,
        /// In front of it when the scenario adds latency.
        proxy: Option<Proxy>,
    },
    Cluster(RedisCluster),
    Replicated(Replicated),
}

impl ManagedRedis {
    /// Starts it; `latency_proxy` puts a proxy in front of a single server.
    pub(crate) async fn start(
        kind: Managed,
        label: &str,
        latency_proxy: bool,
    ) -> Result<Self, StackError> {
        Ok(match kind {
            Managed::Single => {
                let server = RedisServer::start(label).await?;
                let proxy = match latency_proxy {
                    true => Some(Proxy::start(format!("127.0.0.1:{}", server.port)).await?),
                    false => None,
                };
                ManagedRedis::Single { server, proxy }
            }
            Managed::Cluster {
                masters,
                replicas_per_master,
            } => ManagedRedis::Cluster(
                RedisCluster::start(label, masters, replicas_per_master).await?,
            ),
            Managed::Replicated => ManagedRedis::Replicated(Replicated::start(label).await?),
        })
    }

    /// What the replicas are given: the proxy's address when there is one.
    pub(crate) fn url(&self) -> String {
        match self {
            ManagedRedis::Single {
                server,
                proxy: Some(p),
            } => server.url_at(&p.address),
            ManagedRedis::Single { server, .. } => server.url.clone(),
            ManagedRedis::Cluster(c) => c.url().unwrap_or_default().to_string(),
            ManagedRedis::Replicated(pair) => pair.url(),
        }
    }

    /// In words, for the terminal: passwords hidden.
    pub(crate) fn said(&self) -> String {
        match self {
            ManagedRedis::Single { server, .. } => {
                format!("redis-server at {}", server.redacted_url())
            }
            ManagedRedis::Cluster(c) => {
                let urls = |nodes: &mut dyn Iterator<Item = &RedisServer>| {
                    nodes
                        .map(|n| n.redacted_url())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let masters = format!(
                    "redis cluster of {} master(s) at {}",
                    c.nodes.len(),
                    urls(&mut c.nodes.iter())
                );
                match c.replicas.iter().map(Vec::len).sum::<usize>() {
                    0 => masters,
                    n => format!(
                        "{masters}, {n} replica(s) at {}",
                        urls(&mut c.replicas.iter().flatten())
                    ),
                }
            }
            ManagedRedis::Replicated(pair) => format!(
                "redis primary at {}, its replica at {}, reached through {}",
                pair.primary.redacted_url(),
                pair.replica.redacted_url(),
                reference_api::redis_url::redact(&pair.url())
            ),
        }
    }

    /// The nodes holding data (each master and its replicas; both of a
    /// pair), as URLs to connect with (passwords included). After a
    /// failover the killed node is left out when read.
    pub(crate) fn nodes(&self) -> Vec<String> {
        match self {
            ManagedRedis::Single { server, .. } => vec![server.url.clone()],
            ManagedRedis::Cluster(c) => c.data_nodes().map(|n| n.url.clone()).collect(),
            ManagedRedis::Replicated(pair) => {
                vec![pair.primary.url.clone(), pair.replica.url.clone()]
            }
        }
    }

    pub(crate) fn pids(&self) -> Vec<u32> {
        match self {
            ManagedRedis::Single { server, .. } => server.pid().into_iter().collect(),
            ManagedRedis::Cluster(c) => c.pids().collect(),
            ManagedRedis::Replicated(pair) => pair.pids().collect(),
        }
    }

    fn single(&self) -> Option<&RedisServer> {
        match self {
            ManagedRedis::Single { server, .. } => Some(server),
            _ => None,
        }
    }

    /// SIGSTOP a single server; false for other shapes.
    pub(crate) fn pause(&self) -> bool {
        self.single().map(RedisServer::pause).is_some()
    }

    pub(crate) fn resume(&self) {
        if let Some(s) = self.single() {
            s.resume();
        }
    }

    /// Delays everything through the proxy; false without one.
    pub(crate) fn delay(&self, delay: Duration, jitter: Duration) -> bool {
        match self {
            ManagedRedis::Single { proxy: Some(p), .. } => {
                p.set(delay, jitter);
                true
            }
            _ => false,
        }
    }

    /// SIGKILL a single server; false for other shapes.
    pub(crate) async fn kill(&mut self) -> bool {
        match self {
            ManagedRedis::Single { server, .. } => {
                server.kill().await;
                true
            }
            _ => false,
        }
    }

    /// A fresh single server on the killed one's port.
    pub(crate) async fn restart(&mut self, label: &str) -> Result<(), StackError> {
        match self {
            ManagedRedis::Single { server, .. } => server.restart(label).await,
            _ => Ok(()),
        }
    }

    /// Stops replication to the replica; false without a pair.
    pub(crate) fn hold_replication(&self) -> bool {
        match self {
            ManagedRedis::Replicated(pair) => {
                pair.hold_link();
                true
            }
            _ => false,
        }
    }

    /// Kills the primary (a cluster's first master) and promotes its
    /// replica; false for a single server.
    pub(crate) async fn fail_over(&mut self) -> Result<bool, StackError> {
        match self {
            ManagedRedis::Replicated(pair) => pair.fail_over().await.map(|()| true),
            ManagedRedis::Cluster(c) => c.fail_over().await.map(|()| true),
            _ => Ok(false),
        }
    }

    /// After a failover, a fresh replica for the promoted primary (of a
    /// pair; a cluster's promoted master carries on without one).
    pub(crate) async fn rejoin(&mut self) -> Result<(), StackError> {
        match self {
            ManagedRedis::Replicated(pair) => pair.rejoin().await,
            _ => Ok(()),
        }
    }

    pub(crate) async fn stop(&mut self) {
        match self {
            ManagedRedis::Single { server, proxy } => {
                *proxy = None;
                server.stop().await;
            }
            ManagedRedis::Cluster(c) => c.stop().await,
            ManagedRedis::Replicated(pair) => pair.stop().await,
        }
    }
}
