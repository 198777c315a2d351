//! `[[faults]]`: what to break, when and for how long — checked against the
//! scenario's duration, its arms' replicas, and where Redis runs (a Redis
//! fault needs the Redis rlbench starts itself).

use super::source::{Result, Source};
use crate::faults::{Fault, FaultAction};
use crate::scenario::raw::RawFault;
use crate::scenario::spec::{Arm, RedisSpec, ScenarioError};
use crate::scenario::units;
use reference_api::config::Topology;
use std::ops::Range;
use std::time::Duration;
use toml::Spanned;

pub(super) fn faults(
    src: &Source,
    raw: &[Spanned<RawFault>],
    duration: Duration,
    arms: &[Arm],
    redis: &RedisSpec,
) -> Result<Vec<Fault>> {
    let mut out: Vec<Fault> = Vec::new();
    for spanned in raw {
        let r = spanned.get_ref();
        let at = src.duration(&r.at)?;
        let lasts = src.duration(&r.lasts)?;
        if at + lasts > duration {
            return Err(src.at(
                &r.lasts,
                format!(
                    "the fault ends at {:?}, after the run ({:?})",
                    at + lasts,
                    duration
                ),
            ));
        }
        let action = action(src, r, arms, redis)?;
        if let Some(previous) = out.last() {
            if at < previous.at + previous.lasts {
                return Err(src.at(
                    &r.at,
                    "faults must come in order and not overlap: this one starts before the previous one ends",
                ));
            }
        }
        out.push(Fault { at, lasts, action });
    }
    Ok(out)
}

/// Keys that belong to one action only are refused on the others, then
/// each action is read by its own function: a table of the actions.
fn action(src: &Source, r: &RawFault, arms: &[Arm], redis: &RedisSpec) -> Result<FaultAction> {
    let reading = FaultReading {
        src,
        r,
        arms,
        redis,
        name: r.action.get_ref().as_str(),
    };
    reading.only_its_own_keys()?;
    match reading.name {
        "clock_step" => reading.clock_step(),
        "redis_latency" => reading.redis_latency(),
        "redis_down" => reading.redis_down(),
        "redis_failover" => reading.redis_failover(),
        "replica_restart" => reading.replica_restart(),
        other => Err(src.at(
            &r.action,
            format!(
                "unknown action {other:?}, expected redis_down, redis_latency, redis_failover, replica_restart or clock_step"
            ),
        )),
    }
}

/// One `[[faults]]` entry, read against the scenario's text, arms and Redis.
struct FaultReading<'a> {
    src: &'a Source<'a>,
    r: &'a RawFault,
    arms: &'a [Arm],
    redis: &'a RedisSpec,
    /// The entry's `action`.
    name: &'a str,
}

