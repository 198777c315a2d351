//! Waiting for replicas (`wait_replicas`): after a decision's writes, `WAIT
//! n ms` on the same connection, which returns once `n` replicas have
//! every write made on that connection so far, or after `ms` with how many
//! had. The wait is half the decision's budget, so WAIT answers well
//! before the connection's own response timeout. The Lua path sends its
//! WAIT in one pipeline with the script ([`Acks::wait`]); the naive path
//! calls [`Acks::acknowledged`] after its commands.

use super::Conn;

pub struct Acks {
    conn: Conn,
    replicas: u32,
    timeout_ms: u64,
}

impl Acks {
    /// On `conn`, the connection the scripts run on.
    pub fn new(conn: Conn, replicas: u32, timeout_ms: u64) -> Acks {
        Acks {
            conn,
            replicas,
            // WAIT 0 would block for ever: at least 1 ms.
            timeout_ms: timeout_ms.max(1),
        }
    }

    /// `WAIT`'s two arguments: replicas, and milliseconds.
    pub fn wait(&self) -> (u32, u64) {
        (self.replicas, self.timeout_ms)
    }

    /// Whether `replicas` replicas have this client's writes so far.
    pub async fn acknowledged(&self) -> bool {
        let acked: redis::RedisResult<i64> = redis::cmd("WAIT")
            .arg(self.replicas)
            .arg(self.timeout_ms)
            .query_async(&mut self.conn.clone())
            .await;
        matches!(acked, Ok(n) if n >= i64::from(self.replicas))
    }
}
