//! What a scenario says, as the engine's inputs take it: the arms, the
//! load, Redis, faults, checks and an external target; and the error that
//! locates what is wrong in the file.

use crate::faults::Fault;
use crate::gate::Expectation;
use crate::load::pick::{Fanout, KeyDistribution};
use reference_api::config::{ClockSource, HeaderStyle, OnError, Topology};
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

/// `[distributed]` (or `run --agents`): how many load agents split each
/// arm's schedule, the Redis they coordinate through, and how long the
/// controller waits for them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Distributed {
    pub agents: usize,
    /// A `redis://` URL; `None` in the file means `--coordinator` must say it.
    pub coordinator: Option<String>,
    pub wait: Duration,
    /// The most an agent's times may be off on the controller's time line
    /// before nothing is judged (the gate fails): a wider bound only ever
    /// makes a verdict milder, so an unbounded one could forge a pass.
    pub max_clock_uncertainty: Duration,
}

/// How far an agent's times may be off unless the scenario says more.
pub(crate) const DEFAULT_MAX_CLOCK_UNCERTAINTY: Duration = Duration::from_millis(10);

/// The most agents one run may split a schedule over.
pub(crate) const MAX_AGENTS: usize = 256;

/// How long the controller waits for its agents unless told otherwise.
pub(crate) const DEFAULT_AGENTS_WAIT: Duration = Duration::from_secs(60);

impl Scenario {
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

/// The fastest clock a scenario may state (simulate or declare): 10 %, far
/// beyond any slewing daemon's rate (chrony's default cap is 8.3 %).
pub(crate) const MAX_CLOCK_RATE_PPM: i64 = 100_000;

/// `[checks]`: what rlbench does after each arm's load to test the
/// limiter's headers.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Checks {
    /// Keys whose Retry-After is probed (0: none).
    pub retry_after_probes: u32,
    /// A longer advertised wait is reported, not waited for.
    pub retry_after_max_wait: Duration,
    /// Witnesses kept per kind and arm in summary.json.
    pub witnesses: usize,
    /// How long after the client gave up the server may still decide
    /// (`None`: at any time).
    pub max_server_time: Option<Duration>,
    /// How fast or slow (ppm) a clock rlbench cannot sample may run against
    /// the generator's: a target on another host. Clocks on this machine
    /// are measured during each run and need none.
    pub clock_rate_ppm: Option<i64>,
}

/// What the limiter's timing may be beyond its policy's parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PolicyTiming {
    /// How late a window, segment or refill may run (µs).
    pub lateness_us: i64,
    /// A token bucket refilled in one chunk per period (ASP.NET Core's,
    /// or `refill_every`).
    pub chunked_refill: bool,
    /// Those chunks land on the wall clock's multiples of the period
    /// (`refill_aligned = "epoch"`: a bucket counting whole seconds).
    pub chunks_on_epoch: bool,
    /// The limiter reads one clock inside each decision's atomic step.
    pub one_clock: bool,
    /// Rejected attempts count against the limit too (HAProxy's stick
    /// tables, rate-limiter-flexible's `consume`): a client that keeps
    /// sending stays limited.
    pub count_rejected: bool,
    /// `clock_resolution`: the coarsest step of the limiter's clock (µs),
    /// when declared; the verifier's slack becomes at least that.
    pub clock_resolution_us: Option<i64>,
}

impl Default for Checks {
    fn default() -> Self {
        Checks {
            retry_after_probes: 2,
            retry_after_max_wait: Duration::from_secs(5),
            witnesses: crate::store::records::DEFAULT_WITNESSES,
            max_server_time: None,
            clock_rate_ppm: None,
        }
    }
}

/// Someone else's limiter: where requests go and what they look like.
#[derive(Clone, Debug)]
pub(crate) struct ExternalTarget {
    /// The scenario's URLs (arms may name their own).
    pub urls: Vec<hyper::Uri>,
    /// `[target] path`, put on every URL (an arm's too).
    pub path: Option<String>,
    pub template: crate::load::request::Template,
    /// `[target] one_clock`: the limiter reads one clock inside each
    /// decision's atomic step (one process, or its store's own clock).
    pub one_clock: bool,
    /// `[target] wall_clock = "this_machine"`: the limiter keeps time by
    /// this machine's wall clock (it runs here, or its store does), so
    /// epoch-aligned windows and chunks are known in trace time.
    pub wall_clock_here: bool,
    /// `[target] allow_remote`: URLs off this machine are accepted (the
    /// report names them); without it, loopback only.
    pub allow_remote: bool,
    /// `[target] ca`, `cert`, `key`, `insecure`: how `https://` URLs are
    /// reached (paths relative to the scenario file's folder).
    pub tls: crate::load::tls::TlsSpec,
}

