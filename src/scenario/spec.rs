//! What a scenario says, as the engine's inputs take it: the arms, the
//! load, Redis, faults, checks and an external target; and the error that
//! locates what is wrong in the file.

mod arm;
mod checks;
mod distributed;
mod load;
mod redis;
mod target;

pub(crate) use arm::{Arm, KeyFrom, Mode, PolicyTiming};
pub(crate) use checks::{Checks, MAX_CLOCK_RATE_PPM};
pub(crate) use distributed::{
    Distributed, DEFAULT_AGENTS_WAIT, DEFAULT_MAX_CLOCK_UNCERTAINTY, MAX_AGENTS,
};
pub(crate) use load::{
    JwtAlg, JwtSecret, JwtSpec, KeySpec, LoadSpec, Spoof, FORWARDED_FROM, MAX_FORGED,
};
pub(crate) use redis::RedisSpec;
pub(crate) use target::ExternalTarget;

use crate::faults::Fault;
use reference_api::config::Topology;
use reference_api::Policy;
use std::fmt;
use std::time::Duration;

#[derive(Clone, Debug)]
pub(crate) struct Scenario {
    pub name: String,
    pub duration: Duration,
    pub seed: u64,
    pub policy: Policy,
    pub load: LoadSpec,
    pub redis: RedisSpec,
    pub arms: Vec<Arm>,
    /// Applied in order to every arm that runs them (from the load's start).
    pub faults: Vec<Fault>,
    /// `[target] kind = "external"`: endpoints rlbench does not run;
    /// `None`: the reference API's replicas.
    pub external: Option<ExternalTarget>,
    pub checks: Checks,
    /// `[distributed]`: load agents send the schedule (`None`: this machine).
    pub distributed: Option<Distributed>,
    /// `[target] metrics`: the limiter's own counters, read around each
    /// arm's load and held against the trace.
    pub metrics: Option<MetricsSpec>,
}

pub(crate) use crate::metrics::{MetricsSource, MetricsSpec};

impl Scenario {
    /// The keys `arm` sends: its own, or `[load]`'s.
    pub(crate) fn keys_of(&self, arm: &Arm) -> u32 {
        arm.keys.unwrap_or(self.load.keys)
    }

    /// Whether rlbench starts its own Redis for this arm.
    pub(crate) fn needs_managed_redis(&self, arm: &Arm) -> bool {
        arm.mode.uses_redis() && self.redis.url.is_none()
    }

    /// The Redis rlbench starts for this arm, if any.
    pub(crate) fn managed_redis(&self, arm: &Arm) -> Option<crate::stack::Managed> {
        self.needs_managed_redis(arm)
            .then_some(match self.redis.topology {
                Topology::Single => crate::stack::Managed::Single,
                Topology::Cluster => crate::stack::Managed::Cluster {
                    masters: self.redis.masters,
                    replicas_per_master: self.redis.replicas_per_master,
                },
                Topology::Replicated => crate::stack::Managed::Replicated,
            })
    }
}

/// A scenario that cannot be read or is not valid: `file:line:col: what`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScenarioError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.column, self.message
            )
        }
    }
}

impl std::error::Error for ScenarioError {}

impl crate::error::Kind for ScenarioError {
    /// A scenario is the user's input, whatever is wrong with it.
    fn exit(&self) -> crate::error::Exit {
        crate::error::Exit::BadInput
    }
}
