//! The run's hold on its agents at the coordinator: each agent's lease
//! (taken for all at once, kept while the run lasts, let go at its end)
//! and the run's signed heartbeat that keeps them.

use crate::distributed::choose::Chosen;
use crate::distributed::link;
use crate::distributed::protocol::{self, Beat, Sealed};
use crate::distributed::seal::{Header, Token};
use crate::error::Error;
use std::time::Duration;

/// Keeps a lease only for the run that holds it: `KEYS[1]` the lease,
/// `ARGV[1]` the run, `ARGV[2]` its lifetime (ms); with `ARGV[2]` = 0 the
/// lease is let go. A lease the coordinator lost (a restart) is taken
/// again; one another run holds is left alone.
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

/// Leases every one of `agents` to `run`, atomically each (`SET NX`);
/// when another run took one first, lets go of the others and says no.
pub(super) async fn lease_all(
    conn: &mut link::Conn,
    url: &str,
    run: &str,
    agents: &[Chosen],
) -> Result<bool, Error> {
    let mut taken: Vec<String> = Vec::new();
    for a in agents {
        let ok: Option<String> = redis::cmd("SET")
            .arg(protocol::lease(&a.name))
            .arg(run)
            .arg("NX")
            .arg("PX")
            .arg(protocol::LEASE_TTL_MS)
            .query_async(conn)
            .await
            .map_err(|e| Error::from(link::failed(url, "leasing agents", e)))?;
        if ok.is_none() {
            for name in &taken {
                let _ = keep_lease(conn, name, run, 0).await;
            }
            return Ok(false);
        }
        taken.push(a.name.clone());
    }
    Ok(true)
}

/// Keeps the lease of `agent` for `run` another `ttl_ms` (0: lets it go),
/// when it is still the run's.
pub(super) async fn keep_lease(
    conn: &mut link::Conn,
    agent: &str,
    run: &str,
    ttl_ms: u64,
) -> redis::RedisResult<i64> {
    redis::Script::new(LEASE_KEEP)
        .key(protocol::lease(agent))
        .arg(run)
        .arg(ttl_ms)
        .invoke_async(conn)
        .await
}

/// The run's heartbeat, every [`protocol::BEAT_EVERY_MS`] until aborted:
/// a beat signed with the coordinator's time (agents stop their load when
/// it is older than [`protocol::DEAD_MAN_US`]), and the agents' leases
/// kept. A coordinator that does not answer is tried again at the next
/// beat.
pub(super) async fn beat(mut conn: link::Conn, token: Token, run: String, agents: Vec<String>) {
    let mut every = tokio::time::interval(Duration::from_millis(protocol::BEAT_EVERY_MS));
    let mut n = 0u64;
    loop {
        every.tick().await;
        let Ok(now) = link::time(&mut conn).await else {
            continue;
        };
        n += 1;
        let body = serde_json::to_string(&Beat { at_us: now }).unwrap_or_default();
        let sealed = Sealed::new(
            &token,
            &Header {
                run: &run,
                from: protocol::CONTROLLER,
                to: "",
                seq: n,
                at_us: now,
                kind: "beat",
            },
            body,
        );
        let _: redis::RedisResult<()> = redis::cmd("SET")
            .arg(protocol::beat(&run))
            .arg(serde_json::to_string(&sealed).unwrap_or_default())
            .arg("PX")
            .arg(protocol::BEAT_TTL_MS)
            .query_async(&mut conn)
            .await;
        for a in &agents {
            let _ = keep_lease(&mut conn, a, &run, protocol::LEASE_TTL_MS).await;
        }
    }
}
