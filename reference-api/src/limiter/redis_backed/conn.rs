//! The replica's way to Redis: one multiplexed connection to a single
//! server (reconnecting on its own), or a cluster connection that knows
//! which master holds each slot and follows MOVED/ASK. Both answer the
//! same commands, so the scripts and the naive path never ask which.

use super::error::ConnectError;
use crate::config::{RedisBackend, Topology};
use crate::redis_url::redact;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};
use std::time::Duration;

#[derive(Clone)]
pub(super) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    /// A connection of one decision's own (`acks`).
    Own(redis::aio::MultiplexedConnection),
}

/// A client for a single server (or a replicated pair's primary), with
/// TCP_NODELAY: redis-rs leaves Nagle on, and when Redis' answer (and with
/// it the ACK) is slow, the next command waits for the delayed ACK — up to
/// 40 ms on a decision with a 50 ms budget.
pub(super) fn client(backend: &RedisBackend) -> Result<redis::Client, ConnectError> {
    // The URL carries the password: only ever shown redacted.
    let bad = |source| ConnectError::BadUrl {
        url: redact(&backend.url),
        source,
    };
    let nodelay = redis::io::tcp::TcpSettings::default().set_nodelay(true);
    let info = redis::IntoConnectionInfo::into_connection_info(backend.url.as_str())
        .map_err(bad)?
        .set_tcp_settings(nodelay);
    redis::Client::open(info).map_err(bad)
}

/// Connects as `backend` says; `timeout` is one decision's budget.
pub(super) async fn connect(
    backend: &RedisBackend,
    timeout: Duration,
) -> Result<Conn, ConnectError> {
    // The URL carries the password: only ever shown redacted.
    let shown = redact(&backend.url);
    let bad = |source| ConnectError::BadUrl {
        url: shown.clone(),
        source,
    };
    // TCP_NODELAY: see [`client`].
    let nodelay = redis::io::tcp::TcpSettings::default().set_nodelay(true);
    let unreachable = |source| match backend.topology {
        Topology::Single | Topology::Replicated => ConnectError::Unreachable {
            url: shown.clone(),
            source,
        },
        Topology::Cluster => ConnectError::ClusterUnreachable {
            url: shown.clone(),
            source,
        },
    };
    match backend.topology {
        Topology::Single | Topology::Replicated => {
            let client = client(backend)?;
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(Duration::from_secs(2)))
                .set_response_timeout(Some(timeout.max(Duration::from_millis(100))))
                .set_number_of_retries(1)
                // Reconnect on the scale of a decision's budget, not the
                // default 100 ms doubling: Redis back means decisions back.
                .set_min_delay(Duration::from_millis(10))
                .set_max_delay(timeout.max(Duration::from_millis(10)));
            ConnectionManager::new_with_config(client, config)
                .await
                .map(Conn::Single)
                .map_err(unreachable)
        }
        Topology::Cluster => {
            let client = redis::cluster::ClusterClient::builder([backend.url.as_str()])
                .tcp_settings(nodelay)
                .connection_timeout(Duration::from_secs(2))
                .response_timeout(timeout.max(Duration::from_millis(100)))
                // Redirections (MOVED, ASK, TRYAGAIN) are retried: the
                // command did not run. The decision's own timeout bounds
                // the whole of it.
                .retries(3)
                .min_retry_wait(2)
                .max_retry_wait(timeout.as_millis().max(10) as u64)
                .build()
                .map_err(bad)?;
            client
                .get_async_connection()
                .await
                .map(Conn::Cluster)
                .map_err(unreachable)
        }
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
            Conn::Own(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Own(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
            Conn::Own(c) => c.get_db(),
        }
    }
}

/// The Redis key of a customer: the arm's prefix, then the customer in
/// braces — a Redis Cluster hashes only what is inside the first braces,
/// so every key of one customer lands in one slot, and customers spread
/// over the masters. (The prefix holds no braces.)
pub(super) fn key_of(prefix: &str, customer: &str) -> String {
    let mut key = String::with_capacity(prefix.len() + customer.len() + 2);
    key.push_str(prefix);
    key.push('{');
    key.push_str(customer);
    key.push('}');
    key
}

#[cfg(test)]
mod tests {
    use super::key_of;

    #[test]
    fn the_customer_is_the_hash_tag() {
        assert_eq!(key_of("rlbench:run1:arm:", "c1"), "rlbench:run1:arm:{c1}");
        // A brace in the customer still leaves one tag per customer: the
        // first `{` is the prefix's end, and the prefix has none.
        assert_eq!(key_of("p:", "a}b"), "p:{a}b}");
    }
}
