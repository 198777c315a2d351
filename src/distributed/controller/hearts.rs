//! The chosen agents' heartbeats as the coordinator holds them: whether
//! each still beats, and an error naming one lost before its arm started.

use super::hold::{failed, Controller};
use crate::distributed::link::{self, DistributedError};
use crate::distributed::protocol;
use crate::error::Error;
use redis::AsyncCommands;

/// An agent's heartbeat as the coordinator holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Heart {
    Beating,
    Stale,
    Absent,
}

impl Controller {
    /// Whether each chosen agent still beats.
    ///
    /// An agent whose heartbeat is old stopped beating; one the coordinator
    /// holds no heartbeat of at all may be one it forgot (a restart): only
    /// an old one counts as stopped (`false`), the caller gives an absent
    /// one [`ABSENT_WITHIN`](super::collect::ABSENT_WITHIN) to register again.
    pub(super) async fn alive(&mut self) -> redis::RedisResult<Vec<bool>> {
        Ok(self
            .hearts()
            .await?
            .into_iter()
            .map(|h| h != Heart::Stale)
            .collect())
    }

    pub(super) async fn hearts(&mut self) -> redis::RedisResult<Vec<Heart>> {
        let now_ms = link::time(&mut self.conn).await? / 1_000;
        let mut hearts = Vec::new();
        for a in &self.agents {
            let score: Option<i64> = self.conn.zscore(protocol::agents(), &a.name).await?;
            hearts.push(match score {
                Some(s) if s >= now_ms - protocol::HEARTBEAT_TIMEOUT_MS => Heart::Beating,
                Some(_) => Heart::Stale,
                None => Heart::Absent,
            });
        }
        Ok(hearts)
    }

    /// An error naming an agent that stopped beating before it was ready.
    pub(super) async fn check_alive(&mut self, ready: &[bool], arm: &str) -> Result<(), Error> {
        let alive = self
            .alive()
            .await
            .map_err(failed(&self.url, "reading heartbeats"))?;
        if let Some(i) = (0..alive.len()).find(|&i| !alive[i] && !ready[i]) {
            return Err(DistributedError::Agents(format!(
                "agent {} was lost before arm {arm} started",
                self.agents[i].name
            ))
            .into());
        }
        Ok(())
    }
}
