//! Raw scenario → engine types. Each check points at the offending value.

use super::raw::{RawArm, RawExpect, RawLoad, RawPolicy, RawRedis, RawScenario};
use super::units::{self, micros};
use super::RedisSpec;
use super::{
    Arm, Bound, Expectation, Fanout, Figure, KeyDistribution, LoadSpec, Mode, Scenario,
    ScenarioError,
};
use crate::load::schedule::{Shape, Stage};
use reference_api::config::{ClockSource, OnError, DEFAULT_KEY_HEADER};
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

pub(super) fn scenario(file: &str, text: &str) -> Result<Scenario> {
    let src = Source { file, text };
    let raw: RawScenario = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().replace('\n', " ");
        src.error(e.span(), message)
    })?;

    let name = identifier(&src, &raw.name, "scenario name")?;
    let duration = src.duration(&raw.duration)?;
    let seed = match &raw.seed {
        Some(s) => src.count(s, "seed", 0, i64::MAX)?,
        None => 1,
    };
    let policy = policy(&src, raw.policy.span(), raw.policy.get_ref())?;
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
    let (mut load, default_fanout) = load(&src, &raw.load)?;
    if let Shape::Bursts { window, .. } = &mut load.shape {
        *window = Duration::from_micros(crate::verify::window(&policy).1.max(1) as u64);
    }
    let skew = match &cluster.clock_skew {
        Some(list) => skews(&src, list)?,
        None => Vec::new(),
    };
    let redis = redis(&src, raw.redis.unwrap_or_default())?;
    let defaults = ArmDefaults {
        replicas,
        fanout: default_fanout,
        key_header: &key_header,
        skew: &skew,
        policy: &policy,
        raw_policy: &raw.policy,
    };

    if raw.arms.get_ref().is_empty() {
        return Err(src.at(&raw.arms, "a scenario needs at least one [[arms]]"));
    }
    let mut seen = HashSet::new();
    let mut arms = Vec::new();
    for arm_raw in raw.arms.get_ref() {
        let arm = arm(&src, arm_raw.get_ref(), &defaults)?;
        if !seen.insert(arm.name.clone()) {
            return Err(src.at(
                &arm_raw.get_ref().name,
                format!("arm {:?} is defined twice", arm.name),
            ));
        }
        arms.push(arm);
    }
    Ok(Scenario {
        name,
        duration,
        seed,
        policy,
        load,
        redis,
        arms,
    })
}

struct ArmDefaults<'a> {
    replicas: usize,
    fanout: Fanout,
    key_header: &'a str,
    skew: &'a [i64],
    policy: &'a Policy,
    raw_policy: &'a Spanned<RawPolicy>,
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

/// An arm's policy: the scenario's, replaced (the arm names an algorithm)
/// or with the arm's fields overriding.
fn arm_policy(
    src: &Source,
    scenario: &Spanned<RawPolicy>,
    arm: &Spanned<RawPolicy>,
) -> Result<Policy> {
    let a = arm.get_ref();
    if a.algorithm.is_some() {
        return policy(src, arm.span(), a);
    }
    let mut merged = scenario.get_ref().clone();
    macro_rules! take {
        ($($field:ident),*) => { $( if a.$field.is_some() { merged.$field = a.$field.clone(); } )* };
    }
    take!(limit, window, segments, capacity, refill, rate, burst);
    policy(src, arm.span(), &merged)
}