impl FaultReading<'_> {
    /// `key` given to an action that does not take it.
    fn not_for(&self, key: &str, span: Range<usize>) -> ScenarioError {
        self.src.error(
            Some(span),
            format!("{key:?} does not apply to {}", self.name),
        )
    }

    /// `delay` and `jitter` (redis_latency's), `step` (clock_step's) and
    /// `replication_delay` (redis_failover's) on any other action.
    fn only_its_own_keys(&self) -> Result<()> {
        let (r, name) = (self.r, self.name);
        if name != "redis_latency" {
            for (key, value) in [("delay", &r.delay), ("jitter", &r.jitter)] {
                if let Some(v) = value {
                    return Err(self.not_for(key, v.span()));
                }
            }
        }
        if name != "clock_step" {
            if let Some(v) = &r.step {
                return Err(self.not_for("step", v.span()));
            }
        }
        if name != "redis_failover" {
            if let Some(v) = &r.replication_delay {
                return Err(self.not_for("replication_delay", v.span()));
            }
        }
        Ok(())
    }

    /// `clock_step`: one replica's clock jumps by `step`.
    fn clock_step(&self) -> Result<FaultAction> {
        let (src, r) = (self.src, self.r);
        if let Some(variant) = &r.variant {
            return Err(self.not_for("variant", variant.span()));
        }
        let replica = replica(src, r, self.arms)?;
        let Some(step) = &r.step else {
            return Err(src.at(
                &r.action,
                "clock_step needs \"step\", e.g. step = \"+2s\" or \"-500ms\"",
            ));
        };
        let step_us =
            units::signed_micros(step.get_ref()).map_err(|e| src.at(step, e.to_string()))?;
        if step_us.unsigned_abs() > 3_600_000_000 {
            return Err(src.at(step, "a step of at most one hour either way"));
        }
        Ok(FaultAction::ClockStep { replica, step_us })
    }

    /// `redis_latency`: a proxy delays the one Redis server rlbench starts.
    fn redis_latency(&self) -> Result<FaultAction> {
        let (src, r, redis) = (self.src, self.r, self.redis);
        for (key, value) in [
            ("variant", &r.variant.as_ref().map(|v| v.span())),
            ("replica", &r.replica.as_ref().map(|v| v.span())),
        ] {
            if let Some(span) = value {
                return Err(self.not_for(key, span.clone()));
            }
        }
        if redis.url.is_some() {
            return Err(src.at(
                    &r.action,
                    "redis_latency needs the Redis rlbench starts itself (it puts a proxy in front): remove [redis] url",
                ));
        }
        if redis.topology != Topology::Single {
            return Err(src.at(
                    &r.action,
                    "redis_latency puts a proxy in front of one server: it is for topology = \"single\"",
                ));
        }
        let delay = match &r.delay {
            Some(d) => zero_or_duration(src, d)?,
            None => {
                return Err(src.at(
                    &r.action,
                    "redis_latency needs \"delay\", e.g. delay = \"20ms\"",
                ))
            }
        };
        let jitter = match &r.jitter {
            Some(j) => zero_or_duration(src, j)?,
            None => Duration::ZERO,
        };
        if delay + jitter > Duration::from_secs(60) {
            return Err(src.at(
                r.jitter
                    .as_ref()
                    .unwrap_or(r.delay.as_ref().unwrap_or(&r.action)),
                "delay plus jitter of at most 60s",
            ));
        }
        Ok(FaultAction::RedisLatency { delay, jitter })
    }

    /// `redis_down`: the one Redis server rlbench starts, paused or restarted.
    fn redis_down(&self) -> Result<FaultAction> {
        let (src, r, redis) = (self.src, self.r, self.redis);
        if let Some(replica) = &r.replica {
            return Err(self.not_for("replica", replica.span()));
        }
        if redis.url.is_some() {
            return Err(src.at(
                &r.action,
                "redis_down stops the Redis rlbench starts itself: remove [redis] url",
            ));
        }
        if redis.topology != Topology::Single {
            return Err(src.at(
                    &r.action,
                    "redis_down stops the one server of topology = \"single\" (a primary and replica fail over with redis_failover; a cluster with replicas_per_master >= 1 loses its first master with redis_failover)",
                ));
        }
        let restart = match r.variant.as_ref().map(|v| v.get_ref().as_str()) {
            None | Some("pause") => false,
            Some("restart") => true,
            Some(other) => {
                let v = r.variant.as_ref().map(|v| v.span());
                return Err(src.error(
                        v,
                        format!("unknown variant {other:?}, expected pause (SIGSTOP) or restart (kill, start again on the same port)"),
                    ));
            }
        };
        Ok(FaultAction::RedisDown { restart })
    }

    /// `redis_failover`: a replica rlbench starts is promoted.
    fn redis_failover(&self) -> Result<FaultAction> {
        let (src, r, redis) = (self.src, self.r, self.redis);
        for (key, value) in [
            ("variant", &r.variant.as_ref().map(|v| v.span())),
            ("replica", &r.replica.as_ref().map(|v| v.span())),
        ] {
            if let Some(span) = value {
                return Err(self.not_for(key, span.clone()));
            }
        }
        let cluster = redis.topology == Topology::Cluster;
        let promotable = match redis.topology {
            Topology::Replicated => true,
            Topology::Cluster => redis.replicas_per_master > 0,
            Topology::Single => false,
        };
        if !promotable || redis.url.is_some() {
            return Err(src.at(
                    &r.action,
                    "redis_failover promotes a replica rlbench starts: [redis] topology = \"replicated\", or topology = \"cluster\" with replicas_per_master >= 1, without url",
                ));
        }
        let delay = match &r.replication_delay {
            Some(d) => zero_or_duration(src, d)?,
            None => Duration::ZERO,
        };
        if cluster && !delay.is_zero() {
            return Err(src.at(
                    r.replication_delay.as_ref().unwrap_or(&r.lasts),
                    "replication_delay needs topology = \"replicated\": a cluster replica follows its master at the address the cluster announces, which rlbench does not put a proxy on",
                ));
        }
        if delay > src.duration(&r.lasts)? {
            return Err(src.at(
                r.replication_delay.as_ref().unwrap_or(&r.lasts),
                "replication_delay of at most the fault's \"for\": the failover comes within it",
            ));
        }
        Ok(FaultAction::RedisFailover {
            replication_delay: delay,
        })
    }

    /// `replica_restart`: one replica of every arm restarts.
    fn replica_restart(&self) -> Result<FaultAction> {
        let (src, r) = (self.src, self.r);
        if let Some(variant) = &r.variant {
            return Err(self.not_for("variant", variant.span()));
        }
        Ok(FaultAction::ReplicaRestart {
            replica: replica(src, r, self.arms)?,
        })
    }
}

/// A duration that may be "0s" (no delay).
fn zero_or_duration(src: &Source, value: &Spanned<String>) -> Result<Duration> {
    if value
        .get_ref()
        .trim()
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        == "0"
    {
        return Ok(Duration::ZERO);
    }
    src.duration(value)
}

/// `replica` (default 0), which must exist in every arm.
fn replica(src: &Source, r: &RawFault, arms: &[Arm]) -> Result<usize> {
    let replica = match &r.replica {
        Some(v) => src.count(v, "replica", 0, 63)? as usize,
        None => 0,
    };
    if let Some(arm) = arms.iter().find(|a| a.replicas <= replica) {
        let at = r.replica.as_ref().map_or(r.action.span(), |v| v.span());
        return Err(src.error(
            Some(at),
            format!(
                "replica {replica} does not exist in arm {:?}, which has {} (numbered from 0)",
                arm.name, arm.replicas
            ),
        ));
    }
    Ok(replica)
}
