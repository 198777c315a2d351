//! `[[arms]]`: one arm as the engine takes it — its mode, replicas,
//! clocks, Redis behaviour, policy (and its timing) and expectations.

use crate::gate::Expectation;
use crate::load::pick::Fanout;
use reference_api::config::{ClockSource, HeaderStyle, OnError};
use reference_api::Policy;
use std::time::Duration;

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
    /// The arm's own schedule (`schedule = "bursts"` or `"constant"` on
    /// the arm), a bursts window the arm's policy's; `None`: `[load]`'s.
    pub schedule: Option<crate::load::schedule::Shape>,
    /// The arm's own number of keys (`keys` on the arm); `None`:
    /// `[load]`'s.
    pub keys: Option<u32>,
    /// An external target's arm's own `keep_alive` (`None`: the
    /// target's).
    pub keep_alive: Option<bool>,
    /// The arm's own key distribution (`None`: `[load]`'s).
    pub key_distribution: Option<crate::load::pick::KeyDistribution>,
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
    /// `clock_skew`: how far apart the deciders' clocks may be (µs), when
    /// declared; the slack is the resolution plus this.
    pub clock_skew_us: Option<i64>,
    /// A full token bucket may bank up to this many tokens and hand them
    /// over at once (released ASP.NET Core's: its token limit).
    pub banked_tokens: u64,
}
