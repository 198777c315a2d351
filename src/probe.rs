//! Retry-After probes: after an arm's load, for a few of its keys, send
//! requests until one is limited, wait exactly the Retry-After it
//! advertised, and send one more. A limiter that means its Retry-After
//! admits that request. Bounded: at most [`MAX_REQUESTS`] requests and
//! [`MAX_TIME`] per key to reach a limit, and no wait longer than the
//! scenario's `retry_after_max_wait`.

use crate::events::Outcome;
use crate::load::client::{Answer, Dedicated, Template};
use hyper::Uri;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Requests one probe may send to reach the limit.
pub const MAX_REQUESTS: u32 = 1_000;

/// How long one probe may try to reach the limit.
pub const MAX_TIME: Duration = Duration::from_secs(10);

/// Requests sent at once while trying to reach the limit.
const WAVE: u32 = 16;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
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
pub enum ProbeResult {
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

/// The probes' findings — what the limiter got wrong — one sentence per
/// kind of result (naming the keys). Missing Retry-After is left unsaid
/// when the answers had no rate-limit headers at all (that is a finding of
/// its own).
pub fn findings(probes: &[Probe], any_headers: bool) -> Vec<String> {
    let mut kinds = vec![ProbeResult::LimitedAgain, ProbeResult::Failed];
    if any_headers {
        kinds.insert(1, ProbeResult::NoRetryAfter);
    }
    grouped(probes, &kinds)
}

/// Why a probe could not be made, though nothing was wrong (a long
/// advertised wait, a limit never reached).
pub fn notes(probes: &[Probe]) -> Vec<String> {
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

/// One probe per key, all at once, each on its own connection to
/// `targets[i % len]`.
pub async fn run(
    targets: &[Uri],
    template: &Template,
    keys: &[String],
    timeout: Duration,
    max_wait: Duration,
) -> Vec<Probe> {
    let mut set = tokio::task::JoinSet::new();
    for (i, key) in keys.iter().enumerate() {
        let Some(target) = targets.get(i % targets.len().max(1)).cloned() else {
            break;
        };
        let (template, key) = (template.clone(), key.clone());
        set.spawn(async move { (i, one(target, &template, key, timeout, max_wait).await) });
    }
    let mut out: Vec<(usize, Probe)> = set.join_all().await;
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, p)| p).collect()
}

async fn one(
    target: Uri,
    template: &Template,
    key: String,
    timeout: Duration,
    max_wait: Duration,
) -> Probe {
    let probe = |retry_after_ms, result, status| Probe {
        key: key.clone(),
        retry_after_ms,
        result,
        status,
    };
    let limited = match until_limited(&target, template, &key, timeout).await {
        Ok(Some(answer)) => answer,
        Ok(None) => return probe(None, ProbeResult::NeverLimited, 0),
        Err(status) => return probe(None, ProbeResult::Failed, status),
    };
    let Some(wait_ms) = limited.advertised.and_then(|a| a.retry_after_ms) else {
        return probe(None, ProbeResult::NoRetryAfter, limited.status);
    };
    let wait = Duration::from_millis(wait_ms);
    if wait > max_wait {
        return probe(Some(wait_ms), ProbeResult::WaitTooLong, limited.status);
    }
    tokio::time::sleep(wait).await;
    let a = Dedicated::new(target).send(template, &key, timeout).await;
    let result = match a.outcome {
        Outcome::Admitted => ProbeResult::Admitted,
        Outcome::Rejected => ProbeResult::LimitedAgain,
        Outcome::Error | Outcome::Timeout => ProbeResult::Failed,
    };
    probe(Some(wait_ms), result, a.status)
}

/// Waves of [`WAVE`] requests at once (a limiter that delays rather than
/// rejects is only tripped by concurrency) until one is limited: its answer,
/// `None` after [`MAX_REQUESTS`] or [`MAX_TIME`], or the status of a
/// failure.
async fn until_limited(
    target: &Uri,
    template: &Template,
    key: &str,
    timeout: Duration,
) -> Result<Option<Answer>, u16> {
    let deadline = tokio::time::Instant::now() + MAX_TIME;
    let mut sent = 0;
    while sent < MAX_REQUESTS && tokio::time::Instant::now() < deadline {
        let mut wave = tokio::task::JoinSet::new();
        for _ in 0..WAVE.min(MAX_REQUESTS - sent) {
            let (target, template, key) = (target.clone(), template.clone(), key.to_string());
            wave.spawn(async move { Dedicated::new(target).send(&template, &key, timeout).await });
            sent += 1;
        }
        let answers = wave.join_all().await;
        if let Some(limited) = answers.iter().find(|a| a.outcome == Outcome::Rejected) {
            return Ok(Some(*limited));
        }
        if let Some(failed) = answers.iter().find(|a| a.outcome != Outcome::Admitted) {
            return Err(failed.status);
        }
    }
    Ok(None)
}