fn policy(src: &Source, table: Range<usize>, p: &RawPolicy) -> Result<Policy> {
    let Some(algorithm_value) = &p.algorithm else {
        return Err(src.error(Some(table), "[policy] needs \"algorithm\""));
    };
    let algorithm = algorithm_value.get_ref().as_str();
    let params: &[&str] = match algorithm {
        "sliding_log" | "fixed_window" | "sliding_counter" => &["limit", "window"],
        "sliding_window" => &["limit", "window", "segments"],
        "token_bucket" => &["capacity", "refill"],
        "gcra" => &["rate", "burst"],
        other => {
            return Err(src.at(
                algorithm_value,
                format!(
                    "unknown algorithm {other:?}, expected one of sliding_log, sliding_window, \
                     fixed_window, token_bucket, gcra, sliding_counter"
                ),
            ))
        }
    };
    let given: [(&str, Option<Range<usize>>); 7] = [
        ("limit", p.limit.as_ref().map(|v| v.span())),
        ("window", p.window.as_ref().map(|v| v.span())),
        ("segments", p.segments.as_ref().map(|v| v.span())),
        ("capacity", p.capacity.as_ref().map(|v| v.span())),
        ("refill", p.refill.as_ref().map(|v| v.span())),
        ("rate", p.rate.as_ref().map(|v| v.span())),
        ("burst", p.burst.as_ref().map(|v| v.span())),
    ];
    for (key, span) in &given {
        if span.is_some() && !params.contains(key) {
            return Err(src.error(
                span.clone(),
                format!(
                    "{key:?} is not a parameter of {algorithm}, expected {}",
                    params.join(", ")
                ),
            ));
        }
    }
    let need = |key: &str| {
        src.error(
            Some(table.clone()),
            format!(
                "{algorithm} needs {key:?} (its parameters: {})",
                params.join(", ")
            ),
        )
    };
    let limit = || -> Result<u64> {
        src.count(
            p.limit.as_ref().ok_or_else(|| need("limit"))?,
            "limit",
            1,
            u32::MAX as i64,
        )
    };
    let window = || -> Result<u64> {
        Ok(micros(src.duration(
            p.window.as_ref().ok_or_else(|| need("window"))?,
        )?))
    };
    Ok(match algorithm {
        "sliding_log" => Policy::SlidingLog {
            limit: limit()?,
            window_us: window()?,
        },
        "fixed_window" => Policy::FixedWindow {
            limit: limit()?,
            window_us: window()?,
        },
        "sliding_counter" => Policy::SlidingCounter {
            limit: limit()?,
            window_us: window()?,
        },
        "sliding_window" => {
            let (limit, window_us) = (limit()?, window()?);
            let seg = p.segments.as_ref().ok_or_else(|| need("segments"))?;
            let segments = src.count(seg, "segments", 1, 10_000)?;
            if window_us % segments != 0 {
                return Err(src.at(
                    seg,
                    format!(
                        "the window must split into {segments} equal whole-microsecond segments"
                    ),
                ));
            }
            Policy::SlidingWindow {
                limit,
                window_us,
                segments,
            }
        }
        "token_bucket" => Policy::TokenBucket {
            capacity: src.count(
                p.capacity.as_ref().ok_or_else(|| need("capacity"))?,
                "capacity",
                1,
                u32::MAX as i64,
            )?,
            refill: src.rate(p.refill.as_ref().ok_or_else(|| need("refill"))?)?,
        },
        _ => Policy::Gcra {
            rate: src.rate(p.rate.as_ref().ok_or_else(|| need("rate"))?)?,
            burst: src.count(
                p.burst.as_ref().ok_or_else(|| need("burst"))?,
                "burst",
                1,
                u32::MAX as i64,
            )?,
        },
    })
}

fn fanout(src: &Source, value: &Spanned<String>) -> Result<Fanout> {
    match value.get_ref().as_str() {
        "round_robin" => Ok(Fanout::RoundRobin),
        "random" => Ok(Fanout::Random),
        "sticky" => Ok(Fanout::Sticky),
        "single" => Ok(Fanout::Single),
        other => Err(src.at(
            value,
            format!("unknown fanout {other:?}, expected round_robin, random, sticky or single"),
        )),
    }
}

fn rate_value(src: &Source, v: &Spanned<f64>, what: &str, min_exclusive: bool) -> Result<f64> {
    let r = *v.get_ref();
    let low_ok = if min_exclusive { r > 0.0 } else { r >= 0.0 };
    if !(low_ok && r <= MAX_RATE) {
        let low = if min_exclusive {
            "above 0"
        } else {
            "at least 0"
        };
        return Err(src.at(
            v,
            format!("{what} must be {low} and at most {MAX_RATE} requests/s, got {r}"),
        ));
    }
    Ok(r)
}

