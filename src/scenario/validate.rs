//! Raw scenario → engine types. Each check points at the offending value.

use super::raw::{RawPolicy, RawRedis, RawScenario};
use super::units::{self, micros};
use super::RedisSpec;
use super::{Scenario, ScenarioError};
use crate::load::pick::Fanout;
use crate::load::schedule::Shape;
use reference_api::config::DEFAULT_KEY_HEADER;
use reference_api::{Policy, Rate};
use std::collections::HashSet;
use std::ops::Range;
use std::time::Duration;
use toml::Spanned;

const MAX_REPLICAS: i64 = 64;
const MAX_RATE: f64 = 1_000_000.0;
const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

struct Source<'a> {
    file: &'a str,
    text: &'a str,
}

type Result<T> = std::result::Result<T, ScenarioError>;

impl Source<'_> {
    fn error(&self, span: Option<Range<usize>>, message: impl Into<String>) -> ScenarioError {
        let (line, column) = match span {
            Some(span) => line_col(self.text, span.start),
            None => (0, 0),
        };
        ScenarioError {
            file: self.file.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    fn at<T>(&self, value: &Spanned<T>, message: impl Into<String>) -> ScenarioError {
        self.error(Some(value.span()), message)
    }

    fn duration(&self, value: &Spanned<String>) -> Result<Duration> {
        let d = units::duration(value.get_ref()).map_err(|e| self.at(value, e))?;
        if d > MAX_DURATION {
            return Err(self.at(value, format!("{:?}: at most 24h", value.get_ref())));
        }
        Ok(d)
    }

    fn count(&self, value: &Spanned<i64>, what: &str, min: i64, max: i64) -> Result<u64> {
        let v = *value.get_ref();
        if v < min || v > max {
            return Err(self.at(
                value,
                format!("{what} must be between {min} and {max}, got {v}"),
            ));
        }
        Ok(v as u64)
    }

    fn rate(&self, value: &Spanned<String>) -> Result<Rate> {
        let (count, per) = units::rate(value.get_ref()).map_err(|e| self.at(value, e))?;
        Ok(Rate {
            count,
            per_us: micros(per),
        })
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// `--policy` text: the keys of a `[policy]` table, comma-separated.
pub(super) fn inline_policy(text: &str) -> Result<(Policy, crate::scenario::PolicyTiming)> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Wrapped {
        policy: Spanned<RawPolicy>,
    }
    const OPEN: &str = "policy = { ";
    let wrapped = format!("{OPEN}{text} }}");
    let src = Source {
        file: "--policy",
        text: &wrapped,
    };
    // Report columns in the text as given, not in the wrapper.
    let shift = |mut e: ScenarioError| {
        e.line = 0;
        e.message = format!("{text:?}: {}", e.message);
        e
    };
    let raw: Wrapped = toml::from_str(&wrapped).map_err(|e| {
        let message = e.message().trim().replace('\n', " ");
        shift(src.error(e.span(), message))
    })?;
    if raw.policy.get_ref().algorithm.is_none() && raw.policy.get_ref().preset.is_none() {
        return Err(shift(src.error(
            None,
            "name the algorithm, e.g. algorithm = \"sliding_log\", limit = 10, window = \"1s\"",
        )));
    }
    let policy = policy::policy(&src, raw.policy.span(), raw.policy.get_ref()).map_err(shift)?;
    let timing = policy::timing(&src, raw.policy.get_ref()).map_err(shift)?;
    Ok((policy, timing))
}

pub(super) fn scenario(file: &str, text: &str) -> Result<Scenario> {
    let src = Source { file, text };
    let raw: RawScenario = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().replace('\n', " ");
        src.error(e.span(), message)
    })?;

    let name = identifier(&src, &raw.name, "scenario name")?;
    let external = match &raw.target {
        Some(t) => target::target(&src, t)?,
        None => None,
    };
    if external.is_some() {
        let own_stack = [
            raw.cluster.as_ref().map(|_| "[cluster]"),
            raw.redis.as_ref().map(|_| "[redis]"),
            raw.faults.as_ref().map(|_| "[[faults]]"),
        ];
        if let Some(table) = own_stack.into_iter().flatten().next() {
            let at = raw.target.as_ref().map(|t| t.span());
            return Err(src.error(
                at,
                format!(
                    "{table} configures the reference API rlbench runs; an external target \
                     takes its request settings in [target]"
                ),
            ));
        }
    }
    let duration = src.duration(&raw.duration)?;
    let seed = match &raw.seed {
        Some(s) => src.count(s, "seed", 0, i64::MAX)?,
        None => 1,
    };
    let policy = policy::policy(&src, raw.policy.span(), raw.policy.get_ref())?;
    let cluster = raw.cluster.unwrap_or_default();
    let replicas = match &cluster.replicas {
        Some(r) => src.count(r, "replicas", 1, MAX_REPLICAS)? as usize,
        None => 1,
    };
    let key_header = match &cluster.key_header {
        Some(h) => {
            let ok = axum::http::HeaderName::try_from(h.get_ref().as_str()).is_ok();
            if !ok {
                return Err(src.at(h, format!("{:?} is not a valid header name", h.get_ref())));
            }
            h.get_ref().clone()
        }
        None => DEFAULT_KEY_HEADER.to_string(),
    };
    let (mut load, default_fanout) = load::load(&src, &raw.load)?;
    // Without a key header the limiter sees every request as one key; so
    // must the verifier, or another key's admits would look like room.
    if external
        .as_ref()
        .is_some_and(|t| t.template.key_header.is_none())
    {
        if let Some(k) = raw
            .load
            .get_ref()
            .keys
            .as_ref()
            .filter(|k| *k.get_ref() > 1)
        {
            return Err(src.at(
                k,
                "an external target without key_header sends no key: every request is \
                 one key to the limiter, so give key_header or keys = 1",
            ));
        }
        load.keys = 1;
    }
    if let Shape::Bursts { window, .. } = &mut load.shape {
        *window = Duration::from_micros(crate::verify::window(&policy).1.max(1) as u64);
    }
    let skew = match &cluster.clock_skew {
        Some(list) => skews(&src, list)?,
        None => Vec::new(),
    };
    let redis = redis(&src, raw.redis.unwrap_or_default())?;
    let checks = checks(&src, raw.checks.unwrap_or_default())?;
    let defaults = ArmDefaults {
        replicas,
        fanout: default_fanout,
        key_header: &key_header,
        skew: &skew,
        policy: &policy,
        raw_policy: &raw.policy,
        external: external.as_ref(),
    };

    if raw.arms.get_ref().is_empty() {
        return Err(src.at(&raw.arms, "a scenario needs at least one [[arms]]"));
    }
    let mut seen = HashSet::new();
    let mut arms = Vec::new();
    for arm_raw in raw.arms.get_ref() {
        let arm = arm::arm(&src, arm_raw.get_ref(), &defaults)?;
        if !seen.insert(arm.name.clone()) {
            return Err(src.at(
                &arm_raw.get_ref().name,
                format!("arm {:?} is defined twice", arm.name),
            ));
        }
        arms.push(arm);
    }
    let faults = match &raw.faults {
        Some(list) => faults::faults(&src, list, duration, &arms, &redis)?,
        None => Vec::new(),
    };
    Ok(Scenario {
        name,
        duration,
        seed,
        policy,
        load,
        redis,
        arms,
        faults,
        external,
        checks,
    })
}

