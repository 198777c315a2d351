//! `page.json`, beside summary.json: what report.html draws over time and
//! per key, pre-aggregated so the page stays small whatever the run's
//! size — per-bucket series (at most [`MAX_BUCKETS`] of them), the
//! busiest key's admits in a trailing window against the band a correct
//! limiter may reach, and a bounded set of keys' requests for the
//! per-key timeline. Filled by the finish from the analysis, read by the
//! page's renderer (`report::interactive`).

use serde::{Deserialize, Serialize};

/// Buckets per series at most: a long run's buckets are wider.
pub(crate) const MAX_BUCKETS: usize = 600;
/// Requests of one key the timeline carries at most.
pub(crate) const MAX_KEY_REQUESTS: usize = 2_000;
/// Requests of all keys of one arm the timeline carries at most.
pub(crate) const MAX_ARM_REQUESTS: usize = 12_000;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct PageData {
    pub arms: Vec<ArmPage>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ArmPage {
    pub name: String,
    pub series: Series,
    /// The busiest key's admits in a trailing window (absent without a policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowSeries>,
    /// Each fault's window (s from the load's start).
    #[serde(default)]
    pub faults: Vec<FaultSpan>,
    /// Keys whose requests the timeline can show: the busiest and those
    /// with witnesses first.
    #[serde(default)]
    pub keys: Vec<KeyView>,
    /// `[target] metrics`: the limiter's own counts so far, every second.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<crate::store::records::MetricsSample>,
}

/// Requests by the bucket of send time they were sent in (20 ms for a
/// short run, wider for a long one: `analyze::series`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Series {
    /// Bucket width (s); bucket i starts at `i · bucket_s`.
    pub bucket_s: f64,
    pub admitted: Vec<u64>,
    pub rejected: Vec<u64>,
    /// Failed requests (an answer that was neither, or none) and timeouts.
    pub errors: Vec<u64>,
    pub timeouts: Vec<u64>,
    /// Answers by HTTP status class: "2xx", "429", "4xx" (other), "5xx",
    /// "other" (1xx, 3xx), and "none" (no answer).
    pub status: Vec<(String, Vec<u64>)>,
    /// Latency from the intended send time, per bucket (ms; 0 when empty).
    pub p50_ms: Vec<f64>,
    pub p99_ms: Vec<f64>,
    pub max_ms: Vec<f64>,
    /// How late the generator sent, per bucket: the most (ms).
    pub lag_max_ms: Vec<f64>,
}

/// Admits of one key whose whole `[sent, done]` lies in `(t − span, t]`:
/// each of them was decided inside that span, so a correct limiter never
/// has more than `most` there (the verifier's bound for such a span).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct WindowSeries {
    pub key: String,
    pub span_s: f64,
    /// The policy's limit, and the most a correct limiter may admit in a
    /// span this long when its windows' alignment is unknown.
    pub limit: u64,
    pub most: u64,
    /// Why `most`, in words ("a span shorter than the window meets at most
    /// two fixed windows").
    pub why: String,
    pub t: Vec<f64>,
    pub admitted: Vec<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct FaultSpan {
    pub name: String,
    pub from_s: f64,
    pub to_s: f64,
}

/// One key's requests, columns of equal length, by send time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct KeyView {
    pub key: String,
    /// Why it is here: "busiest", "witness", or "key".
    pub why: String,
    /// How many of its requests are not carried (before and after those that are).
    pub left_out: u64,
    /// ms from the load's start, to 10 µs.
    pub sent_ms: Vec<f64>,
    pub done_ms: Vec<f64>,
    pub replica: Vec<u32>,
    /// "a" admitted, "r" rejected, "u" unknown (an error or a timeout), one
    /// character each.
    pub outcome: String,
    pub seq: Vec<u64>,
}

/// Rounds to 10 µs, in ms: what the timeline can tell apart.
pub(crate) fn ms(us: i64) -> f64 {
    (us as f64 / 10.0).round() / 100.0
}

/// Reads a folder's page.json; `None` when it is missing (a folder from
/// before the page drew it) or unreadable.
pub(crate) fn read(path: &std::path::Path) -> Option<PageData> {
    let text = crate::files::read_to_string(path, crate::files::SUMMARY_BYTES).ok()?;
    serde_json::from_str(&text).ok()
}
