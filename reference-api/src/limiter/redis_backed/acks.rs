//! Waiting for replicas (`wait_replicas`): after a decision's writes, `WAIT
//! n ms` on the same connection, which returns once `n` replicas have
//! every write made on that connection so far, or after `ms` with how many
//! had. The wait is half the decision's budget, so WAIT answers well
//! before the connection's own response timeout.
//!
//! WAIT blocks the connection it is sent on: behind it, nothing else on
//! that connection runs until it returns. On the replica's one shared
//! connection a WAIT that missed its budget (a replica slow to
//! acknowledge: a busy machine, a replica still syncing, none since a
//! failover) held every decision behind it, each of those then waited in
//! turn, and once requests came faster than acknowledgements the queue
//! inside Redis never drained — a replica that only rejected for the rest
//! of the run. So each decision that waits has a connection of its own
//! for the whole decision ([`Acks::take`]), its writes and its WAIT; one
//! whose decision timed out is closed, never reused (its WAIT may still be
//! blocking in Redis), so a slow acknowledgement costs only the decisions
//! that asked for it. The Lua path sends its WAIT in one pipeline with the
//! script; the naive path calls [`Acks::acknowledged`] after its commands.
//!
//! (A pool crate returns a connection on drop, a timed-out one too; that
//! is the one thing this must not do, so these few lines are written here.)

use super::conn::{self, Conn};
use super::error::ConnectError;
use crate::config::RedisBackend;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Semaphore;

/// Connections a replica keeps for waiting decisions, at most (more
/// decisions at once wait for one, within their budget).
const MOST: usize = 64;

pub(super) struct Acks {
    client: redis::Client,
    idle: Mutex<Vec<redis::aio::MultiplexedConnection>>,
    slots: Semaphore,
    replicas: u32,
    timeout_ms: u64,
    budget: Duration,
}

/// A connection taken for one decision; given back with [`Acks::give`]
/// when the decision finished, else dropped (and closed) with it.
pub(super) struct Taken<'a> {
    pub conn: Conn,
    _slot: tokio::sync::SemaphorePermit<'a>,
}

impl Acks {
    /// For `backend`'s server; `budget` is one decision's.
    pub(super) fn new(
        backend: &RedisBackend,
        replicas: u32,
        budget: Duration,
    ) -> Result<Acks, ConnectError> {
        Ok(Acks {
            client: conn::client(backend)?,
            idle: Mutex::new(Vec::new()),
            slots: Semaphore::new(MOST),
            replicas,
            // Half the budget; WAIT 0 would block for ever: at least 1 ms.
            timeout_ms: (budget.as_millis() as u64 / 2).max(1),
            budget,
        })
    }

    /// `WAIT`'s two arguments: replicas, and milliseconds.
    pub(super) fn wait(&self) -> (u32, u64) {
        (self.replicas, self.timeout_ms)
    }

    /// A connection no other decision is using: an idle one, or a new one.
    pub(super) async fn take(&self) -> redis::RedisResult<Taken<'_>> {
        let slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| redis::RedisError::from((redis::ErrorKind::Io, "closed")))?;
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match idle {
            Some(c) => c,
            None => {
                let config = redis::AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(self.budget))
                    .set_response_timeout(Some(self.budget));
                self.client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await?
            }
        };
        Ok(Taken {
            conn: Conn::Own(conn),
            _slot: slot,
        })
    }

    /// Keeps the connection of a decision that finished, for the next.
    pub(super) fn give(&self, taken: Taken<'_>) {
        if let Conn::Own(c) = taken.conn {
            self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(c);
        }
    }

    /// Whether `replicas` replicas have `conn`'s writes so far.
    pub(super) async fn acknowledged(&self, conn: &mut Conn) -> bool {
        let acked: redis::RedisResult<i64> = redis::cmd("WAIT")
            .arg(self.replicas)
            .arg(self.timeout_ms)
            .query_async(conn)
            .await;
        matches!(acked, Ok(n) if n >= i64::from(self.replicas))
    }
}
