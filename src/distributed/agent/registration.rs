//! Who the agent is at the coordinator: its name, claimed only for this
//! process, and its registration signed afresh with every heartbeat.

use crate::distributed::link::{self, DistributedError};
use crate::distributed::protocol::{self, Sealed};
use crate::distributed::seal::Header;
use crate::distributed::voice::Me;

/// Claims a name only for the process that holds it: `KEYS[1]` the claim,
/// `ARGV[1]` this process's nonce, `ARGV[2]` its lifetime (ms).
const CLAIM: &str = r"
local held = redis.call('GET', KEYS[1])
if held and held ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
";

/// Takes (or keeps) the agent's name: false when another process holds it.
pub(super) async fn claim(
    conn: &mut link::Conn,
    url: &str,
    me: &Me,
) -> Result<bool, DistributedError> {
    let held: i64 = redis::Script::new(CLAIM)
        .key(protocol::claim(&me.reg.name))
        .arg(&me.reg.nonce)
        .arg(protocol::CLAIM_TTL_MS)
        .invoke_async(conn)
        .await
        .map_err(|e| link::failed(url, "claiming its name", e))?;
    Ok(held == 1)
}

/// Registers (again), signed afresh: the heartbeat is the coordinator's
/// clock, in ms. Keeps its name's claim and its keys alive.
pub(super) async fn beat(
    conn: &mut link::Conn,
    url: &str,
    me: &mut Me,
) -> Result<(), DistributedError> {
    let now = link::time(conn)
        .await
        .map_err(|e| link::failed(url, "reading its clock", e))?;
    if !claim(conn, url, me).await? {
        return Err(DistributedError::Agents(format!(
            "another agent took the name {:?} at {}",
            me.reg.name,
            link::redacted(url)
        )));
    }
    me.reg.beat_us = now;
    me.beats += 1;
    let details = serde_json::to_string(&me.reg).unwrap_or_default();
    let sealed = Sealed::new(
        &me.token,
        &Header {
            run: "",
            arm: "",
            from: &me.reg.name,
            to: "",
            place: &protocol::agent(&me.reg.name),
            seq: me.beats,
            at_us: now,
            kind: "registration",
            prev: "",
        },
        details,
    );
    let name = &me.reg.name;
    let _: () = redis::pipe()
        .hset(
            protocol::agent(name),
            "registration",
            serde_json::to_string(&sealed).unwrap_or_default(),
        )
        .expire(protocol::agent(name), protocol::AGENT_TTL_S)
        .zadd(protocol::agents(), name, now / 1_000)
        .expire(protocol::agents(), protocol::AGENT_TTL_S)
        .expire(protocol::inbox(name), protocol::AGENT_TTL_S)
        .query_async(conn)
        .await
        .map_err(|e| link::failed(url, "registering", e))?;
    Ok(())
}

/// This machine's name, as the kernel has it (for the agents' list).
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}
