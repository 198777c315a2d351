//! Redis shapes and what only Redis arms take: the topology and its
//! masters, failover faults, waiting for replicas, deadline-aware scripts,
//! leases, and bounds on what Redis reports.

use super::{error_of, GOOD};
use crate::gate::{Bound, Figure};
use crate::scenario::parse;
use crate::scenario::Mode;
use std::time::Duration;

#[test]
fn redis_topology_is_single_or_a_cluster_of_masters() {
    use crate::stack::Managed;
    use reference_api::config::Topology;
    let text = GOOD.replace(
        "name = \"local\"\nmode = \"local\"",
        "name = \"local\"\nmode = \"redis_lua\"",
    );
    let s = parse("s.toml", &text).unwrap();
    assert_eq!(s.redis.topology, Topology::Single, "the default");
    assert_eq!(s.managed_redis(&s.arms[1]), Some(Managed::Single));
    assert_eq!(s.managed_redis(&s.arms[0]), None, "a local arm needs none");

    let with = |redis: &str| format!("{text}\n[redis]\n{redis}\n");
    let s = parse("s.toml", &with("topology = \"cluster\"")).unwrap();
    assert_eq!(s.redis.topology, Topology::Cluster);
    assert_eq!(
        s.managed_redis(&s.arms[1]),
        Some(Managed::Cluster {
            masters: 3,
            replicas_per_master: 0
        }),
        "three masters unless told, without replicas"
    );
    let s = parse("s.toml", &with("topology = \"cluster\"\nmasters = 1")).unwrap();
    assert_eq!(
        s.managed_redis(&s.arms[1]),
        Some(Managed::Cluster {
            masters: 1,
            replicas_per_master: 0
        })
    );
    let s = parse(
        "s.toml",
        &with("topology = \"cluster\"\nreplicas_per_master = 2"),
    )
    .unwrap();
    assert_eq!(
        s.managed_redis(&s.arms[1]),
        Some(Managed::Cluster {
            masters: 3,
            replicas_per_master: 2
        })
    );
    let e = error_of(&with("topology = \"cluster\"\nreplicas_per_master = 3"));
    assert!(
        e.contains("replicas_per_master must be between 0 and 2, got 3"),
        "{e}"
    );
    for other in [
        "",
        "topology = \"replicated\"\n",
        "topology = \"cluster\"\nurl = \"redis://127.0.0.1:7000\"\n",
    ] {
        let e = error_of(&with(&format!("{other}replicas_per_master = 1")));
        assert!(
            e.contains(
                "replicas_per_master: the cluster rlbench starts gives each master replicas"
            ),
            "{other:?}: {e}"
        );
    }
    let s = parse(
        "s.toml",
        &with("topology = \"cluster\"\nurl = \"redis://127.0.0.1:7000\""),
    )
    .unwrap();
    assert_eq!(
        s.managed_redis(&s.arms[1]),
        None,
        "the cluster at url is used"
    );

    let e = error_of(&with("topology = \"ring\""));
    assert!(
        e.contains("topology \"ring\": expected \"single\", \"cluster\" or \"replicated\""),
        "{e}"
    );
    assert!(e.contains("s.toml:"), "{e}");
    let e = error_of(&with("masters = 3"));
    assert!(e.contains("only a cluster has masters"), "{e}");
    let e = error_of(&with("topology = \"cluster\"\nmasters = 17"));
    assert!(
        e.contains("masters must be between 1 and 16, got 17"),
        "{e}"
    );
    let e = error_of(&with("topology = \"cluster\"\nmasters = 0"));
    assert!(e.contains("between 1 and 16, got 0"), "{e}");
    let e = error_of(&with(
        "topology = \"cluster\"\nurl = \"redis://127.0.0.1:7000\"\nmasters = 3",
    ));
    assert!(e.contains("the cluster at [redis] url has its own"), "{e}");
    let e = error_of(&format!(
        "{}\n[[faults]]\nat = \"1s\"\nfor = \"1s\"\naction = \"redis_down\"\n",
        with("topology = \"cluster\"")
    ));
    assert!(
        e.contains("loses its first master with redis_failover"),
        "{e}"
    );
    let e = error_of(&format!(
        "{}\n[[faults]]\nat = \"1s\"\nfor = \"1s\"\naction = \"redis_latency\"\ndelay = \"5ms\"\n",
        with("topology = \"cluster\"")
    ));
    assert!(e.contains("it is for topology = \"single\""), "{e}");
}

