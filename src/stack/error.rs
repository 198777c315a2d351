//! What can go wrong bringing up or breaking an arm's stack, each variant
//! saying what failed in the words the terminal shows. Every one is the
//! machine refusing (exit 3: no redis-server, no port, a process that
//! would not start or answer, a cluster that did not form) except a
//! `--port` that leaves no room for the replicas, which the user chose
//! (exit 2).

use crate::error::{Exit, Kind};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum StackError {
    #[error(
        "redis-server not found on PATH: install it (e.g. `apt-get install redis-server`) \
         or point the scenario at a running Redis with [redis] url = \"redis://127.0.0.1:6379\""
    )]
    RedisMissing,
    #[error("no free loopback port: {0}")]
    NoFreePort(#[source] std::io::Error),
    /// `--port` plus the replica's place does not fit in a port.
    #[error("--port: replica {replica} would need a port above 65535")]
    PortPastRange { replica: usize },
    #[error("cannot draw random bytes for a per-run secret: {0}")]
    Secret(#[source] getrandom::Error),
    #[error("cannot find rlbench's own binary to start replicas: {0}")]
    OwnBinary(#[source] std::io::Error),
    #[error("cannot make a folder for redis-server: {0}")]
    RedisFolder(#[source] std::io::Error),
    #[error("cannot write {}: {source}", path.display())]
    RedisConfig {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A process that would not spawn: `what` is redis-server's path, or
    /// "replica NAME (PATH)".
    #[error("cannot start {what}: {source}")]
    Spawn {
        what: String,
        source: std::io::Error,
    },
    /// `last` is the last line of its log.
    #[error("redis-server exited at start on port {port}: {last}")]
    RedisExited { port: u16, last: String },
    #[error("cannot start the Redis latency proxy: {0}")]
    Proxy(#[source] std::io::Error),
    #[error("the replication proxy has a bad address {0}")]
    ProxyAddress(String),
    /// A command to one of our Redis nodes failed: `what` names the
    /// command and the node.
    #[error("{what}: {source}")]
    Command {
        what: String,
        source: redis::RedisError,
    },
    /// `url` with its password hidden.
    #[error("bad redis url {url}: {source}")]
    NodeUrl {
        url: String,
        source: redis::RedisError,
    },
    #[error("cannot connect to cluster node {url}: {source}")]
    NodeUnreachable {
        url: String,
        source: redis::RedisError,
    },
    #[error("cluster node at port {port} did not say its bus port: {answer:?}")]
    BusPort { port: u16, answer: Vec<String> },
    #[error("the cluster's first master has no replica left to promote")]
    NoReplicaToPromote,
    #[error("the replica was promoted already")]
    PromotedAlready,
    #[error("REPLICAOF NO ONE failed on {node}")]
    PromotionFailed { node: String },
    /// Waited for `waited` until the deadline.
    #[error("{waited} within {within:?}")]
    TimedOut { waited: Waited, within: Duration },
    /// Asking whether `waited` had happened failed.
    #[error("{waited}: {source}")]
    WaitFailed {
        waited: Waited,
        source: redis::RedisError,
    },
    #[error("replica {name}: {source}")]
    ReplicaConfig {
        name: String,
        source: serde_json::Error,
    },
    #[error("replica vanished at start")]
    ReplicaVanished,
    #[error("replica {name}: no stdout")]
    ReplicaNoStdout { name: String },
    /// `stderr` is the tail of what it wrote.
    #[error("replica {name} exited during start ({status}): {stderr}")]
    ReplicaExited {
        name: String,
        status: String,
        stderr: String,
    },
    #[error("replica {name} did not report ready within {within:?}: {stderr}")]
    ReplicaNotReady {
        name: String,
        within: Duration,
        stderr: String,
    },
    #[error("replica {name} died at start: {stderr}")]
    ReplicaDied { name: String, stderr: String },
    #[error("replica {name}: bad url {url}: {source}")]
    ReplicaUrl {
        name: String,
        url: String,
        source: hyper::http::uri::InvalidUri,
    },
    #[error("replica {name}: {source}")]
    ClockUrl {
        name: String,
        source: hyper::http::uri::InvalidUri,
    },
    /// `status` is `None` when nothing answered.
    #[error("replica {name} did not take the clock step (status {status:?})")]
    ClockRefused { name: String, status: Option<u16> },
}

impl Kind for StackError {
    fn exit(&self) -> Exit {
        match self {
            StackError::PortPastRange { .. } => Exit::BadInput,
            _ => Exit::Environment,
        }
    }
}

/// What a stack waits for before it goes on, in the words of its not
/// happening.
#[derive(Debug)]
pub enum Waited {
    /// A redis-server answering PING.
    Ping { port: u16 },
    /// Every node seeing the cluster formed.
    ClusterFormed { masters: usize, known: usize },
    /// A cluster replica linked to its master (`node` shown).
    ClusterReplica { node: String },
    /// `node` naming the promoted master.
    Promotion { node: String, promoted: String },
    /// The pair's replica acknowledging its primary's writes.
    PairLinked { node: String },
    /// A replica answering `/healthz`.
    Healthz { name: String, url: String },
}

impl fmt::Display for Waited {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Waited::Ping { port } => write!(f, "redis-server on port {port} did not answer PING"),
            Waited::ClusterFormed { masters, known } => write!(
                f,
                "the redis cluster of {masters} masters ({known} nodes) did not form"
            ),
            Waited::ClusterReplica { node } => {
                write!(
                    f,
                    "the cluster replica at {node} did not link to its master"
                )
            }
            Waited::Promotion { node, promoted } => {
                write!(f, "{node} did not learn of the promoted master {promoted}")
            }
            Waited::PairLinked { node } => {
                write!(f, "the redis replica at {node} did not link to its primary")
            }
            Waited::Healthz { name, url } => {
                write!(f, "replica {name} at {url} did not answer /healthz")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_are_those_the_terminal_always_showed() {
        let waited = StackError::TimedOut {
            waited: Waited::ClusterFormed {
                masters: 3,
                known: 6,
            },
            within: Duration::from_secs(20),
        };
        assert_eq!(
            waited.to_string(),
            "the redis cluster of 3 masters (6 nodes) did not form within 20s"
        );
        assert!(StackError::RedisMissing
            .to_string()
            .starts_with("redis-server not found on PATH: install it"));
        assert_eq!(StackError::RedisMissing.exit(), Exit::Environment);
        assert_eq!(
            StackError::PortPastRange { replica: 2 }.exit(),
            Exit::BadInput
        );
    }
}
