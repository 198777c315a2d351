//! The chosen agents' heartbeats as the coordinator holds them: whether
//! each still beats, and an error naming one lost before its arm started.

use super::hold::{failed, Controller};
use crate::distributed::choose::{fresh, registrations, Held};
use crate::distributed::link::{self, DistributedError};
use crate::error::Error;

/// An agent's heartbeat as the coordinator holds it: the beat of its
/// signed registration (no unsigned key says whether an agent lives).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Heart {
    Beating,
    Stale,
    Absent,
    /// Its registration is not signed with the token: someone without it
    /// wrote over it (the agent signs it again each second).
    Forged,
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
        let now_us = link::time(&mut self.conn).await?;
        let names: Vec<String> = self.agents.iter().map(|a| a.name.clone()).collect();
        let held = registrations(&mut self.conn, &names, &self.token).await?;
        Ok(held
            .into_iter()
            .map(|h| match h {
                Held::Signed(r) if fresh(&r, now_us) => Heart::Beating,
                Held::Signed(_) => Heart::Stale,
                Held::Forged => Heart::Forged,
                Held::Missing => Heart::Absent,
            })
            .collect())
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