#[test]
fn redis_figures_are_bounded_only_on_redis_arms() {
    let text = GOOD.replace(
        "min_over_admission_ratio = 2.5",
        "min_over_admission_ratio = 2.5\nmax_redis_bytes_per_key = 500",
    );
    let e = error_of(&text);
    assert!(
        e.contains("redis_* expectations need mode redis_naive or redis_lua (this arm is local)"),
        "{e}"
    );
    assert!(e.contains("s.toml:"), "{e}");
    let s = parse(
        "s.toml",
        &text.replace(
            "name = \"local\"\nmode = \"local\"",
            "name = \"local\"\nmode = \"redis_lua\"",
        ),
    )
    .unwrap();
    assert_eq!(s.arms[1].expect.len(), 2);
    assert_eq!(s.arms[1].expect[1].figure, Figure::RedisBytesPerKey);
    assert_eq!(s.arms[1].expect[1].bound, Bound::AtMost);
    let e = error_of(
        &text
            .replace(
                "mode = \"local\"\n[arms.expect]\nmin",
                "mode = \"redis_lua\"\n[arms.expect]\nmin",
            )
            .replace(
                "max_redis_bytes_per_key = 500",
                "max_redis_bytes_per_key = -1",
            ),
    );
    assert!(
        e.contains("max_redis_bytes_per_key must be between 0 and"),
        "{e}"
    );
}

#[test]
fn a_failover_needs_a_primary_and_replica_and_waits_need_replicas() {
    use crate::faults::FaultAction;
    use crate::stack::Managed;
    let text = GOOD.replace(
        "name = \"local\"\nmode = \"local\"",
        "name = \"local\"\nmode = \"redis_lua\"",
    );
    let replicated = format!("{text}\n[redis]\ntopology = \"replicated\"\n");
    let fault = |body: &str| {
        format!("{replicated}\n[[faults]]\nat = \"1s\"\nfor = \"2s\"\naction = \"redis_failover\"\n{body}")
    };
    let s = parse("s.toml", &fault("replication_delay = \"1s\"\n")).unwrap();
    assert_eq!(s.managed_redis(&s.arms[1]), Some(Managed::Replicated));
    assert_eq!(
        s.faults[0].action,
        FaultAction::RedisFailover {
            replication_delay: Duration::from_secs(1)
        }
    );
    let s = parse("s.toml", &fault("")).unwrap();
    assert_eq!(
        s.faults[0].action,
        FaultAction::RedisFailover {
            replication_delay: Duration::ZERO
        },
        "no delay: the failover at once"
    );
    // The boundary: the whole window held.
    assert!(parse("s.toml", &fault("replication_delay = \"2s\"\n")).is_ok());
    let e = error_of(&fault("replication_delay = \"3s\"\n"));
    assert!(
        e.contains("replication_delay of at most the fault's \"for\""),
        "{e}"
    );
    let e = error_of(&fault("replication_delay = \"soon\"\n"));
    assert!(e.contains("\"soon\""), "{e}");
    let e = error_of(&fault("variant = \"pause\"\n"));
    assert!(
        e.contains("\"variant\" does not apply to redis_failover"),
        "{e}"
    );
    let e = error_of(&fault("").replace("topology = \"replicated\"", "topology = \"single\""));
    assert!(
        e.contains("redis_failover promotes a replica rlbench starts"),
        "{e}"
    );
    // A cluster: its first master's replica, promoted at once.
    let cluster = |redis: &str, body: &str| {
        fault(body).replace(
            "topology = \"replicated\"",
            &format!("topology = \"cluster\"\n{redis}"),
        )
    };
    let s = parse("s.toml", &cluster("replicas_per_master = 1", "")).unwrap();
    assert_eq!(
        s.faults[0].action,
        FaultAction::RedisFailover {
            replication_delay: Duration::ZERO
        }
    );
    let e = error_of(&cluster("", ""));
    assert!(
        e.contains("topology = \"cluster\" with replicas_per_master >= 1"),
        "{e}"
    );
    let e = error_of(&cluster(
        "replicas_per_master = 1",
        "replication_delay = \"1s\"\n",
    ));
    assert!(
        e.contains("replication_delay needs topology = \"replicated\""),
        "{e}"
    );
    assert!(
        parse(
            "s.toml",
            &cluster("replicas_per_master = 1", "replication_delay = \"0s\"\n")
        )
        .is_ok(),
        "no delay is no delay"
    );
    let e = error_of(&fault("").replace(
        "topology = \"replicated\"",
        "topology = \"replicated\"\nurl = \"redis://127.0.0.1:6379\"",
    ));
    assert!(e.contains("without url"), "{e}");
    let e = error_of(&format!(
        "{replicated}\n[[faults]]\nat = \"1s\"\nfor = \"1s\"\naction = \"redis_down\"\nreplication_delay = \"1s\"\n"
    ));
    assert!(
        e.contains("\"replication_delay\" does not apply to redis_down"),
        "{e}"
    );
    let e = error_of(&format!(
        "{replicated}\n[[faults]]\nat = \"1s\"\nfor = \"1s\"\naction = \"redis_down\"\n"
    ));
    assert!(e.contains("fail over with redis_failover"), "{e}");

    // wait_replicas: Redis arms on a primary with a replica, 0 or 1.
    let waiting = |scenario: &str, n: &str| {
        scenario.replace(
            "mode = \"redis_lua\"",
            &format!("mode = \"redis_lua\"\nwait_replicas = {n}"),
        )
    };
    let s = parse("s.toml", &waiting(&replicated, "1")).unwrap();
    assert_eq!(s.arms[1].wait_replicas, 1);
    assert_eq!(s.arms[0].wait_replicas, 0);
    let e = error_of(&waiting(&replicated, "2"));
    assert!(
        e.contains("wait_replicas must be between 0 and 1, got 2"),
        "{e}"
    );
    let e = error_of(&waiting(&text, "1"));
    assert!(e.contains("topology = \"replicated\""), "{e}");
    let e = error_of(&replicated.replace(
        "name = \"single\"\nmode = \"local\"",
        "name = \"single\"\nmode = \"local\"\nwait_replicas = 1",
    ));
    assert!(
        e.contains("wait_replicas needs mode redis_naive or redis_lua"),
        "{e}"
    );
}

