//! The Retry-After probes as recorded in `events/<arm>.json`, and what
//! they found in words: sentences summary.json keeps among the header
//! findings and the report prints.

use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Probe {
    pub key: String,
    /// The limited answer's Retry-After, ms.
    pub retry_after_ms: Option<u64>,
    /// What the request sent after that wait got.
    pub result: ProbeResult,
    /// Its status (0: no answer, or not sent).
    pub status: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ProbeResult {
    /// Admitted after the advertised wait: Retry-After held.
    Admitted,
    /// Limited again after the advertised wait.
    LimitedAgain,
    /// The limited answer carried no (parsable) Retry-After.
    NoRetryAfter,
    /// The advertised wait was longer than the scenario allows waiting.
    WaitTooLong,
    /// No request was limited within the probe's bound.
    NeverLimited,
    /// An error or timeout got in the way.
    Failed,
}

/// Requests one probe may send to reach the limit.
pub(crate) const MAX_REQUESTS: u32 = 1_000;

/// How long one probe may try to reach the limit.
pub(crate) const MAX_TIME: Duration = Duration::from_secs(10);

/// The probes' findings — what the limiter got wrong — one sentence per
/// kind of result (naming the keys). Missing Retry-After is left unsaid
/// when the answers had no rate-limit headers at all (that is a finding of
/// its own).
pub(crate) fn findings(probes: &[Probe], any_headers: bool) -> Vec<String> {
    let mut kinds = vec![ProbeResult::LimitedAgain, ProbeResult::Failed];
    if any_headers {
        kinds.insert(1, ProbeResult::NoRetryAfter);
    }
    grouped(probes, &kinds)
}

/// Why a probe could not be made, though nothing was wrong (a long
/// advertised wait, a limit never reached).
pub(crate) fn notes(probes: &[Probe]) -> Vec<String> {
    grouped(
        probes,
        &[ProbeResult::WaitTooLong, ProbeResult::NeverLimited],
    )
}

fn grouped(probes: &[Probe], kinds: &[ProbeResult]) -> Vec<String> {
    let mut out = Vec::new();
    for &result in kinds {
        let these: Vec<&Probe> = probes.iter().filter(|p| p.result == result).collect();
        let Some(first) = these.first() else {
            continue;
        };
        let keys = these
            .iter()
            .map(|p| p.key.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let wait = first
            .retry_after_ms
            .map_or(String::new(), |ms| format!("{:.1} s", ms as f64 / 1000.0));
        out.push(match result {
            ProbeResult::LimitedAgain => {
                format!("limited again after waiting the advertised Retry-After ({wait}) for {keys}")
            }
            ProbeResult::NoRetryAfter => format!(
                "limited answers (status {}) carried no usable Retry-After ({keys})",
                first.status
            ),
            ProbeResult::WaitTooLong => format!(
                "Retry-After not probed: {wait} advertised, longer than retry_after_max_wait ({keys})"
            ),
            ProbeResult::NeverLimited => format!(
                "Retry-After not probed: not limited within {MAX_REQUESTS} requests or {} s ({keys})",
                MAX_TIME.as_secs()
            ),
            ProbeResult::Admitted | ProbeResult::Failed => format!(
                "the Retry-After probe failed (status {}, or no answer) for {keys}",
                first.status
            ),
        });
    }
    out
}
