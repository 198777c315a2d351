//! `[redis]`: the Redis the reference API's Redis modes count in.

use reference_api::config::Topology;
use std::time::Duration;

/// `[redis]`: an existing server, or the one (or cluster) rlbench starts.
#[derive(Clone, Debug)]
pub(crate) struct RedisSpec {
    /// An existing Redis to use; `None`: rlbench starts its own.
    pub url: Option<String>,
    /// Bound on one decision's Redis round trips.
    pub timeout: Duration,
    /// One server, or a Redis Cluster (`url` then names any of its nodes).
    pub topology: Topology,
    /// The masters of the cluster rlbench starts (`topology = "cluster"`).
    pub masters: usize,
    /// Each of those masters' replicas (0 to 2): what `redis_failover`
    /// promotes on a cluster.
    pub replicas_per_master: usize,
}
