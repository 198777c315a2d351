//! What one replica is told at start: who it is, which policy it enforces,
//! where the key comes from. rlbench passes it as JSON in the replica's
//! environment (`replica::CONFIG_ENV`), never on its command line.

use crate::policy::Policy;
use serde::{Deserialize, Serialize};

pub const DEFAULT_KEY_HEADER: &str = "X-Customer-Id";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaConfig {
    /// Name echoed in `X-Replica`, e.g. `r0`.
    pub replica: String,
    pub policy: Policy,
    #[serde(default = "default_key_header")]
    pub key_header: String,
    /// Longer keys get a 400: a key is an identifier, not a payload.
    #[serde(default = "default_max_key_len")]
    pub max_key_len: usize,
    /// Shift of this replica's clock against the wall clock.
    #[serde(default)]
    pub clock_skew_us: i64,
    /// Parts per million this replica's clock gains on the wall clock (a
    /// slewed clock, simulated).
    #[serde(default)]
    pub clock_rate_ppm: i64,
    /// Bound on live per-key states; new keys beyond it are rejected (the
    /// safe direction) rather than evicting live counts.
    #[serde(default = "default_max_keys")]
    pub max_keys: usize,
    #[serde(default)]
    pub backend: Backend,
    /// Serve `PUT /admin/clock-skew?us=N` (to loopback peers only, with
    /// `Authorization: Bearer <admin_token>`): how rlbench steps the clock
    /// of a replica it started. Off unless set.
    #[serde(default)]
    pub admin: bool,
    /// The admin endpoint's token (required with `admin`); rlbench draws a
    /// fresh one for every stack it starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_token: Option<String>,
    /// Which rate-limit headers the answers carry.
    #[serde(default)]
    pub ratelimit_headers: HeaderStyle,
    /// Where the key comes from when not `key_header`: a verified JWT
    /// claim, or a trusted X-Forwarded-For.
    #[serde(default)]
    pub key_from: crate::identity::KeyFrom,
    /// What one client may take of the replica (`listen.rs`).
    #[serde(default)]
    pub limits: Limits,
    /// A deliberately broken variant: admits are counted in `/metrics` by
    /// reading the counter, waiting a millisecond and writing it back plus
    /// one, so concurrent admits lose counts. Decisions are unaffected:
    /// it is there to show a limiter's own metrics caught against a trace.
    #[serde(default)]
    pub lossy_metrics: bool,
    /// Also send the metrics by OTLP (gRPC) to a collector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp: Option<Otlp>,
}

/// Where and how often a replica sends its metrics by OTLP.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Otlp {
    /// The collector's OTLP/gRPC endpoint, e.g. `http://127.0.0.1:4317`.
    pub endpoint: String,
    /// Milliseconds between exports (OpenTelemetry's default is 60 s).
    #[serde(default = "default_otlp_interval_ms")]
    pub interval_ms: u64,
}

fn default_otlp_interval_ms() -> u64 {
    60_000
}

/// What one client may take of a replica: how long a request head may take
/// to arrive, how big it and a body may be, how many connections may be
/// open at once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// A request head (or the next one, on an idle keep-alive connection)
    /// not whole within this is cut off: slowloris.
    pub header_read_timeout_ms: u64,
    /// Bigger request heads are refused (at least hyper's 8 KiB buffer).
    pub max_header_bytes: usize,
    /// A body declared bigger than this is refused with 413, unread.
    pub max_body_bytes: u64,
    /// Connections open at once; one more is closed when accepted.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read_timeout_ms: 30_000,
            max_header_bytes: 16 * 1024,
            max_body_bytes: 64 * 1024,
            max_connections: 10_000,
        }
    }
}

fn default_key_header() -> String {
    DEFAULT_KEY_HEADER.to_string()
}

fn default_max_key_len() -> usize {
    256
}

fn default_max_keys() -> usize {
    1_000_000
}

impl ReplicaConfig {
    pub fn new(replica: impl Into<String>, policy: Policy) -> Self {
        ReplicaConfig {
            replica: replica.into(),
            policy,
            key_header: default_key_header(),
            max_key_len: default_max_key_len(),
            clock_skew_us: 0,
            clock_rate_ppm: 0,
            max_keys: default_max_keys(),
            backend: Backend::Local,
            admin: false,
            admin_token: None,
            ratelimit_headers: HeaderStyle::default(),
            key_from: Default::default(),
            limits: Limits::default(),
            lossy_metrics: false,
            otlp: None,
        }
    }
}

/// The rate-limit headers of `POST /api/transfers`' answers (`Retry-After`
/// on every 429 whichever is chosen).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum HeaderStyle {
    /// `RateLimit-Policy` and `RateLimit`, the IETF draft's fields.
    #[default]
    #[serde(rename = "ietf")]
    Ietf,
    /// The de-facto `X-RateLimit-Limit`, `-Remaining` and `-Reset` (delta
    /// seconds), as GitHub-, nginx- and Express-style limiters send them.
    #[serde(rename = "x_ratelimit")]
    XRateLimit,
    /// Both sets.
    #[serde(rename = "both")]
    Both,
}

