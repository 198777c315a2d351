//! `[redis]`: a server given by URL or the one (single, replicated or a
//! cluster) rlbench starts, and the round trips' timeout.

use super::source::{Result, Source};
use crate::scenario::raw::RawRedis;
use crate::scenario::spec::RedisSpec;
use reference_api::config::Topology;
use std::time::Duration;

/// The masters of a cluster rlbench starts when the scenario names none:
/// the fewest `redis-cli --cluster create` accepts.
const DEFAULT_MASTERS: usize = 3;

pub(super) fn redis(src: &Source, raw: RawRedis) -> Result<RedisSpec> {
    let url = match raw.url {
        Some(u) => {
            let v = u.get_ref();
            if !(v.starts_with("redis://") || v.starts_with("rediss://")) {
                // Named with its password hidden: it may carry one.
                let shown = reference_api::redis_url::redact(v);
                return Err(src.at(
                    &u,
                    format!("{shown:?}: expected a url like \"redis://127.0.0.1:6379\""),
                ));
            }
            Some(v.clone())
        }
        None => None,
    };
    let timeout = match &raw.timeout {
        Some(t) => src.duration(t)?,
        None => Duration::from_millis(50),
    };
    let topology = match &raw.topology {
        None => Topology::Single,
        Some(t) => match t.get_ref().as_str() {
            "single" => Topology::Single,
            "cluster" => Topology::Cluster,
            "replicated" => Topology::Replicated,
            other => {
                return Err(src.at(
                    t,
                    format!(
                        "topology {other:?}: expected \"single\", \"cluster\" or \"replicated\""
                    ),
                ))
            }
        },
    };
    let masters = match &raw.masters {
        None => DEFAULT_MASTERS,
        Some(m) if topology != Topology::Cluster => {
            return Err(src.at(m, "masters: only a cluster has masters (topology = \"cluster\")"))
        }
        Some(m) if url.is_some() => {
            return Err(src.at(
                m,
                "masters: the cluster at [redis] url has its own; masters sizes the cluster rlbench starts",
            ))
        }
        Some(m) => src.count(m, "masters", 1, 16)? as usize,
    };
    let replicas_per_master = match &raw.replicas_per_master {
        None => 0,
        Some(r) if topology != Topology::Cluster || url.is_some() => {
            return Err(src.at(
                r,
                "replicas_per_master: the cluster rlbench starts gives each master replicas (topology = \"cluster\", without url); a primary and one replica is topology = \"replicated\"",
            ))
        }
        Some(r) => src.count(r, "replicas_per_master", 0, 2)? as usize,
    };
    Ok(RedisSpec {
        url,
        timeout,
        topology,
        masters,
        replicas_per_master,
    })
}
