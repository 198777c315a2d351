//! The scenario file exactly as written: serde types that mirror the TOML,
//! reject unknown keys, and keep the source span of every value so that
//! validation can point at the line and column of a bad one.

use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub name: Spanned<String>,
    pub duration: Spanned<String>,
    pub seed: Option<Spanned<i64>>,
    pub policy: Spanned<RawPolicy>,
    pub cluster: Option<RawCluster>,
    pub redis: Option<RawRedis>,
    pub load: Spanned<RawLoad>,
    pub arms: Spanned<Vec<Spanned<RawArm>>>,
    pub faults: Option<Vec<Spanned<RawFault>>>,
    pub target: Option<Spanned<RawTarget>>,
    pub checks: Option<RawChecks>,
    pub distributed: Option<Spanned<RawDistributed>>,
}

/// `[distributed]`: the load sent by agents on other machines.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDistributed {
    pub agents: Option<Spanned<i64>>,
    pub coordinator: Option<Spanned<String>>,
    pub wait: Option<Spanned<String>>,
    pub max_clock_uncertainty: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawChecks {
    pub retry_after_probes: Option<Spanned<i64>>,
    pub retry_after_max_wait: Option<Spanned<String>>,
    pub witnesses: Option<Spanned<i64>>,
    pub max_server_time: Option<Spanned<String>>,
    pub clock_rate_ppm: Option<Spanned<i64>>,
}

/// `[target]`: the reference API (default) or any HTTP endpoints.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTarget {
    pub kind: Spanned<String>,
    pub urls: Option<Spanned<Vec<Spanned<String>>>>,
    pub path: Option<Spanned<String>>,
    pub method: Option<Spanned<String>>,
    pub headers: Option<Spanned<std::collections::BTreeMap<String, Spanned<String>>>>,
    pub key_header: Option<Spanned<String>>,
    pub key_template: Option<Spanned<String>>,
    pub limited_status: Option<Spanned<Vec<Spanned<i64>>>>,
    pub one_clock: Option<Spanned<bool>>,
    /// Fresh key values each run and arm (default true).
    pub fresh_keys: Option<Spanned<bool>>,
    pub wall_clock: Option<Spanned<String>>,
    pub allow_remote: Option<Spanned<bool>>,
    /// `https://` targets: authorities to trust (PEM), a client
    /// certificate and key, or no check of the server at all.
    pub ca: Option<Spanned<String>>,
    pub cert: Option<Spanned<String>>,
    pub key: Option<Spanned<String>>,
    pub insecure: Option<Spanned<bool>>,
    /// The request body, given or from a file, and its type.
    pub body: Option<Spanned<String>>,
    pub body_file: Option<Spanned<String>>,
    pub content_type: Option<Spanned<String>>,
    /// "1.1" (default), "2" or "auto".
    pub http: Option<Spanned<String>>,
    /// false: a connection per request, its set-up in the latency.
    pub keep_alive: Option<Spanned<bool>>,
    /// `kind = "envoy_rls"`: the domain asked, and the descriptor entry
    /// whose value is the key.
    pub domain: Option<Spanned<String>>,
    pub descriptor: Option<Spanned<String>>,
    /// The limiter's own counters: where, and which series.
    pub metrics: Option<Spanned<RawMetrics>>,
}

/// `[target] metrics = { ... }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMetrics {
    pub url: Option<Spanned<String>>,
    pub urls: Option<Spanned<Vec<Spanned<String>>>>,
    pub prometheus: Option<Spanned<String>>,
    pub admitted: Option<Spanned<String>>,
    pub rejected: Option<Spanned<String>>,
}

/// One `[[faults]]` entry: what to break, when, and for how long.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFault {
    pub at: Spanned<String>,
    #[serde(rename = "for")]
    pub lasts: Spanned<String>,
    pub action: Spanned<String>,
    pub variant: Option<Spanned<String>>,
    pub replica: Option<Spanned<i64>>,
    pub delay: Option<Spanned<String>>,
    pub jitter: Option<Spanned<String>>,
    pub step: Option<Spanned<String>>,
    pub replication_delay: Option<Spanned<String>>,
}