impl HeaderStyle {
    pub fn ietf(self) -> bool {
        matches!(self, HeaderStyle::Ietf | HeaderStyle::Both)
    }

    pub fn x_ratelimit(self) -> bool {
        matches!(self, HeaderStyle::XRateLimit | HeaderStyle::Both)
    }
}

/// Where a replica keeps its counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Backend {
    /// In this process's memory: correct alone, a fake global limit in a cluster.
    #[default]
    Local,
    Redis(RedisBackend),
}

/// The reference API's modes by name — the one place they are spelled:
/// scenarios, `RLBENCH_MODE` and the metrics' `mode` label read them
/// here. `None` is `local`; the others keep their counts in Redis.
pub const MODES: [(&str, Option<RedisMode>); 4] = [
    ("local", None),
    ("redis_naive", Some(RedisMode::Naive)),
    ("redis_lua", Some(RedisMode::Lua)),
    ("redis_batched", Some(RedisMode::Batched)),
];

/// `local, redis_naive, redis_lua or redis_batched`: the modes, for a message.
pub fn mode_list() -> String {
    let names: Vec<&str> = MODES.iter().map(|(n, _)| *n).collect();
    format!(
        "{} or {}",
        names[..names.len() - 1].join(", "),
        names[names.len() - 1]
    )
}

/// A mode's name ([`MODES`]).
pub fn mode_name(redis: Option<RedisMode>) -> &'static str {
    MODES
        .iter()
        .find(|(_, m)| *m == redis)
        .map_or("local", |(n, _)| n)
}

/// The mode a name stands for: `Some(None)` is `local`.
pub fn mode_named(name: &str) -> Option<Option<RedisMode>> {
    MODES.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
}

impl Backend {
    /// The mode's name ([`MODES`]).
    pub fn mode_name(&self) -> &'static str {
        match self {
            Backend::Local => mode_name(None),
            Backend::Redis(r) => mode_name(Some(r.mode)),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisBackend {
    /// The server, or with `topology = cluster` any one of the cluster's
    /// nodes (the client learns the rest and follows MOVED/ASK).
    pub url: String,
    #[serde(default)]
    pub topology: Topology,
    /// Every key this replica touches starts with it (one prefix per run and arm).
    pub prefix: String,
    pub mode: RedisMode,
    pub clock: ClockSource,
    /// Bound on one decision's Redis round trips; past it `on_error` decides.
    pub timeout_us: u64,
    pub on_error: OnError,
    /// After each decision, `WAIT` until this many replicas acknowledged
    /// its writes (within the decision's timeout); short of that the
    /// decision is `on_error`'s. 0: do not wait.
    #[serde(default)]
    pub wait_replicas: u32,
    /// Pass each decision's deadline (the replica's clock plus the
    /// timeout) to the script, which consumes nothing once Redis' clock
    /// has passed it (Lua mode only).
    #[serde(default)]
    pub deadline: bool,
    /// `Batched`: admits leased per script call.
    #[serde(default = "default_lease")]
    pub lease: u64,
    /// `Batched`: how long a lease may be spent (µs; at most the window).
    #[serde(default)]
    pub lease_ttl_us: u64,
}

fn default_lease() -> u64 {
    1
}

/// How the Redis behind `url` is laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Topology {
    /// One server holds every key.
    #[default]
    Single,
    /// A Redis Cluster: keys spread over the masters' hash slots. Each
    /// customer's key is hash-tagged, so a decision touches one slot.
    Cluster,
    /// A primary with a replica: the client talks to the primary at `url`
    /// (an address a failover moves to the promoted replica).
    Replicated,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RedisMode {
    /// One atomic Lua script per decision.
    Lua,
    /// Read, decide in Rust, write: separate round trips (the race).
    Naive,
    /// Lease `lease` admits at a time by one script call and spend them
    /// in this replica (fixed window only): fewer Redis calls, bounded
    /// over-admission.
    Batched,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockSource {
    /// The replica's own clock, skew included, passed to Redis.
    Replica,
    /// Redis' `TIME`, one clock for every replica.
    Redis,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// Admit when Redis cannot answer: availability over the limit.
    FailOpen,
    /// Reject when Redis cannot answer: the limit over availability.
    FailClosed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_name_reads_back_as_its_mode_and_nothing_else_does() {
        for (name, mode) in MODES {
            assert_eq!(mode_named(name), Some(mode));
            assert_eq!(mode_name(mode), name);
        }
        for other in ["", "Local", "redis", "redis-lua", "external"] {
            assert_eq!(mode_named(other), None, "{other:?}");
        }
        assert_eq!(
            mode_list(),
            "local, redis_naive, redis_lua or redis_batched"
        );
    }
}