#[test]
fn deadline_aware_is_for_lua_arms() {
    let text = GOOD.replace(
        "name = \"local\"\nmode = \"local\"",
        "name = \"local\"\nmode = \"redis_lua\"\ndeadline_aware = true",
    );
    let s = parse("s.toml", &text).unwrap();
    assert!(s.arms[1].deadline_aware);
    assert!(!s.arms[0].deadline_aware);
    let e = error_of(&text.replace("mode = \"redis_lua\"", "mode = \"redis_naive\""));
    assert!(e.contains("deadline_aware needs mode redis_lua"), "{e}");
    let e = error_of(&text.replace("deadline_aware = true", "deadline_aware = \"yes\""));
    assert!(e.contains("s.toml:"), "{e}");
}

#[test]
fn batched_arms_lease_fixed_windows_within_one_window() {
    let fixed = GOOD
        .replace(
            "algorithm = \"sliding_log\"",
            "algorithm = \"fixed_window\"",
        )
        .replace(
            "name = \"local\"\nmode = \"local\"",
            "name = \"local\"\nmode = \"redis_batched\"\nlease = 5\nlease_ttl = \"1s\"",
        );
    let s = parse("s.toml", &fixed).unwrap();
    let arm = &s.arms[1];
    assert_eq!(arm.mode, Mode::RedisBatched);
    assert_eq!((arm.lease, arm.lease_ttl), (5, Duration::from_secs(1)));
    // 3 replicas carry at most 3·4 = 12, and never more than the window
    // before held: the limit, 10.
    assert_eq!(arm.lease_bound(), Some(10 + 10));
    let s3 = parse("s.toml", &fixed.replace("lease = 5", "lease = 3")).unwrap();
    assert_eq!(s3.arms[1].lease_bound(), Some(10 + 3 * 2));
    let s4 = parse("s.toml", &fixed.replace("lease = 5", "lease = 4")).unwrap();
    assert_eq!(
        s4.arms[1].lease_bound(),
        Some(10 + 9),
        "the boundary: 3·3 < 10"
    );
    assert_eq!(s.arms[0].lease_bound(), None);
    // The boundary: a lease spent for the whole 2 s window is fine.
    assert!(parse(
        "s.toml",
        &fixed.replace("lease_ttl = \"1s\"", "lease_ttl = \"2s\"")
    )
    .is_ok());
    let e = error_of(&fixed.replace("lease_ttl = \"1s\"", "lease_ttl = \"3s\""));
    assert!(
        e.contains("lease_ttl of at most the policy's window"),
        "{e}"
    );
    let e = error_of(&fixed.replace("lease = 5", "lease = 0"));
    assert!(
        e.contains("lease must be between 1 and 10000, got 0"),
        "{e}"
    );
    let e = error_of(&fixed.replace(
        "algorithm = \"fixed_window\"",
        "algorithm = \"sliding_log\"",
    ));
    assert!(
        e.contains("redis_batched leases fixed_window admits, not sliding_log"),
        "{e}"
    );
    let e = error_of(&fixed.replace("mode = \"redis_batched\"", "mode = \"redis_lua\""));
    assert!(e.contains("lease needs mode redis_batched"), "{e}");
    let e = error_of(&fixed.replace("lease = 5", "lease = 5\nclock = \"redis\""));
    assert!(e.contains("spends leases on the replica's clock"), "{e}");
    let e = error_of(&GOOD.replace(
        "min_over_admission_ratio = 2.5",
        "min_over_admission_ratio = 2.5\nmax_lease_bound_violations = 0",
    ));
    assert!(
        e.contains("max_lease_bound_violations needs mode redis_batched"),
        "{e}"
    );
}
