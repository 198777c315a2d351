//! What comes to an agent's inboxes, checked: a message is taken only
//! when signed with the token, in this protocol, from a controller, to
//! this agent, for the inbox it was read from; work only when fresh,
//! handed out since the agent registered, never served before, under the
//! signed lease of a run whose controller beats.

use super::dead_man::{controller_beat, Beating};
use crate::distributed::link::{self, DistributedError};
use crate::distributed::protocol::{self, Lease, Sealed, ToAgent, Work};
use crate::distributed::voice::Me;
use redis::AsyncCommands;

/// How long a blocking read of an inbox waits before the agent beats.
pub(super) const INBOX_POLL_S: f64 = 0.5;

/// What came to an agent's inboxes, signed and checked.
pub(super) enum Popped {
    Work(Box<Work>),
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
    let Some((key, text)) = popped else {
        return Ok(None);
    };
    let Some((sealed, message)) = unseal(me, &key, &text) else {
        return Ok(None);
    };
    Ok(match message {
        ToAgent::Work(work) if sealed.run == work.run => Some(Popped::Work(Box::new(work))),
        ToAgent::Bye { run } if Some(run.as_str()) == waiting && sealed.run == run => {
            Some(Popped::Bye(run))
        }
        _ => None,
    })
}

/// A sealed message to this agent, checked: signed with the token, in this
/// protocol, from a controller, to this agent, for the inbox `key` it was
/// read from, and about the run and arm its signature names.
pub(super) fn unseal(me: &Me, key: &str, text: &str) -> Option<(Sealed, ToAgent)> {
    let name = &me.reg.name;
    let Ok(sealed) = serde_json::from_str::<Sealed>(text) else {
        tracing::warn!("agent {name}: ignoring a message that is not rlbench's");
        return None;
    };
    if !sealed.verified(&me.token, key) {
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
        Ok(m) if m.run() == sealed.run && m.arm() == sealed.arm && m.kind() == sealed.kind => {
            Some((sealed, m))
        }
        _ => {
            tracing::warn!("agent {name}: ignoring a signed message it cannot read");
            None
        }
    }
}

/// Why an agent refuses work handed to it (it says so and goes on waiting).
#[derive(Debug, PartialEq, thiserror::Error)]
pub(super) enum Refusal {
    #[error("it served that work already (a replay)")]
    Served,
    #[error("the run does not hold this agent's lease, signed")]
    NotLeased,
    /// Handed out so many µs ago (or ahead) on the coordinator's clock.
    #[error(
        "handed out {:.0} s ago on the coordinator's clock (a replay)",
        *.age_us as f64 / 1e6
    )]
    Stale { age_us: i64 },
    #[error("handed out before this agent registered (an earlier agent's of its name: a replay)")]
    BeforeRegistration,
    #[error("its controller is not beating (a replay, or a controller gone)")]
    NoController,
}

/// Whether to do `work`: work it has not served (`fresh` in this process,
/// and its nonce not among those served under its lease at the
/// coordinator), handed out since it registered and recently on the
/// coordinator's clock, under the signed lease of its run, whose
/// controller beats. Taken, its nonce is kept as served.
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
    if work.issued_us < me.registered_us {
        return Ok(Err(Refusal::BeforeRegistration));
    }
    if (now - work.issued_us).abs() > protocol::WORK_FRESH_US {
        return Ok(Err(Refusal::Stale {
            age_us: now - work.issued_us,
        }));
    }
    let held: Option<String> = conn
        .get(protocol::lease(&me.reg.name))
        .await
        .map_err(|e| link::failed(url, "reading its lease", e))?;
    let lease = held.and_then(|h| Lease::read(&h, &me.token, &me.reg.name));
    let Some(lease) = lease.filter(|l| l.run == work.run && l.nonce == work.lease) else {
        return Ok(Err(Refusal::NotLeased));
    };
    if controller_beat(conn, &me.token, &work.run).await != Beating::Fresh {
        return Ok(Err(Refusal::NoController));
    }
    let served = protocol::served(&me.reg.name, &lease.nonce);
    let (added, _): (i64, i64) = redis::pipe()
        .sadd(&served, &work.nonce)
        .pexpire(
            &served,
            (protocol::LEASE_TTL_MS + protocol::WORK_FRESH_US as u64 / 1_000) as i64,
        )
        .query_async(conn)
        .await
        .map_err(|e| link::failed(url, "keeping what it served", e))?;
    Ok(if added == 1 {
        Ok(())
    } else {
        Err(Refusal::Served)
    })
}
