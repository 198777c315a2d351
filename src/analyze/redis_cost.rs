//! What an arm's decisions cost Redis: each node's work (read from Redis'
//! own INFO before and after the load) over the decisions the replicas
//! made — commands, server CPU and bytes per key — the figures the report
//! shows and the gate can bound.

use crate::store::records::RedisNodeUse;
use crate::store::summary::{RedisNode, RedisUse};

fn ratio(v: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        ((v as f64 / of as f64) * 1_000.0).round() / 1_000.0
    }
}

/// Per node and per decision; none when no node was read.
pub(crate) fn cost(nodes: &[RedisNodeUse], decisions: u64) -> Option<RedisUse> {
    if nodes.is_empty() {
        return None;
    }
    let sum = |f: fn(&RedisNodeUse) -> u64| nodes.iter().map(f).sum::<u64>();
    let commands = sum(|n| n.commands);
    Some(RedisUse {
        nodes: nodes
            .iter()
            .map(|n| RedisNode {
                address: n.address.clone(),
                commands: n.commands,
                share: ratio(n.commands, commands),
                script_calls: n.script_calls,
                cpu_ms: (n.cpu_us as f64 / 10.0).round() / 100.0,
                keys: n.keys,
                used_memory_bytes: n.used_memory,
                bytes_per_key: ratio(n.sampled_bytes, n.sampled_keys).round() as u64,
            })
            .collect(),
        decisions,
        commands_per_decision: ratio(commands, decisions),
        cpu_us_per_decision: ratio(sum(|n| n.cpu_us), decisions),
        bytes_per_key: ratio(sum(|n| n.sampled_bytes), sum(|n| n.sampled_keys)).round() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(commands: u64, cpu_us: u64, sampled: (u64, u64)) -> RedisNodeUse {
        RedisNodeUse {
            address: format!("127.0.0.1:{commands}"),
            commands,
            script_calls: commands / 2,
            cpu_us,
            keys: 10,
            used_memory: 1 << 20,
            sampled_keys: sampled.0,
            sampled_bytes: sampled.1,
        }
    }

    #[test]
    fn figures_per_decision_and_per_key() {
        let c = cost(
            &[node(300, 2_000, (2, 200)), node(100, 1_000, (2, 1_000))],
            200,
        )
        .unwrap();
        assert_eq!(c.commands_per_decision, 2.0);
        assert_eq!(c.cpu_us_per_decision, 15.0);
        assert_eq!(c.bytes_per_key, 300, "1,200 bytes over 4 keys weighed");
        assert_eq!(c.nodes[0].share, 0.75);
        assert_eq!(c.nodes[1].share, 0.25);
        assert_eq!(c.nodes[0].bytes_per_key, 100);
        assert_eq!(c.nodes[0].cpu_ms, 2.0);
    }

    #[test]
    fn nothing_read_or_nothing_decided() {
        assert!(cost(&[], 100).is_none());
        let c = cost(&[node(0, 0, (0, 0))], 0).unwrap();
        assert_eq!(c.commands_per_decision, 0.0);
        assert_eq!(c.bytes_per_key, 0);
        assert_eq!(c.nodes[0].share, 0.0);
    }
}
