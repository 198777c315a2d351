//! The run's hold on its agents at the coordinator: each agent's lease
//! (taken for all at once, kept while the run lasts, let go at its end)
//! and the run's signed heartbeat that keeps them.

use crate::distributed::choose::Chosen;
use crate::distributed::link;
use crate::distributed::protocol::{self, Beat, Lease, Sealed};
use crate::distributed::seal::{nonce, Header, Token};
use crate::error::Error;
use std::time::Duration;

/// Keeps a lease only for the run that holds it: `KEYS[1]` the lease,
/// `ARGV[1]` the run's sealed lease, `ARGV[2]` its lifetime (ms); with
/// `ARGV[2]` = 0 the lease is let go. A lease the coordinator lost (a
/// restart) is taken again; one another run holds is left alone.
const LEASE_KEEP: &str = r"
local held = redis.call('GET', KEYS[1])
if ARGV[2] == '0' then
  if held == ARGV[1] then return redis.call('DEL', KEYS[1]) end
  return 0
end
if held and held ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
";

/// `run`'s lease on `agent`, sealed (what its key holds), and its mark.
fn sealed_lease(
    token: &Token,
    run: &str,
    agent: &str,
    now_us: i64,
) -> Result<(String, String), Error> {
    let nonce = nonce()?;
    let body = serde_json::to_string(&Lease {
        run: run.to_string(),
        nonce: nonce.clone(),
    })
    .unwrap_or_default();
    let place = protocol::lease(agent);
    let sealed = Sealed::new(
        token,
        &Header::of_controller(run, "", agent, &place, 0, now_us, "lease"),
        body,
    );
    Ok((serde_json::to_string(&sealed).unwrap_or_default(), nonce))
}

/// Leases every one of `agents` to `run`, atomically each (`SET NX`),
/// each lease signed: false (the others let go) when another run took
/// one first.
pub(super) async fn lease_all(
    conn: &mut link::Conn,
    url: &str,
    run: &str,
    token: &Token,
    agents: &mut [Chosen],
) -> Result<bool, Error> {
    let now = link::time(conn)
        .await
        .map_err(|e| Error::from(link::failed(url, "reading its clock", e)))?;
    for i in 0..agents.len() {
        let (sealed, nonce) = sealed_lease(token, run, &agents[i].name, now)?;
        let ok: Option<String> = redis::cmd("SET")
            .arg(protocol::lease(&agents[i].name))
            .arg(&sealed)
            .arg("NX")
            .arg("PX")
            .arg(protocol::LEASE_TTL_MS)
            .query_async(conn)
            .await
            .map_err(|e| Error::from(link::failed(url, "leasing agents", e)))?;
        if ok.is_none() {
            for a in &agents[..i] {
                let _ = keep_lease(conn, &a.name, &a.lease, 0).await;
            }
            return Ok(false);
        }
        agents[i].lease = sealed;
        agents[i].lease_nonce = nonce;
    }
    Ok(true)
}

/// Keeps the lease of `agent` (`held`, sealed) another `ttl_ms` (0: lets
/// it go), when it is still the run's.
pub(super) async fn keep_lease(
    conn: &mut link::Conn,
    agent: &str,
    held: &str,
    ttl_ms: u64,
) -> redis::RedisResult<i64> {
    redis::Script::new(LEASE_KEEP)
        .key(protocol::lease(agent))
        .arg(held)
        .arg(ttl_ms)
        .invoke_async(conn)
        .await
}

/// How often a beat that failed is tried again at once, and after how long.
const BEAT_TRIES: usize = 5;
const BEAT_RETRY: Duration = Duration::from_millis(30);

/// One beat: signed with the coordinator's time, written under the run's
/// key.
async fn beat_once(
    conn: &mut link::Conn,
    token: &Token,
    run: &str,
    n: u64,
) -> redis::RedisResult<()> {
    let now = link::time(conn).await?;
    let body = serde_json::to_string(&Beat { at_us: now }).unwrap_or_default();
    let place = protocol::beat(run);
    let sealed = Sealed::new(
        token,
        &Header::of_controller(run, "", "", &place, n, now, "beat"),
        body,
    );
    redis::cmd("SET")
        .arg(protocol::beat(run))
        .arg(serde_json::to_string(&sealed).unwrap_or_default())
        .arg("PX")
        .arg(protocol::BEAT_TTL_MS)
        .query_async(conn)
        .await
}

/// The run's heartbeat, every [`protocol::BEAT_EVERY_MS`] until aborted:
/// a beat signed with the coordinator's time (agents stop their load when
/// it is older than [`protocol::DEAD_MAN_US`]), and the agents' leases
/// kept. A coordinator that does not answer is tried again at the next
/// beat.
pub(super) async fn beat(
    mut conn: link::Conn,
    token: Token,
    run: String,
    agents: Vec<(String, String)>,
) {
    let mut every = tokio::time::interval(Duration::from_millis(protocol::BEAT_EVERY_MS));
    let mut n = 0u64;
    loop {
        every.tick().await;
        // A connection killed or refused is made again and the beat
        // tried again at once, a few times: agents stop their load when
        // the beat is two seconds old, and a beat lost to a dropped
        // connection is not the controller gone.
        for _ in 0..BEAT_TRIES {
            n += 1;
            match beat_once(&mut conn, &token, &run, n).await {
                Ok(()) => break,
                Err(e) => {
                    tracing::debug!("coordinator: beating: {e}; trying again");
                    tokio::time::sleep(BEAT_RETRY).await;
                }
            }
        }
        for (name, lease) in &agents {
            let _ = keep_lease(&mut conn, name, lease, protocol::LEASE_TTL_MS).await;
        }
    }
}
