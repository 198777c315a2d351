//! Retry-After probes: after an arm's load, for a few of its keys, send
//! requests until one is limited, wait exactly the Retry-After it
//! advertised, and send one more. A limiter that means its Retry-After
//! admits that request. Bounded: at most [`MAX_REQUESTS`] requests and
//! [`MAX_TIME`] per key to reach a limit, and no wait longer than the
//! scenario's `retry_after_max_wait`.

use crate::events::Outcome;
use crate::load::connection::Dedicated;
use crate::load::outcome::Answer;
use crate::load::request::Template;
use crate::store::probes::{Probe, ProbeResult, MAX_REQUESTS, MAX_TIME};
use hyper::Uri;
use std::time::Duration;

/// Requests sent at once while trying to reach the limit.
const WAVE: u32 = 16;

/// One probe per key, all at once, each on its own connection to
/// `targets[i % len]`.
pub(crate) async fn run(
    targets: &[Uri],
    tls: Option<&crate::load::tls::Client>,
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
        let (template, key, tls) = (template.clone(), key.clone(), tls.cloned());
        set.spawn(async move {
            let target = Target { uri: target, tls };
            (i, one(target, &template, key, timeout, max_wait).await)
        });
    }
    let mut out: Vec<(usize, Probe)> = set.join_all().await;
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, p)| p).collect()
}

/// Where a probe goes.
struct Target {
    uri: Uri,
    tls: Option<crate::load::tls::Client>,
}

impl Target {
    fn connection(&self, template: &Template, key: &str) -> Dedicated {
        let bind = template.sources.as_ref().and_then(|s| s.get(key).copied());
        Dedicated::new(self.uri.clone(), self.tls.as_ref()).from(bind)
    }
}

async fn one(
    target: Target,
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
    let a = target
        .connection(template, &key)
        .send(template, &key, timeout)
        .await;
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
    target: &Target,
    template: &Template,
    key: &str,
    timeout: Duration,
) -> Result<Option<Answer>, u16> {
    let deadline = tokio::time::Instant::now() + MAX_TIME;
    let mut sent = 0;
    while sent < MAX_REQUESTS && tokio::time::Instant::now() < deadline {
        let mut wave = tokio::task::JoinSet::new();
        for _ in 0..WAVE.min(MAX_REQUESTS - sent) {
            let (mut connection, template, key) = (
                target.connection(template, key),
                template.clone(),
                key.to_string(),
            );
            wave.spawn(async move { connection.send(&template, &key, timeout).await });
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