impl ExternalTarget {
    /// A target of no URL with this request template: where `[load] key`
    /// is put when no `[target]` holds it (`--key-in`, the reference API).
    pub(crate) fn around(template: crate::load::request::Template) -> Self {
        ExternalTarget {
            urls: Vec::new(),
            path: None,
            template,
            one_clock: false,
            wall_clock_here: false,
            allow_remote: false,
            tls: Default::default(),
        }
    }
}

/// Where each request carries its key, as the limiter finds it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) enum KeySpec {
    /// A header, a path segment, a query parameter, a body field: all in
    /// the request template as it is.
    #[default]
    InTemplate,
    /// Each key's connections come from an address of its own, the
    /// `count` from `first` on (what nginx `$binary_remote_addr` and
    /// HAProxy `src` key on).
    SourceIp {
        first: std::net::Ipv4Addr,
        count: u32,
    },
    /// `X-Forwarded-For` with an address of each key's own.
    ForwardedFor,
    /// `Authorization: Bearer` with a token minted for each key.
    Jwt(JwtSpec),
}

/// Where `X-Forwarded-For` addresses start: 10.0.0.1, one per key.
pub(crate) const FORWARDED_FROM: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 0, 0, 1);

/// How to mint each key's token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JwtSpec {
    /// The claim that holds the key ("sub").
    pub claim: String,
    pub alg: JwtAlg,
    /// HS256's shared secret, or RS256's private key (PEM file, relative
    /// to the scenario's folder).
    pub secret: JwtSecret,
    /// Tokens expire this long after they are minted.
    pub expires_in: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JwtAlg {
    Hs256,
    Rs256,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum JwtSecret {
    Shared(String),
    PrivateKey(std::path::PathBuf),
}

#[derive(Clone, Debug)]
pub(crate) struct RedisSpec {
    /// An existing Redis to use; `None`: rlbench starts its own.
    pub url: Option<String>,
    /// Bound on one decision's Redis round trips.
    pub timeout: Duration,
    /// One server, or a Redis Cluster (`url` then names any of its nodes).
    pub topology: Topology,
    /// The masters of the cluster rlbench starts (`topology = "cluster"`).
    pub masters: usize,
    /// Each of those masters' replicas (0 to 2): what `redis_failover`
    /// promotes on a cluster.
    pub replicas_per_master: usize,
}

#[derive(Clone, Debug)]
pub(crate) struct LoadSpec {
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
    /// `retry = { ... }`: callers retry limited answers; `None`: never.
    pub retry: Option<crate::load::retry::Retry>,
    /// `[load] key`: where the key goes when more than a header says it
    /// (an external target's header, path, query or body place is in its
    /// request template already).
    pub key: KeySpec,
    /// `[load] principals` with `spoof`: `keys` is then the principals'
    /// count, and each sends under forged identities.
    pub spoof: Option<Spoof>,
}

/// True callers (principals) sending under forged identities, each with
/// its own real one too (its JWT, when `[load] key = { jwt }`): what a
/// limiter keyed on something a client can forge lets through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Spoof {
    /// Forged identities per principal; a request takes one of them.
    pub forged_keys: u32,
    /// The key header carries a forged key (`<principal>~<n>`).
    pub rotate_key: bool,
    /// `X-Forwarded-For` carries a forged address (else the principal's own).
    pub forwarded_for: bool,
}

/// The most principals × forged keys a load names.
pub(crate) const MAX_FORGED: u32 = 1_000_000;

/// Where the reference API's replicas of an arm find the key under
/// spoofing (`[[arms]] key_from`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyFrom {
    /// `[cluster] key_header`, forgeable.
    Header,
    /// The verified JWT's claim (`[load] key = { jwt }`).
    Jwt,
    /// `X-Forwarded-For`, trusted.
    ForwardedFor,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Each replica counts in its own memory.
    Local,
    /// Counts in Redis, read-decide-write as separate commands (the race).
    RedisNaive,
    /// Counts in Redis, one atomic Lua script per decision.
    RedisLua,
    /// Admits leased from Redis in batches, spent by each replica.
    RedisBatched,
    /// Not ours: `[target] kind = "external"`.
    External,
}