/// Also an arm's `[arms.policy]`: naming an `algorithm` there replaces the
/// scenario's policy; otherwise the fields given override the scenario's.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPolicy {
    pub algorithm: Option<Spanned<String>>,
    pub preset: Option<Spanned<String>>,
    pub nodelay: Option<Spanned<bool>>,
    pub limit: Option<Spanned<i64>>,
    pub window: Option<Spanned<String>>,
    pub segments: Option<Spanned<i64>>,
    pub capacity: Option<Spanned<i64>>,
    pub refill: Option<Spanned<String>>,
    /// A token bucket's refill in whole chunks, one per this period ("1s").
    pub refill_every: Option<Spanned<String>>,
    /// Where those chunks land: "epoch", "first_hit" or "timer".
    pub refill_aligned: Option<Spanned<String>>,
    pub rate: Option<Spanned<String>>,
    pub burst: Option<Spanned<i64>>,
    /// How late a window, segment or refill may run ("100ms").
    pub replenish_lateness: Option<Spanned<String>>,
    pub count_rejected: Option<Spanned<bool>>,
    /// The coarsest step of the limiter's clock ("1ms", "1s").
    pub clock_resolution: Option<Spanned<String>>,
    /// How far apart the deciders' clocks may be ("10ms"; "0s": one clock).
    pub clock_skew: Option<Spanned<String>>,
    /// preset = "aspnetcore": which limiter, in ASP.NET Core's own terms.
    pub limiter: Option<Spanned<String>>,
    pub permit_limit: Option<Spanned<i64>>,
    pub segments_per_window: Option<Spanned<i64>>,
    pub token_limit: Option<Spanned<i64>>,
    pub tokens_per_period: Option<Spanned<i64>>,
    pub replenishment_period: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCluster {
    pub replicas: Option<Spanned<i64>>,
    pub key_header: Option<Spanned<String>>,
    pub clock_skew: Option<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRedis {
    pub url: Option<Spanned<String>>,
    pub timeout: Option<Spanned<String>>,
    pub topology: Option<Spanned<String>>,
    pub masters: Option<Spanned<i64>>,
    pub replicas_per_master: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLoad {
    pub schedule: Option<Spanned<String>>,
    pub rate: Option<Spanned<f64>>,
    pub stages: Option<Spanned<Vec<Spanned<RawStage>>>>,
    pub burst: Option<Spanned<i64>>,
    pub burst_spread: Option<Spanned<String>>,
    pub concurrency: Option<Spanned<i64>>,
    pub think_time: Option<Spanned<String>>,
    pub keys: Option<Spanned<i64>>,
    pub key_distribution: Option<Spanned<String>>,
    pub zipf_s: Option<Spanned<f64>>,
    pub hot_share: Option<Spanned<f64>>,
    pub sweep_block: Option<Spanned<i64>>,
    pub fanout: Option<Spanned<String>>,
    pub timeout: Option<Spanned<String>>,
    pub max_in_flight: Option<Spanned<i64>>,
    pub retry: Option<Spanned<RawRetry>>,
    /// Where each request carries its key (external targets).
    pub key: Option<Spanned<RawKey>>,
    /// True callers, each sending under forged identities (`spoof`).
    pub principals: Option<Spanned<i64>>,
    /// `"rotate_key"`, `"forwarded_for"` or a list of them.
    pub spoof: Option<Spanned<toml::Value>>,
    /// Forged identities per principal.
    pub forged_keys: Option<Spanned<i64>>,
}

/// `[load] key = { ... }`: exactly one of these.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawKey {
    pub header: Option<Spanned<String>>,
    pub source_ip: Option<Spanned<String>>,
    pub path: Option<Spanned<String>>,
    pub query: Option<Spanned<String>>,
    pub bearer: Option<Spanned<bool>>,
    pub json_body: Option<Spanned<String>>,
    pub jwt: Option<Spanned<RawJwt>>,
    pub forwarded_for: Option<Spanned<bool>>,
}

/// `key = { jwt = { claim = "sub", alg = "HS256", secret = "…" } }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawJwt {
    pub claim: Option<Spanned<String>>,
    pub alg: Option<Spanned<String>>,
    pub secret: Option<Spanned<String>>,
    pub key: Option<Spanned<String>>,
    pub expires_in: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRetry {
    pub on: Option<Spanned<Vec<Spanned<i64>>>>,
    pub respect_retry_after: Option<bool>,
    pub backoff: Option<Spanned<String>>,
    pub base: Option<Spanned<String>>,
    pub cap: Option<Spanned<String>>,
    pub max: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStage {
    pub target: Spanned<f64>,
    pub duration: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawArm {
    pub name: Spanned<String>,
    pub mode: Option<Spanned<String>>,
    pub urls: Option<Spanned<Vec<Spanned<String>>>>,
    pub replicas: Option<Spanned<i64>>,
    pub fanout: Option<Spanned<String>>,
    pub clock: Option<Spanned<String>>,
    pub clock_skew: Option<Spanned<Vec<Spanned<String>>>>,
    pub clock_rate_ppm: Option<Spanned<i64>>,
    pub on_redis_error: Option<Spanned<String>>,
    pub wait_replicas: Option<Spanned<i64>>,
    pub deadline_aware: Option<Spanned<bool>>,
    pub lease: Option<Spanned<i64>>,
    pub lease_ttl: Option<Spanned<String>>,
    pub ratelimit_headers: Option<Spanned<String>>,
    /// Where the reference API finds the key under spoofing: `"header"`,
    /// `"jwt"` or `"forwarded_for"`.
    pub key_from: Option<Spanned<String>>,
    /// The variant whose `/metrics` loses admits (a racy count).
    pub lossy_metrics: Option<Spanned<bool>>,
    /// The replicas also send their metrics by OTLP to this collector.
    pub otlp: Option<Spanned<RawOtlp>>,
    pub policy: Option<Spanned<RawPolicy>>,
    pub expect: Option<RawExpect>,
    /// The arm's own schedule: `"bursts"` (with `burst`, `burst_spread`)
    /// or `"constant"` (with `rate`) in place of `[load]`'s.
    pub schedule: Option<Spanned<String>>,
    pub burst: Option<Spanned<i64>>,
    pub burst_spread: Option<Spanned<String>>,
    pub rate: Option<Spanned<f64>>,
    /// The arm's own number of keys in place of `[load]`'s.
    pub keys: Option<Spanned<i64>>,
    /// An external target's arm: its own `[target] keep_alive`.
    pub keep_alive: Option<Spanned<bool>>,
    /// The arm's own `key_distribution` (with its `zipf_s`, `hot_share`
    /// or `sweep_block`) in place of `[load]`'s.
    pub key_distribution: Option<Spanned<String>>,
    pub zipf_s: Option<Spanned<f64>>,
    pub hot_share: Option<Spanned<f64>>,
    pub sweep_block: Option<Spanned<i64>>,
}

/// `otlp = { endpoint = "http://HOST:PORT", interval = "10s" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOtlp {
    pub endpoint: Spanned<String>,
    pub interval: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExpect {
    pub max_over_admission_ratio: Option<Spanned<f64>>,
    pub min_over_admission_ratio: Option<Spanned<f64>>,
    pub max_definite_violations: Option<Spanned<i64>>,
    pub min_definite_violations: Option<Spanned<i64>>,
    pub max_possible_violations: Option<Spanned<i64>>,
    pub max_false_reject_ratio: Option<Spanned<f64>>,
    pub min_false_reject_ratio: Option<Spanned<f64>>,
    pub max_p99_ms: Option<Spanned<f64>>,
    pub max_error_ratio: Option<Spanned<f64>>,
    pub max_not_sent_ratio: Option<Spanned<f64>>,
    pub max_peak_window_ratio: Option<Spanned<f64>>,
    pub min_peak_window_ratio: Option<Spanned<f64>>,
    pub max_header_findings: Option<Spanned<i64>>,
    pub max_remaining_contradictions: Option<Spanned<i64>>,
    pub min_remaining_contradictions: Option<Spanned<i64>>,
    pub max_redis_commands_per_decision: Option<Spanned<f64>>,
    pub max_redis_bytes_per_key: Option<Spanned<i64>>,
    pub min_redis_bytes_per_key: Option<Spanned<i64>>,
    pub max_lease_bound_violations: Option<Spanned<i64>>,
    pub max_metrics_discrepancy: Option<Spanned<f64>>,
    pub min_metrics_discrepancy: Option<Spanned<f64>>,
}
