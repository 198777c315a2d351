//! What the Redis nodes did for an arm, in words and as a table: each
//! node's share of the commands (a cluster's masters should share the keys
//! evenly), and commands and server CPU per decision — the cost of the
//! limiter's design, read from Redis itself.

use crate::store::summary::{ArmSummary, RedisUse};

/// `1,234 B` / `12.3 KiB` / `4.5 MiB`.
pub(crate) fn bytes(n: u64) -> String {
    match n {
        n if n < 1024 => format!("{n} B"),
        n if n < 1024 * 1024 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0)),
    }
}

/// One sentence; none when the arm used no Redis (or none was read).
/// The decisions a replica made without Redis (its `on_redis_error`), when
/// there were any: a fail-closed reject is a false reject of the limiter's
/// own making, and this says where they came from.
pub(crate) fn fallback_sentence(a: &ArmSummary) -> Option<String> {
    let r = a.redis_errors.as_ref().filter(|r| r.total > 0)?;
    Some(format!(
        "{} decisions without Redis in time ({} admitted: fail_open, {} rejected: fail_closed)",
        r.total, r.failed_open, r.failed_closed
    ))
}

pub(crate) fn sentence(a: &ArmSummary) -> Option<String> {
    let r: &RedisUse = a.redis.as_ref()?;
    let shares = if r.nodes.len() > 1 {
        format!(
            " — commands by node: {}",
            r.nodes
                .iter()
                .map(|n| format!("{} {:.0}%", n.address, 100.0 * n.share))
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else {
        String::new()
    };
    let keys: u64 = r.nodes.iter().map(|n| n.keys).sum();
    let memory: u64 = r.nodes.iter().map(|n| n.used_memory_bytes).sum();
    let weighed = if r.bytes_per_key > 0 {
        format!(" of {} each", bytes(r.bytes_per_key))
    } else {
        String::new()
    };
    Some(format!(
        "{} node{}, {:.2} commands and {:.1} µs of Redis CPU per decision, {keys} keys{weighed}, {} used{shares}",
        r.nodes.len(),
        if r.nodes.len() == 1 { "" } else { "s" },
        r.commands_per_decision,
        r.cpu_us_per_decision,
        bytes(memory)
    ))
}

/// `redis_batched`: the bound leases allow, and whether it held.
pub(crate) fn lease_sentence(a: &ArmSummary) -> Option<String> {
    let b = a.lease_bound.as_ref()?;
    Some(format!(
        "leases let any window hold up to {} admits (the limit plus one lease's rest per replica, at most the limit); {} proven beyond that",
        b.limit_per_window, b.definite_violations
    ))
}
