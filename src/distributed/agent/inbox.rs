//! What comes to an agent's inboxes, checked: a message is taken only
//! when signed with the token, in this protocol, from a controller, to
//! this agent; work only when fresh, for a run it has not served, from the
//! controller that leased it.

use crate::distributed::link::{self, DistributedError};
use crate::distributed::protocol::{self, Sealed, ToAgent, Work};
use crate::distributed::voice::Me;
use redis::AsyncCommands;

/// How long a blocking read of an inbox waits before the agent beats.
pub(super) const INBOX_POLL_S: f64 = 0.5;

/// What came to an agent's inboxes, signed and checked.
pub(super) enum Popped {
    Work(Work),
    /// The run (whose inbox it waited on) is over.
    Bye(String),
}

/// The next message in the agent's work inbox (or, with `waiting`, that
/// run's inbox), or `None` after half a second. Messages not signed with
/// the token, not for this agent, or not from a controller are dropped
/// with a warning.
pub(super) async fn next_message(
    conn: &mut link::Conn,
    me: &Me,
    waiting: Option<&str>,
    url: &str,
) -> Result<Option<Popped>, DistributedError> {
    let name = &me.reg.name;
    let mut keys = vec![protocol::inbox(name)];
    if let Some(run) = waiting {
        keys.push(protocol::run_inbox(name, run));
    }
    let popped: Option<(String, String)> = conn
        .blpop(&keys, INBOX_POLL_S)
        .await
        .map_err(|e| link::failed(url, "reading the inbox", e))?;
    let Some((_, text)) = popped else {
        return Ok(None);
    };
    let Some((sealed, message)) = unseal(me, &text) else {
        return Ok(None);
    };
    Ok(match message {
        ToAgent::Work(work) if sealed.run == work.run => Some(Popped::Work(work)),
        ToAgent::Bye { run } if Some(run.as_str()) == waiting && sealed.run == run => {
            Some(Popped::Bye(run))
        }
        _ => None,
    })
}

/// A sealed message to this agent, checked: signed with the token, in this
/// protocol, from a controller, to this agent.
pub(super) fn unseal(me: &Me, text: &str) -> Option<(Sealed, ToAgent)> {
    let name = &me.reg.name;
    let Ok(sealed) = serde_json::from_str::<Sealed>(text) else {
        tracing::warn!("agent {name}: ignoring a message that is not rlbench's");
        return None;
    };
    if !sealed.verified(&me.token) {
        tracing::warn!(
            "agent {name}: ignoring a message not signed with this agent's token \
             (or of another protocol version)"
        );
        return None;
    }
    if sealed.to != *name || sealed.from != protocol::CONTROLLER {
        tracing::warn!("agent {name}: ignoring a message for {:?}", sealed.to);
        return None;
    }
    match serde_json::from_str::<ToAgent>(&sealed.body) {
        Ok(m) => Some((sealed, m)),
        Err(_) => {
            tracing::warn!("agent {name}: ignoring a signed message it cannot read");
            None
        }
    }
}

/// Why an agent refuses work handed to it (it says so and goes on waiting).
#[derive(Debug, PartialEq, thiserror::Error)]
pub(super) enum Refusal {
    #[error("it served that run already (a replay)")]
    Served,
    #[error("the run does not hold this agent's lease")]
    NotLeased,
    /// Handed out so many µs ago (or ahead) on the coordinator's clock.
    #[error(
        "handed out {:.0} s ago on the coordinator's clock (a replay)",
        *.age_us as f64 / 1e6
    )]
    Stale { age_us: i64 },
}

/// Whether to do `work`: a run it has not served (`fresh`), handed out
/// recently on the coordinator's clock, by the controller that leased it.
pub(super) async fn accept(
    conn: &mut link::Conn,
    me: &Me,
    work: &Work,
    fresh: bool,
    url: &str,
) -> Result<Result<(), Refusal>, DistributedError> {
    if !fresh {
        return Ok(Err(Refusal::Served));
    }
    let now = link::time(conn)
        .await
        .map_err(|e| link::failed(url, "reading its clock", e))?;
    let lease: Option<String> = conn
        .get(protocol::lease(&me.reg.name))
        .await
        .map_err(|e| link::failed(url, "reading its lease", e))?;
    Ok(if lease.as_deref() != Some(work.run.as_str()) {
        Err(Refusal::NotLeased)
    } else if (now - work.issued_us).abs() > protocol::WORK_FRESH_US {
        Err(Refusal::Stale {
            age_us: now - work.issued_us,
        })
    } else {
        Ok(())
    })
}
