//! `[[arms]]`: one arm against the reference API (mode, replicas, clocks,
//! Redis behaviour) or against an external target (its URLs), each with
//! its policy and its `[arms.expect]` bounds.

use super::source::{identifier, skews, Result, Source, MAX_REPLICAS};
use super::{load, policy, target};
use crate::load::pick::Fanout;
use crate::scenario::raw::{RawArm, RawPolicy};
use crate::scenario::spec::{Arm, Mode, PolicyTiming};
use reference_api::config::{ClockSource, HeaderStyle, OnError};
use reference_api::Policy;
use std::time::Duration;
use toml::Spanned;

pub(super) fn arm(src: &Source, a: &RawArm, defaults: &ArmDefaults) -> Result<Arm> {
    let name = identifier(src, &a.name, "arm name")?;
    if let Some(external) = defaults.external {
        return external_arm(src, a, name, external, defaults);
    }
    if let Some(u) = &a.urls {
        return Err(src.at(u, "urls belong to arms of a [target] kind = \"external\""));
    }
    let Some(mode_value) = &a.mode else {
        return Err(src.at(
            &a.name,
            format!(
                "arm {name:?} needs \"mode\": {}",
                reference_api::config::mode_list()
            ),
        ));
    };
    let Some(mode) = Mode::named(mode_value.get_ref()) else {
        return Err(src.at(
            mode_value,
            format!(
                "unknown mode {:?}, expected {}",
                mode_value.get_ref(),
                reference_api::config::mode_list()
            ),
        ));
    };
    let (policy, preset, timing) = arm_policy(src, a, defaults)?;
    if timing.chunked_refill && preset.is_none() {
        return Err(src.at(
            mode_value,
            "refill_every describes a bucket that refills in whole chunks; the reference \
             API refills continuously: judge an external target",
        ));
    }
    if timing.count_rejected {
        return Err(src.at(
            mode_value,
            "count_rejected describes a limiter that counts rejected attempts (HAProxy's \
             stick tables); the reference API counts admits only: judge an external target",
        ));
    }
    if mode == Mode::RedisNaive
        && !matches!(
            policy,
            Policy::SlidingLog { .. } | Policy::FixedWindow { .. } | Policy::TokenBucket { .. }
        )
    {
        return Err(src.at(
            mode_value,
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
        Some(f) => load::fanout(src, f)?,
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
    let clock_rate_ppm = match &a.clock_rate_ppm {
        Some(r) => {
            let max = crate::scenario::spec::MAX_CLOCK_RATE_PPM;
            src.count(r, "clock_rate_ppm", -max, max)?;
            *r.get_ref()
        }
        None => 0,
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
    let wait_replicas = match &a.wait_replicas {
        None => 0,
        Some(w) if !mode.uses_redis() => {
            return Err(src.at(w, "wait_replicas needs mode redis_naive or redis_lua"))
        }
        Some(w) if defaults.topology != reference_api::config::Topology::Replicated => {
            return Err(src.at(
                w,
                "wait_replicas needs Redis replicas to wait for: [redis] topology = \"replicated\"",
            ))
        }
        Some(w) => src.count(w, "wait_replicas", 0, 1)? as u32,
    };
    let deadline_aware = match &a.deadline_aware {
        None => false,
        Some(d) if *d.get_ref() && mode != Mode::RedisLua => {
            return Err(src.at(
                d,
                "deadline_aware needs mode redis_lua: the script checks the deadline",
            ))
        }
        Some(d) => *d.get_ref(),
    };
    let (lease, lease_ttl) = lease(src, a, &mode, &policy)?;
    if let (Mode::RedisBatched, ClockSource::Redis, Some(c)) = (&mode, clock, &a.clock) {
        return Err(src.at(
            c,
            "redis_batched spends leases on the replica's clock: Redis' windows must be counted on it too (clock = \"replica\")",
        ));
    }
    let ratelimit_headers = match &a.ratelimit_headers {
        None => HeaderStyle::Ietf,
        Some(v) => match v.get_ref().as_str() {
            "ietf" => HeaderStyle::Ietf,
            "x_ratelimit" => HeaderStyle::XRateLimit,
            "both" => HeaderStyle::Both,
            other => {
                return Err(src.at(
                    v,
                    format!(
                        "unknown ratelimit_headers {other:?}, expected ietf, x_ratelimit or both"
                    ),
                ))
            }
        },
    };
    let expect = super::expect::arm_expect(src, a, mode.clone(), defaults.metrics)?;
    let key_from = super::spoof::key_from(src, a, defaults.spoofing, defaults.load_key)?;
    Ok(Arm {
        name,
        mode,
        replicas,
        fanout,
        key_header: defaults.key_header.to_string(),
        clock,
        clock_skew_us,
        clock_rate_ppm,
        on_redis_error,
        wait_replicas,
        deadline_aware,
        lease,
        lease_ttl,
        ratelimit_headers,
        policy,
        preset,
        timing,
        expect,
        key_from,
        lossy_metrics: a.lossy_metrics.as_ref().is_some_and(|v| *v.get_ref()),
        otlp: otlp(src, a)?,
        urls: Vec::new(),
    })
}

/// An arm against someone else's limiter: its URLs (or the target's), the
/// load's fan-out across them, the policy it is judged by, expectations.
fn external_arm(
    src: &Source,
    a: &RawArm,
    name: String,
    target: &crate::scenario::spec::ExternalTarget,
    defaults: &ArmDefaults,
) -> Result<Arm> {
    let ours = [
        a.mode
            .as_ref()
            .filter(|m| m.get_ref() != "external")
            .map(|m| (m.span(), "mode")),
        a.replicas.as_ref().map(|v| (v.span(), "replicas")),
        a.clock.as_ref().map(|v| (v.span(), "clock")),
        a.clock_skew.as_ref().map(|v| (v.span(), "clock_skew")),
        a.clock_rate_ppm
            .as_ref()
            .map(|v| (v.span(), "clock_rate_ppm")),
        a.on_redis_error
            .as_ref()
            .map(|v| (v.span(), "on_redis_error")),
        a.wait_replicas
            .as_ref()
            .map(|v| (v.span(), "wait_replicas")),
        a.deadline_aware
            .as_ref()
            .map(|v| (v.span(), "deadline_aware")),
        a.lease.as_ref().map(|v| (v.span(), "lease")),
        a.lease_ttl.as_ref().map(|v| (v.span(), "lease_ttl")),
        a.ratelimit_headers
            .as_ref()
            .map(|v| (v.span(), "ratelimit_headers")),
        a.key_from.as_ref().map(|v| (v.span(), "key_from")),
        a.lossy_metrics
            .as_ref()
            .map(|v| (v.span(), "lossy_metrics")),
        a.otlp.as_ref().map(|v| (v.span(), "otlp")),
    ];
    if let Some((span, key)) = ours.into_iter().flatten().next() {
        return Err(src.error(
            Some(span),
            format!(
                "{key} configures the reference API; an external target's arm takes \
                 name, urls, fanout, policy and expect"
            ),
        ));
    }
    let urls = match &a.urls {
        Some(list) => target::urls(src, list, target.path.as_deref(), target.allow_remote)?,
        None => target.urls.clone(),
    };
    let (policy, preset, timing) = arm_policy(src, a, defaults)?;
    let fanout = match &a.fanout {
        Some(f) => load::fanout(src, f)?,
        None => defaults.fanout,
    };
    Ok(Arm {
        name,
        mode: Mode::External,
        replicas: urls.len(),
        fanout,
        key_header: target
            .template
            .key_header
            .as_ref()
            .map(|h| h.as_str().to_string())
            .unwrap_or_default(),
        clock: ClockSource::Replica,
        clock_skew_us: Vec::new(),
        clock_rate_ppm: 0,
        on_redis_error: OnError::FailOpen,
        wait_replicas: 0,
        deadline_aware: false,
        lease: 1,
        lease_ttl: Duration::ZERO,
        ratelimit_headers: HeaderStyle::Ietf,
        policy,
        preset,
        timing,
        expect: super::expect::arm_expect(src, a, Mode::External, defaults.metrics)?,
        key_from: None,
        lossy_metrics: false,
        otlp: None,
        urls,
    })
}

/// The arm's policy (its own, or the scenario's) and the preset it was stated as.
fn arm_policy(
    src: &Source,
    a: &RawArm,
    defaults: &ArmDefaults,
) -> Result<(Policy, Option<String>, PolicyTiming)> {
    match &a.policy {
        Some(p) => policy::arm_policy(src, defaults.raw_policy, p),
        None => Ok((
            defaults.policy.clone(),
            policy::preset_label(defaults.raw_policy.get_ref()),
            policy::timing(src, defaults.raw_policy.get_ref())?,
        )),
    }
}

/// `lease` and `lease_ttl`: for `redis_batched` arms, which lease fixed
/// windows, a lease spent within one window's length at most.
fn lease(src: &Source, a: &RawArm, mode: &Mode, policy: &Policy) -> Result<(u64, Duration)> {
    if *mode != Mode::RedisBatched {
        if let Some(v) = &a.lease {
            return Err(src.at(v, "lease needs mode redis_batched"));
        }
        if let Some(v) = &a.lease_ttl {
            return Err(src.at(v, "lease_ttl needs mode redis_batched"));
        }
        return Ok((1, Duration::ZERO));
    }
    let Policy::FixedWindow { window_us, .. } = *policy else {
        let at = a.mode.as_ref().map(|m| m.span());
        return Err(src.error(
            at,
            format!(
                "redis_batched leases fixed_window admits, not {}",
                policy.algorithm()
            ),
        ));
    };
    let lease = match &a.lease {
        Some(v) => src.count(v, "lease", 1, 10_000)?,
        None => 1,
    };
    let ttl = match &a.lease_ttl {
        Some(v) => {
            let d = src.duration(v)?;
            if d > Duration::from_micros(window_us) {
                return Err(src.at(
                    v,
                    "lease_ttl of at most the policy's window: a lease spent in a later window still would break the bound",
                ));
            }
            d
        }
        None => Duration::ZERO,
    };
    Ok((lease, ttl))
}

/// `otlp = { endpoint = "http://HOST:PORT", interval = "10s" }`: where the
/// replicas send their metrics by OTLP/gRPC, and how often (100 ms to 1 h).
fn otlp(src: &Source, a: &RawArm) -> Result<Option<reference_api::config::Otlp>> {
    let Some(raw) = &a.otlp else {
        return Ok(None);
    };
    let raw = raw.get_ref();
    let endpoint = raw.endpoint.get_ref();
    let authority = endpoint
        .strip_prefix("http://")
        .map(|rest| rest.strip_suffix('/').unwrap_or(rest));
    let port = authority
        .filter(|a| !a.contains(['/', '?', '#', '@']) && !a.contains(char::is_whitespace))
        .and_then(|a| a.rsplit_once(':'))
        .filter(|(host, _)| !host.is_empty())
        .and_then(|(_, port)| port.parse::<u16>().ok())
        .filter(|p| *p > 0);
    if port.is_none() {
        return Err(src.at(
            &raw.endpoint,
            "otlp endpoint: expected http://HOST:PORT, a collector's OTLP/gRPC port (no TLS)",
        ));
    }
    let interval = match &raw.interval {
        Some(v) => {
            let d = src.duration(v)?;
            if !(Duration::from_millis(100)..=Duration::from_secs(3600)).contains(&d) {
                return Err(src.at(v, "otlp interval: from 100ms to 1h"));
            }
            d
        }
        None => Duration::from_secs(10),
    };
    Ok(Some(reference_api::config::Otlp {
        endpoint: endpoint.clone(),
        interval_ms: interval.as_millis() as u64,
    }))
}

/// What an arm takes from the scenario unless it says otherwise.
pub(super) struct ArmDefaults<'a> {
    pub(super) replicas: usize,
    pub(super) fanout: Fanout,
    pub(super) key_header: &'a str,
    pub(super) skew: &'a [i64],
    pub(super) policy: &'a Policy,
    pub(super) raw_policy: &'a Spanned<RawPolicy>,
    pub(super) external: Option<&'a crate::scenario::spec::ExternalTarget>,
    pub(super) topology: reference_api::config::Topology,
    /// `[load] principals` spoof their identities.
    pub(super) spoofing: bool,
    pub(super) load_key: &'a crate::scenario::spec::KeySpec,
    /// `[target] metrics` is given.
    pub(super) metrics: bool,
}