struct ArmDefaults<'a> {
    replicas: usize,
    fanout: Fanout,
    key_header: &'a str,
    skew: &'a [i64],
    policy: &'a Policy,
    raw_policy: &'a Spanned<RawPolicy>,
    external: Option<&'a super::ExternalTarget>,
}

fn skews(src: &Source, list: &Spanned<Vec<Spanned<String>>>) -> Result<Vec<i64>> {
    if list.get_ref().len() > MAX_REPLICAS as usize {
        return Err(src.at(
            list,
            format!("at most {MAX_REPLICAS} clock skews, one per replica"),
        ));
    }
    list.get_ref()
        .iter()
        .map(|s| {
            let us = units::signed_micros(s.get_ref()).map_err(|e| src.at(s, e))?;
            if us.unsigned_abs() > 3_600_000_000 {
                return Err(src.at(
                    s,
                    format!("{:?}: a skew of at most one hour either way", s.get_ref()),
                ));
            }
            Ok(us)
        })
        .collect()
}

fn redis(src: &Source, raw: RawRedis) -> Result<RedisSpec> {
    let url = match raw.url {
        Some(u) => {
            let v = u.get_ref();
            if !(v.starts_with("redis://") || v.starts_with("rediss://")) {
                return Err(src.at(
                    &u,
                    format!("{v:?}: expected a url like \"redis://127.0.0.1:6379\""),
                ));
            }
            Some(v.clone())
        }
        None => None,
    };
    let timeout = match &raw.timeout {
        Some(t) => src.duration(t)?,
        None => Duration::from_millis(50),
    };
    Ok(RedisSpec { url, timeout })
}

fn checks(src: &Source, raw: super::raw::RawChecks) -> Result<super::Checks> {
    let mut c = super::Checks::default();
    if let Some(n) = &raw.retry_after_probes {
        c.retry_after_probes = src.count(n, "retry_after_probes", 0, 100)? as u32;
    }
    if let Some(w) = &raw.retry_after_max_wait {
        c.retry_after_max_wait = src.duration(w)?;
    }
    if let Some(n) = &raw.witnesses {
        c.witnesses = src.count(n, "witnesses", 0, 1_000)? as usize;
    }
    if let Some(t) = &raw.max_server_time {
        c.max_server_time = Some(src.duration(t)?);
    }
    Ok(c)
}

/// Names become folder and file names: letters, digits, `-`, `_`, `.`.
fn identifier(src: &Source, value: &Spanned<String>, what: &str) -> Result<String> {
    let v = value.get_ref();
    let ok = !v.is_empty()
        && v.len() <= 64
        && !v.starts_with('.')
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if !ok {
        return Err(src.at(
            value,
            format!("{what} {v:?}: expected 1-64 letters, digits, '-', '_' or '.'"),
        ));
    }
    Ok(v.clone())
}

mod arm;
mod faults;
mod load;
mod params;
mod policy;
mod presets;
mod target;
#[cfg(test)]
mod tests;