impl Mode {
    pub(crate) fn as_str(&self) -> &'static str {
        use reference_api::config::{mode_name, RedisMode};
        match self {
            Mode::Local => mode_name(None),
            Mode::RedisNaive => mode_name(Some(RedisMode::Naive)),
            Mode::RedisLua => mode_name(Some(RedisMode::Lua)),
            Mode::RedisBatched => mode_name(Some(RedisMode::Batched)),
            Mode::External => "external",
        }
    }

    /// One of the reference API's modes, by the name a scenario gives it.
    pub(crate) fn named(name: &str) -> Option<Mode> {
        use reference_api::config::{mode_named, RedisMode};
        Some(match mode_named(name)? {
            None => Mode::Local,
            Some(RedisMode::Naive) => Mode::RedisNaive,
            Some(RedisMode::Lua) => Mode::RedisLua,
            Some(RedisMode::Batched) => Mode::RedisBatched,
        })
    }

    pub(crate) fn uses_redis(&self) -> bool {
        matches!(self, Mode::RedisNaive | Mode::RedisLua | Mode::RedisBatched)
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Arm {
    pub name: String,
    pub mode: Mode,
    pub replicas: usize,
    pub fanout: Fanout,
    pub key_header: String,
    /// Whose clock the limiter reads (`Redis` only in Redis modes).
    pub clock: ClockSource,
    /// Per replica, by index; missing entries are 0.
    pub clock_skew_us: Vec<i64>,
    /// Parts per million the replicas' clocks gain on the wall clock (a
    /// slewed clock, simulated; negative: they lose).
    pub clock_rate_ppm: i64,
    pub on_redis_error: OnError,
    /// `WAIT` for this many Redis replicas after each decision (0: none).
    pub wait_replicas: u32,
    /// The reference API's variant whose `/metrics` loses admits (a racy
    /// count); its decisions are those of `mode`.
    pub lossy_metrics: bool,
    /// The replicas also send their metrics by OTLP (gRPC) to a collector.
    pub otlp: Option<reference_api::config::Otlp>,
    /// The script consumes nothing past the decision's deadline.
    pub deadline_aware: bool,
    /// `redis_batched`: admits per lease, and how long one may be spent
    /// (zero: the window).
    pub lease: u64,
    pub lease_ttl: Duration,
    /// The rate-limit headers the reference replicas send.
    pub ratelimit_headers: HeaderStyle,
    /// The scenario's policy, or the arm's own (`[arms.policy]`).
    pub policy: Policy,
    /// The preset it was stated as, as written (`nginx_limit_req rate=10r/s burst=5`).
    pub preset: Option<String>,
    /// Late replenishment and chunked refill, as the policy declares them.
    pub timing: PolicyTiming,
    pub expect: Vec<Expectation>,
    /// Under spoofing, where the reference API's replicas take the key
    /// (`None`: from `[load] key`, as without spoofing).
    pub key_from: Option<KeyFrom>,
    /// An external target's URLs for this arm (`replicas` is their count);
    /// empty for the reference API.
    pub urls: Vec<hyper::Uri>,
}

impl Arm {
    /// `redis_batched` on a fixed window of `limit`, leased `lease` at a
    /// time by R replicas. Each replica spends at least one admit of a
    /// lease when it arrives and the rest within one window's length, and
    /// keeps a lease only if none was kept since it asked and its window
    /// had not ended by the latest time the replica decided at. So of the
    /// leases of one window, each replica carries at most one's rest into
    /// the next, and a window holds at most what was leased in it (`limit`)
    /// plus that: `limit + min(limit, R·(lease − 1))` — at most what the
    /// window before held, too.
    pub(crate) fn lease_bound(&self) -> Option<u64> {
        match (&self.mode, &self.policy) {
            (Mode::RedisBatched, Policy::FixedWindow { limit, .. }) => {
                let carried = self.replicas as u64 * self.lease.saturating_sub(1);
                Some(limit + carried.min(*limit))
            }
            _ => None,
        }
    }

    pub(crate) fn skew_of(&self, replica: usize) -> i64 {
        self.clock_skew_us.get(replica).copied().unwrap_or(0)
    }

    /// Whether every replica decides by one clock that is this machine's
    /// wall clock, so epoch-aligned windows line up with the trace.
    pub(crate) fn clocks_aligned(&self) -> bool {
        match self.clock {
            ClockSource::Redis => true,
            ClockSource::Replica => (0..self.replicas).all(|r| self.skew_of(r) == 0),
        }
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
