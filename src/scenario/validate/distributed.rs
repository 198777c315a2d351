//! `[distributed]`: how many load agents split each arm's schedule, the
//! Redis they coordinate through, how long to wait for them, and how far
//! their clocks may be off before nothing is judged.

use super::source::{Result, Source};
use crate::load::schedule::Shape;
use crate::scenario::raw::RawDistributed;
use crate::scenario::spec::{
    Distributed, DEFAULT_AGENTS_WAIT, DEFAULT_MAX_CLOCK_UNCERTAINTY, MAX_AGENTS,
};
use toml::Spanned;

pub(super) fn distributed(
    src: &Source,
    raw: &Spanned<RawDistributed>,
    shape: &Shape,
) -> Result<Distributed> {
    let d = raw.get_ref();
    if matches!(shape, Shape::Closed { .. }) {
        // A closed loop's next request waits on the last answer of the
        // same worker: there is no schedule to split into segments.
        return Err(src.at(
            raw,
            "[distributed] splits an open-loop schedule; a closed loop (concurrency) has none",
        ));
    }
    let agents = match &d.agents {
        Some(n) => src.count(n, "agents", 1, MAX_AGENTS as i64)? as usize,
        None => return Err(src.at(raw, "[distributed] needs agents, e.g. agents = 3")),
    };
    let coordinator = match &d.coordinator {
        Some(u) => Some(coordinator(u.get_ref()).map_err(|e| src.at(u, e.to_string()))?),
        None => None,
    };
    let wait = match &d.wait {
        Some(w) => src.duration(w)?,
        None => DEFAULT_AGENTS_WAIT,
    };
    let max_clock_uncertainty = match &d.max_clock_uncertainty {
        Some(m) => src.duration(m)?,
        None => DEFAULT_MAX_CLOCK_UNCERTAINTY,
    };
    Ok(Distributed {
        agents,
        coordinator,
        wait,
        max_clock_uncertainty,
    })
}

/// What is wrong with a coordinator's URL; `shown` is the URL with its
/// password hidden.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CoordinatorError {
    #[error("coordinator {shown:?}: expected a url like \"redis://127.0.0.1:6379\"")]
    NotRedisScheme { shown: String },
    #[error("coordinator {shown:?}: not a Redis URL")]
    NotRedisUrl { shown: String },
}

/// A coordinator's URL, or what is wrong with it (its password hidden).
pub(crate) fn coordinator(url: &str) -> std::result::Result<String, CoordinatorError> {
    let shown = reference_api::redis_url::redact(url);
    if !(url.starts_with("redis://") || url.starts_with("rediss://")) {
        return Err(CoordinatorError::NotRedisScheme { shown });
    }
    redis::Client::open(url)
        .map(|_| url.to_string())
        .map_err(|_| CoordinatorError::NotRedisUrl { shown })
}
