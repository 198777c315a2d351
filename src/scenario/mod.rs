//! Scenarios: what a run does. A TOML file is parsed into raw types
//! (`raw`), then validated into the engine types below (`validate`); every
//! error names the file, line and column and says what was expected.

mod raw;
pub mod units;
mod validate;

use reference_api::config::{ClockSource, OnError};
use reference_api::Policy;
use std::fmt;
use std::path::Path;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct Scenario {
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
}

impl Scenario {
    /// Whether rlbench starts its own Redis for this arm.
    pub fn needs_managed_redis(&self, arm: &Arm) -> bool {
        arm.mode.uses_redis() && self.redis.url.is_none()
    }
}

/// `[checks]`: what rlbench does after each arm's load to test the
/// limiter's headers.
#[derive(Clone, Debug, PartialEq)]
pub struct Checks {
    /// Keys whose Retry-After is probed (0: none).
    pub retry_after_probes: u32,
    /// A longer advertised wait is reported, not waited for.
    pub retry_after_max_wait: Duration,
    /// Witnesses kept per kind and arm in summary.json.
    pub witnesses: usize,
    /// How long after the client gave up the server may still decide
    /// (`None`: at any time).
    pub max_server_time: Option<Duration>,
}

/// What the limiter's timing may be beyond its policy's parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PolicyTiming {
    /// How late a window, segment or refill may run (µs).
    pub lateness_us: i64,
    /// A token bucket refilled in one chunk per period (ASP.NET Core's).
    pub chunked_refill: bool,
    /// The limiter reads one clock inside each decision's atomic step.
    pub one_clock: bool,
}

impl Default for Checks {
    fn default() -> Self {
        Checks {
            retry_after_probes: 2,
            retry_after_max_wait: Duration::from_secs(5),
            witnesses: crate::witnesses::DEFAULT_LIMIT,
            max_server_time: None,
        }
    }
}

/// Someone else's limiter: where requests go and what they look like.
#[derive(Clone, Debug)]
pub struct ExternalTarget {
    /// The scenario's URLs (arms may name their own).
    pub urls: Vec<hyper::Uri>,
    /// `[target] path`, put on every URL (an arm's too).
    pub path: Option<String>,
    pub template: crate::load::client::Template,
    /// `[target] one_clock`: the limiter reads one clock inside each
    /// decision's atomic step (one process, or its store's own clock).
    pub one_clock: bool,
}

/// `[[faults]]`: an action from `at` for `lasts`, then undone.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    pub at: Duration,
    pub lasts: Duration,
    pub action: FaultAction,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultAction {
    /// Stop the arm's Redis: `restart` kills it and starts a fresh one on
    /// the same port at the end (empty, script cache gone); otherwise it is
    /// paused (SIGSTOP) and resumed (SIGCONT).
    RedisDown { restart: bool },
    /// Kill one replica hard (SIGKILL) and start it again on its port at the end.
    ReplicaRestart { replica: usize },
    /// Delay everything between the replicas and Redis by `delay` plus up
    /// to `jitter` (through a proxy rlbench runs in front of its Redis).
    RedisLatency { delay: Duration, jitter: Duration },
    /// Step one replica's clock by `step_us` (µs, either way), and back.
    ClockStep { replica: usize, step_us: i64 },
}

