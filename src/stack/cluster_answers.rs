//! What a cluster's nodes answer, read: `CLUSTER INFO` (formed?),
//! `CLUSTER NODES` (who is a live master), a replica's `INFO replication`
//! (linked?), and how the 16,384 slots are split between masters. Pure,
//! so every rule is tested on answers written out by hand.

pub(crate) const SLOTS: u16 = 16_384;

/// Slots split into `masters` contiguous ranges, as even as they go.
pub(crate) fn slot_ranges(masters: usize) -> Vec<(u16, u16)> {
    let n = masters.max(1) as u32;
    (0..n)
        .map(|i| {
            let from = (u32::from(SLOTS) * i / n) as u16;
            let to = (u32::from(SLOTS) * (i + 1) / n - 1) as u16;
            (from, to)
        })
        .collect()
}

/// Whether a replica's `INFO replication` shows its link up and synced.
pub(crate) fn linked(info: &str) -> bool {
    let lines: Vec<&str> = info.lines().map(str::trim).collect();
    lines.contains(&"master_link_status:up") && lines.contains(&"master_sync_in_progress:0")
}

/// One line of a `CLUSTER NODES` answer: `<id> <ip:port@bus[,host]>
/// <flags> …`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NodeLine<'a> {
    pub id: &'a str,
    /// `ip:port`, without the bus port or host name.
    pub address: &'a str,
    /// A master not flagged as failed.
    pub live_master: bool,
}

/// The nodes a `CLUSTER NODES` answer lists, in its order.
pub(crate) fn node_lines(nodes: &str) -> Vec<NodeLine<'_>> {
    nodes
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (id, address, flags) = (fields.next()?, fields.next()?, fields.next()?);
            let flags: Vec<&str> = flags.split(',').collect();
            Some(NodeLine {
                id,
                address: address.split('@').next().unwrap_or(address),
                live_master: flags.contains(&"master") && !flags.contains(&"fail"),
            })
        })
        .collect()
}

/// Whether a `CLUSTER NODES` answer lists the node `id` as a live master.
pub(crate) fn names_master(nodes: &str, id: &str) -> bool {
    node_lines(nodes)
        .iter()
        .any(|n| n.id == id && n.live_master)
}

/// Whether a node's CLUSTER INFO shows the whole cluster formed, with
/// `nodes` nodes known.
pub(crate) fn formed(info: &str, nodes: usize) -> bool {
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    field("cluster_state") == Some("ok")
        && field("cluster_slots_assigned") == Some("16384")
        && field("cluster_known_nodes").and_then(|n| n.parse::<usize>().ok()) == Some(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_ranges_cover_every_slot_once() {
        for masters in 1..=16 {
            let ranges = slot_ranges(masters);
            assert_eq!(ranges.len(), masters);
            assert_eq!(ranges[0].0, 0);
            assert_eq!(ranges[masters - 1].1, SLOTS - 1);
            for pair in ranges.windows(2) {
                assert_eq!(pair[0].1 + 1, pair[1].0, "{ranges:?}");
            }
            let sizes: Vec<u16> = ranges.iter().map(|r| r.1 - r.0 + 1).collect();
            let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(max - min <= 1, "{sizes:?}");
        }
        assert_eq!(
            slot_ranges(3),
            vec![(0, 5460), (5461, 10921), (10922, 16383)]
        );
    }

    #[test]
    fn formed_needs_state_slots_and_every_node() {
        let ok = "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_known_nodes:3\r\n";
        assert!(formed(ok, 3));
        assert!(!formed(ok, 4));
        assert!(!formed(&ok.replace("state:ok", "state:fail"), 3));
        assert!(!formed(&ok.replace("16384", "10922"), 3));
        assert!(!formed("", 3));
    }

    #[test]
    fn a_replica_is_linked_once_synced() {
        let up =
            "# Replication\r\nrole:slave\r\nmaster_link_status:up\r\nmaster_sync_in_progress:0\r\n";
        assert!(linked(up));
        assert!(!linked(&up.replace("status:up", "status:down")));
        assert!(!linked(&up.replace("progress:0", "progress:1")));
        assert!(!linked("role:master\r\n"));
    }

    #[test]
    fn node_lines_take_id_address_and_whether_a_live_master() {
        let text = "aaa 127.0.0.1:7001@17001,host.example myself,master - 0 0 4 connected 0-5460\n\
ccc 127.0.0.1:7003@17003 slave aaa 0 0 4 connected\n\
bad-line\n";
        assert_eq!(
            node_lines(text),
            vec![
                NodeLine {
                    id: "aaa",
                    address: "127.0.0.1:7001",
                    live_master: true
                },
                NodeLine {
                    id: "ccc",
                    address: "127.0.0.1:7003",
                    live_master: false
                },
            ]
        );
    }

    #[test]
    fn the_promoted_node_must_be_a_live_master() {
        let nodes = "aaa 127.0.0.1:7001@17001 myself,master - 0 0 4 connected 0-5460\n\
bbb 127.0.0.1:7002@17002 master,fail - 0 0 1 connected\n\
ccc 127.0.0.1:7003@17003 slave aaa 0 0 4 connected\n";
        assert!(names_master(nodes, "aaa"));
        assert!(!names_master(nodes, "bbb"), "a failed master");
        assert!(!names_master(nodes, "ccc"), "a replica");
        assert!(!names_master(nodes, "ddd"), "unknown");
        assert!(!names_master("", "aaa"));
    }
}
