//! The controller's life as an agent watches it: its signed beat read at
//! the coordinator, and the dead man's switch that says when it is gone.

use crate::distributed::link;
use crate::distributed::protocol::{self, Beat, Sealed};
use crate::distributed::seal::Token;
use redis::AsyncCommands;
use std::time::Duration;
use tokio::time::Instant;

/// The controller's beat as an agent reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Beating {
    /// Signed, of this run, at most [`protocol::BEAT_FRESH_US`] old.
    Fresh,
    /// Signed, of this run, but old: it stopped beating.
    Stale,
    /// There, but not signed with the token for this run: someone wrote
    /// over it (the controller writes it again at its next beat).
    Forged,
    /// Not there, or the coordinator does not answer: the coordinator's
    /// trouble (a restart forgets the beat) as likely as the controller's.
    Unknown,
}

/// The controller of `run`'s last beat, by the coordinator's clock.
pub(super) async fn controller_beat(conn: &mut link::Conn, token: &Token, run: &str) -> Beating {
    let Ok(now) = link::time(conn).await else {
        return Beating::Unknown;
    };
    let text = match conn.get::<_, Option<String>>(protocol::beat(run)).await {
        Ok(Some(text)) => text,
        _ => return Beating::Unknown,
    };
    let Ok(sealed) = serde_json::from_str::<Sealed>(&text) else {
        return Beating::Forged;
    };
    if !sealed.verified(token, &protocol::beat(run))
        || sealed.run != run
        || sealed.from != protocol::CONTROLLER
    {
        return Beating::Forged;
    }
    match serde_json::from_str::<Beat>(&sealed.body) {
        Ok(b) if b.at_us == sealed.at_us && now - b.at_us <= protocol::BEAT_FRESH_US => {
            Beating::Fresh
        }
        Ok(b) if b.at_us == sealed.at_us => Beating::Stale,
        _ => Beating::Forged,
    }
}

/// The controller's life as an agent watches it: gone once no fresh beat
/// was seen for [`protocol::DEAD_MAN_GRACE_MS`] of watching while its beat
/// is there and old (a controller killed leaves it so: within 2 s of its
/// last beat, all told), or for [`UNKNOWN_WITHIN`] while the beat cannot be
/// read at all (a coordinator restarting forgets it; the controller writes
/// it again within a beat of reconnecting). Time the agent itself was held
/// up (its writes retried while the coordinator refused them: then the
/// controller's beats were refused too) does not count.
pub(super) struct DeadMan {
    seen: Instant,
    looked: Instant,
    /// The beat as last read.
    last: Beating,
}

/// How long a beat that cannot be read at all is waited for.
const UNKNOWN_WITHIN: Duration = Duration::from_secs(10);

impl DeadMan {
    pub(super) fn new() -> DeadMan {
        DeadMan {
            seen: Instant::now(),
            looked: Instant::now(),
            last: Beating::Fresh,
        }
    }

    /// Looks at the beat: false once the controller is gone.
    pub(super) async fn alive(&mut self, conn: &mut link::Conn, token: &Token, run: &str) -> bool {
        let now = Instant::now();
        if now - self.looked > Duration::from_millis(protocol::DEAD_MAN_GRACE_MS / 2) {
            self.seen = now;
        }
        self.looked = now;
        let was = self.last;
        self.last = controller_beat(conn, token, run).await;
        let grace = match self.last {
            Beating::Fresh => {
                self.seen = Instant::now();
                return true;
            }
            Beating::Stale => Duration::from_millis(protocol::DEAD_MAN_GRACE_MS),
            Beating::Forged | Beating::Unknown => UNKNOWN_WITHIN,
        };
        if self.last == Beating::Forged && was != Beating::Forged {
            tracing::warn!(
                "the controller's beat of run {run} at the coordinator is not signed with the \
                 token: someone without it wrote over it"
            );
        }
        self.seen.elapsed() <= grace
    }

    /// Why the controller counts as gone, once it does: `None` when its
    /// beat stopped (it died), else the coordinator's trouble — the beat
    /// forged or unreadable for [`UNKNOWN_WITHIN`].
    pub(super) fn coordinator_blamed(&self) -> Option<String> {
        match self.last {
            Beating::Fresh | Beating::Stale => None,
            Beating::Forged => Some(format!(
                "the coordinator held a forged beat of the controller (not signed with the \
                 token) for {UNKNOWN_WITHIN:?}: the load was stopped"
            )),
            Beating::Unknown => Some(format!(
                "the coordinator held no readable beat of the controller for \
                 {UNKNOWN_WITHIN:?}: the load was stopped"
            )),
        }
    }
}