impl FaultAction {
    pub fn name(self) -> &'static str {
        match self {
            FaultAction::RedisDown { .. } => "redis_down",
            FaultAction::ReplicaRestart { .. } => "replica_restart",
            FaultAction::RedisLatency { .. } => "redis_latency",
            FaultAction::ClockStep { .. } => "clock_step",
        }
    }

    /// Whether the arm's Redis needs the delaying proxy in front.
    pub fn needs_proxy(self) -> bool {
        matches!(self, FaultAction::RedisLatency { .. })
    }

    /// In words, e.g. "redis_down (pause)" or "replica_restart (r1)".
    pub fn describe(self) -> String {
        match self {
            FaultAction::RedisDown { restart: false } => "redis_down (pause)".to_string(),
            FaultAction::RedisDown { restart: true } => "redis_down (restart)".to_string(),
            FaultAction::ReplicaRestart { replica } => format!("replica_restart (r{replica})"),
            FaultAction::RedisLatency { delay, jitter } if jitter.is_zero() => {
                format!("redis_latency (+{delay:?})")
            }
            FaultAction::RedisLatency { delay, jitter } => {
                format!("redis_latency (+{delay:?} to +{:?})", delay + jitter)
            }
            FaultAction::ClockStep { replica, step_us } => {
                format!("clock_step (r{replica}, {step_us:+} µs)")
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct RedisSpec {
    /// An existing Redis to use; `None`: rlbench starts its own.
    pub url: Option<String>,
    /// Bound on one decision's Redis round trips.
    pub timeout: Duration,
}

#[derive(Clone, Debug)]
pub struct LoadSpec {
    /// When requests leave (constant, Poisson, stages, bursts), summed over
    /// all keys and replicas.
    pub shape: crate::load::schedule::Shape,
    /// Number of distinct keys.
    pub keys: u32,
    pub key_distribution: KeyDistribution,
    pub timeout: Duration,
    /// Requests allowed in flight at once; past it the schedule waits (and
    /// the lag shows in the figures) rather than memory growing.
    pub max_in_flight: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Each replica counts in its own memory.
    Local,
    /// Counts in Redis, read-decide-write as separate commands (the race).
    RedisNaive,
    /// Counts in Redis, one atomic Lua script per decision.
    RedisLua,
    /// Not ours: `[target] kind = "external"`.
    External,
}

impl Mode {
    pub fn as_str(&self) -> &'static str {
        match self {
            Mode::Local => "local",
            Mode::RedisNaive => "redis_naive",
            Mode::RedisLua => "redis_lua",
            Mode::External => "external",
        }
    }

    pub fn uses_redis(&self) -> bool {
        matches!(self, Mode::RedisNaive | Mode::RedisLua)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fanout {
    RoundRobin,
    Random,
    /// The same key always goes to the same replica.
    Sticky,
    /// Everything to the first replica.
    Single,
}

impl Fanout {
    pub const NAMES: &'static str = "round_robin, random, sticky or single";

    pub fn from_name(name: &str) -> Option<Fanout> {
        Some(match name {
            "round_robin" => Fanout::RoundRobin,
            "random" => Fanout::Random,
            "sticky" => Fanout::Sticky,
            "single" => Fanout::Single,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeyDistribution {
    Uniform,
    /// Key of rank k (1-based) with weight 1/k^s.
    Zipf {
        s: f64,
    },
    /// The first key takes `share` of the requests; the rest are uniform.
    Hot {
        share: f64,
    },
}

#[derive(Clone, Debug)]
pub struct Arm {
    pub name: String,
    pub mode: Mode,
    pub replicas: usize,
    pub fanout: Fanout,
    pub key_header: String,
    /// Whose clock the limiter reads (`Redis` only in Redis modes).
    pub clock: ClockSource,
    /// Per replica, by index; missing entries are 0.
    pub clock_skew_us: Vec<i64>,
    pub on_redis_error: OnError,
    /// The scenario's policy, or the arm's own (`[arms.policy]`).
    pub policy: Policy,
    /// The preset it was stated as, as written (`nginx_limit_req rate=10r/s burst=5`).
    pub preset: Option<String>,
    /// Late replenishment and chunked refill, as the policy declares them.
    pub timing: PolicyTiming,
    pub expect: Vec<Expectation>,
    /// An external target's URLs for this arm (`replicas` is their count);
    /// empty for the reference API.
    pub urls: Vec<hyper::Uri>,
}

impl Arm {
    pub fn skew_of(&self, replica: usize) -> i64 {
        self.clock_skew_us.get(replica).copied().unwrap_or(0)
    }

    /// Whether every replica decides by one clock that is this machine's
    /// wall clock, so epoch-aligned windows line up with the trace.
    pub fn clocks_aligned(&self) -> bool {
        match self.clock {
            ClockSource::Redis => true,
            ClockSource::Replica => (0..self.replicas).all(|r| self.skew_of(r) == 0),
        }
    }
}

/// A bound on one summary figure, e.g. `max_over_admission_ratio = 1.01`.
#[derive(Clone, Debug, PartialEq)]
pub struct Expectation {
    /// The key as written in `[arms.expect]`.
    pub key: &'static str,
    pub figure: Figure,
    pub bound: Bound,
    pub value: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    AtMost,
    AtLeast,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    OverAdmissionRatio,
    DefiniteViolations,
    PossibleViolations,
    FalseRejectRatio,
    P99Ms,
    ErrorRatio,
    PeakWindowRatio,
    /// Sentences in the header checks' findings.
    HeaderFindings,
    /// Limited answers contradicting an earlier answer's `remaining`.
    RemainingContradictions,
}

impl Figure {
    pub fn name(self) -> &'static str {
        match self {
            Figure::OverAdmissionRatio => "over_admission_ratio",
            Figure::DefiniteViolations => "definite_violations",
            Figure::PossibleViolations => "possible_violations",
            Figure::FalseRejectRatio => "false_reject_ratio",
            Figure::P99Ms => "p99_ms",
            Figure::ErrorRatio => "error_ratio",
            Figure::PeakWindowRatio => "peak_window_ratio",
            Figure::HeaderFindings => "header_findings",
            Figure::RemainingContradictions => "remaining_contradictions",
        }
    }

    /// Judged against a policy (not a plain measurement).
    pub fn needs_policy(self) -> bool {
        !matches!(
            self,
            Figure::P99Ms
                | Figure::ErrorRatio
                | Figure::HeaderFindings
                | Figure::RemainingContradictions
        )
    }
}

/// A scenario that cannot be read or is not valid: `file:line:col: what`.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
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

/// Reads and validates a scenario file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        file: file.clone(),
        line: 0,
        column: 0,
        message: format!("cannot read the scenario: {e}"),
    })?;
    parse(&file, &text)
}

/// Validates scenario text; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    validate::scenario(file, text)
}

/// A policy given inline, as the keys of a `[policy]` table separated by
/// commas: `algorithm = "sliding_log", limit = 10, window = "1s"` (for
/// `rlbench attack --policy`). Errors read like a scenario's, located in
/// the text given.
pub fn inline_policy(text: &str) -> Result<(Policy, PolicyTiming), ScenarioError> {
    validate::inline_policy(text)
}