/// The schedule's shape; a Bursts window is filled in per arm (its policy's).
fn shape(src: &Source, spanned: &Spanned<RawLoad>) -> Result<Shape> {
    let l = spanned.get_ref();
    let kind = l
        .schedule
        .as_ref()
        .map_or("constant", |k| k.get_ref().as_str());
    let need_rate = || -> Result<f64> {
        let r = l.rate.as_ref().ok_or_else(|| {
            src.error(
                Some(spanned.span()),
                format!("[load] needs \"rate\" (requests/s) for the {kind} schedule"),
            )
        })?;
        rate_value(src, r, "rate", true)
    };
    let not_here = |present: bool, key: &str, span: Option<Range<usize>>| -> Result<()> {
        if present {
            return Err(src.error(
                span,
                format!("{key:?} does not apply to the {kind} schedule"),
            ));
        }
        Ok(())
    };
    if kind != "stages" {
        not_here(
            l.stages.is_some(),
            "stages",
            l.stages.as_ref().map(|v| v.span()),
        )?;
    }
    if kind != "closed" {
        not_here(
            l.concurrency.is_some(),
            "concurrency",
            l.concurrency.as_ref().map(|v| v.span()),
        )?;
        not_here(
            l.think_time.is_some(),
            "think_time",
            l.think_time.as_ref().map(|v| v.span()),
        )?;
    }
    if kind != "bursts" {
        not_here(
            l.burst.is_some(),
            "burst",
            l.burst.as_ref().map(|v| v.span()),
        )?;
        not_here(
            l.burst_spread.is_some(),
            "burst_spread",
            l.burst_spread.as_ref().map(|v| v.span()),
        )?;
    }
    Ok(match kind {
        "constant" => Shape::Constant { rate: need_rate()? },
        "poisson" => Shape::Poisson { rate: need_rate()? },
        "stages" => {
            let from = match &l.rate {
                Some(r) => rate_value(src, r, "rate", false)?,
                None => 0.0,
            };
            let list = l.stages.as_ref().ok_or_else(|| {
                src.error(
                    Some(spanned.span()),
                    "the stages schedule needs [[load.stages]] with target and duration",
                )
            })?;
            if list.get_ref().is_empty() {
                return Err(src.at(list, "the stages schedule needs at least one stage"));
            }
            let stages = list
                .get_ref()
                .iter()
                .map(|st| {
                    let st = st.get_ref();
                    Ok(Stage {
                        target: rate_value(src, &st.target, "target", false)?,
                        over: src.duration(&st.duration)?,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Shape::Stages { from, stages }
        }
        "bursts" => {
            not_here(l.rate.is_some(), "rate", l.rate.as_ref().map(|v| v.span()))?;
            let per_edge = match &l.burst {
                Some(b) => src.count(b, "burst", 1, 1_000_000)? as u32,
                None => {
                    return Err(src.error(
                        Some(spanned.span()),
                        "the bursts schedule needs \"burst\" (requests per window edge)",
                    ))
                }
            };
            let spread = match &l.burst_spread {
                Some(d) => src.duration(d)?,
                None => Duration::from_millis(20),
            };
            Shape::Bursts {
                per_edge,
                spread,
                window: Duration::ZERO,
            }
        }
        "closed" => {
            not_here(l.rate.is_some(), "rate", l.rate.as_ref().map(|v| v.span()))?;
            let concurrency = match &l.concurrency {
                Some(c) => src.count(c, "concurrency", 1, 100_000)? as u32,
                None => {
                    return Err(src.error(
                        Some(spanned.span()),
                        "the closed schedule needs \"concurrency\" (workers)",
                    ))
                }
            };
            let think = match &l.think_time {
                Some(t) => {
                    let us = units::signed_micros(t.get_ref()).map_err(|e| src.at(t, e))?;
                    if us < 0 {
                        return Err(src.at(t, "think_time must not be negative"));
                    }
                    Duration::from_micros(us as u64)
                }
                None => Duration::ZERO,
            };
            Shape::Closed { concurrency, think }
        }
        other => {
            let at = l.schedule.as_ref().map(|v| v.span());
            return Err(src.error(
                at,
                format!("unknown schedule {other:?}, expected constant, poisson, stages, bursts or closed"),
            ));
        }
    })
}

fn key_distribution(src: &Source, l: &RawLoad) -> Result<KeyDistribution> {
    let kind = l
        .key_distribution
        .as_ref()
        .map_or("uniform", |k| k.get_ref().as_str());
    let stray = |present: &Option<Spanned<f64>>, key: &str| -> Result<()> {
        match present {
            Some(v) => Err(src.at(
                v,
                format!("{key:?} does not apply to key_distribution = {kind:?}"),
            )),
            None => Ok(()),
        }
    };
    Ok(match kind {
        "uniform" => {
            stray(&l.zipf_s, "zipf_s")?;
            stray(&l.hot_share, "hot_share")?;
            KeyDistribution::Uniform
        }
        "zipf" => {
            stray(&l.hot_share, "hot_share")?;
            let s = match &l.zipf_s {
                Some(v) if *v.get_ref() > 0.0 && *v.get_ref() <= 10.0 => *v.get_ref(),
                Some(v) => {
                    return Err(src.at(
                        v,
                        format!("zipf_s must be above 0 and at most 10, got {}", v.get_ref()),
                    ))
                }
                None => 1.0,
            };
            KeyDistribution::Zipf { s }
        }
        "hot" => {
            stray(&l.zipf_s, "zipf_s")?;
            let share = match &l.hot_share {
                Some(v) if (0.0..=1.0).contains(v.get_ref()) => *v.get_ref(),
                Some(v) => {
                    return Err(src.at(
                        v,
                        format!("hot_share must be between 0 and 1, got {}", v.get_ref()),
                    ))
                }
                None => 0.5,
            };
            KeyDistribution::Hot { share }
        }
        other => {
            let at = l.key_distribution.as_ref().map(|v| v.span());
            return Err(src.error(
                at,
                format!("unknown key_distribution {other:?}, expected uniform, zipf or hot"),
            ));
        }
    })
}

fn load(src: &Source, spanned: &Spanned<RawLoad>) -> Result<(LoadSpec, Fanout)> {
    let l = spanned.get_ref();
    let shape = shape(src, spanned)?;
    let keys = match &l.keys {
        Some(k) => src.count(k, "keys", 1, 10_000_000)? as u32,
        None => 10,
    };
    let timeout = match &l.timeout {
        Some(t) => src.duration(t)?,
        None => Duration::from_secs(2),
    };
    let max_in_flight = match &l.max_in_flight {
        Some(m) => src.count(m, "max_in_flight", 1, 1_000_000)? as usize,
        None => 10_000,
    };
    let fanout = match &l.fanout {
        Some(f) => fanout(src, f)?,
        None => Fanout::RoundRobin,
    };
    Ok((
        LoadSpec {
            shape,
            keys,
            key_distribution: key_distribution(src, l)?,
            timeout,
            max_in_flight,
        },
        fanout,
    ))
}

fn arm(src: &Source, a: &RawArm, defaults: &ArmDefaults) -> Result<Arm> {
    let name = identifier(src, &a.name, "arm name")?;
    let mode = match a.mode.get_ref().as_str() {
        "local" => Mode::Local,
        "redis_naive" => Mode::RedisNaive,
        "redis_lua" => Mode::RedisLua,
        other => {
            return Err(src.at(
                &a.mode,
                format!("unknown mode {other:?}, expected local, redis_naive or redis_lua"),
            ))
        }
    };
    let policy = match &a.policy {
        Some(p) => arm_policy(src, defaults.raw_policy, p)?,
        None => defaults.policy.clone(),
    };
    if mode == Mode::RedisNaive
        && !matches!(
            policy,
            Policy::SlidingLog { .. } | Policy::FixedWindow { .. } | Policy::TokenBucket { .. }
        )
    {
        return Err(src.at(
            &a.mode,
            format!(
                "redis_naive implements sliding_log, fixed_window and token_bucket, not {}",
                policy.algorithm()
            ),
        ));
    }
    let replicas = match &a.replicas {
        Some(r) => src.count(r, "replicas", 1, MAX_REPLICAS)? as usize,
        None => defaults.replicas,
    };
    let fanout = match &a.fanout {
        Some(f) => fanout(src, f)?,
        None => defaults.fanout,
    };
    let clock = match &a.clock {
        None => ClockSource::Replica,
        Some(c) => match c.get_ref().as_str() {
            "replica" => ClockSource::Replica,
            "redis" if mode.uses_redis() => ClockSource::Redis,
            "redis" => {
                return Err(src.at(c, "clock = \"redis\" needs mode redis_naive or redis_lua"))
            }
            other => {
                return Err(src.at(
                    c,
                    format!("unknown clock {other:?}, expected replica or redis"),
                ))
            }
        },
    };
    let clock_skew_us = match &a.clock_skew {
        Some(list) => skews(src, list)?,
        None => defaults.skew.to_vec(),
    };
    let on_redis_error = match &a.on_redis_error {
        None => OnError::FailOpen,
        Some(e) => match e.get_ref().as_str() {
            "fail_open" => OnError::FailOpen,
            "fail_closed" => OnError::FailClosed,
            other => {
                return Err(src.at(
                    e,
                    format!("unknown on_redis_error {other:?}, expected fail_open or fail_closed"),
                ))
            }
        },
    };
    let expect = match &a.expect {
        Some(e) => expectations(src, e)?,
        None => Vec::new(),
    };
    Ok(Arm {
        name,
        mode,
        replicas,
        fanout,
        key_header: defaults.key_header.to_string(),
        clock,
        clock_skew_us,
        on_redis_error,
        policy,
        expect,
    })
}

fn expectations(src: &Source, e: &RawExpect) -> Result<Vec<Expectation>> {
    use Bound::{AtLeast, AtMost};
    use Figure::*;
    let ratios = [
        (
            "max_over_admission_ratio",
            &e.max_over_admission_ratio,
            OverAdmissionRatio,
            AtMost,
        ),
        (
            "min_over_admission_ratio",
            &e.min_over_admission_ratio,
            OverAdmissionRatio,
            AtLeast,
        ),
        (
            "max_false_reject_ratio",
            &e.max_false_reject_ratio,
            FalseRejectRatio,
            AtMost,
        ),
        ("max_p99_ms", &e.max_p99_ms, P99Ms, AtMost),
        ("max_error_ratio", &e.max_error_ratio, ErrorRatio, AtMost),
        (
            "max_peak_window_ratio",
            &e.max_peak_window_ratio,
            PeakWindowRatio,
            AtMost,
        ),
        (
            "min_peak_window_ratio",
            &e.min_peak_window_ratio,
            PeakWindowRatio,
            AtLeast,
        ),
    ];
    let counts = [
        (
            "max_definite_violations",
            &e.max_definite_violations,
            DefiniteViolations,
            AtMost,
        ),
        (
            "min_definite_violations",
            &e.min_definite_violations,
            DefiniteViolations,
            AtLeast,
        ),
        (
            "max_possible_violations",
            &e.max_possible_violations,
            PossibleViolations,
            AtMost,
        ),
    ];
    let mut out = Vec::new();
    for (key, value, figure, bound) in ratios {
        if let Some(v) = value {
            let x = *v.get_ref();
            if !(x.is_finite() && x >= 0.0) {
                return Err(src.at(v, format!("{key} must be a number of at least 0, got {x}")));
            }
            out.push(Expectation {
                key,
                figure,
                bound,
                value: x,
            });
        }
    }
    for (key, value, figure, bound) in counts {
        if let Some(v) = value {
            let x = src.count(v, key, 0, i64::MAX)?;
            out.push(Expectation {
                key,
                figure,
                bound,
                value: x as f64,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
