//! An `[[arms]]` entry against someone else's limiter: none of the
//! reference API's keys, only its URLs, fan-out, policy and expectations.

use super::defaults::{arm_policy, ArmDefaults};
use super::schedule::{arm_key_distribution, arm_keys, arm_schedule};
use crate::scenario::raw::RawArm;
use crate::scenario::spec::{Arm, Mode};
use crate::scenario::validate::expect;
use crate::scenario::validate::load;
use crate::scenario::validate::source::{Result, Source};
use crate::scenario::validate::target;
use reference_api::config::{ClockSource, HeaderStyle, OnError};
use std::time::Duration;

/// An arm against someone else's limiter: its URLs (or the target's), the
/// load's fan-out across them, the policy it is judged by, expectations.
pub(super) fn external_arm(
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
                 name, urls, fanout, keep_alive, its own load (schedule, rate, burst, \
                 burst_spread, keys), policy and expect"
            ),
        ));
    }
    let urls = match &a.urls {
        Some(list) => target::urls(src, list, target.path.as_deref(), target.allow_remote)?,
        None => target.urls.clone(),
    };
    let (policy, preset, timing) = arm_policy(src, a, defaults)?;
    let schedule = arm_schedule(src, a, &policy)?;
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
        expect: expect::arm_expect(src, a, Mode::External, defaults.metrics)?,
        key_from: None,
        lossy_metrics: false,
        otlp: None,
        schedule,
        keys: arm_keys(src, a, defaults)?,
        key_distribution: arm_key_distribution(src, a)?,
        keep_alive: keep_alive(src, a, target)?,
        urls,
    })
}

/// The arm's own `keep_alive`: `false` (a connection per request) only
/// over HTTP/1.1, as `[target]`'s; `true` keeps connections in an arm of
/// a target that opens one per request (an arm too fast for that).
fn keep_alive(
    src: &Source,
    a: &RawArm,
    target: &crate::scenario::spec::ExternalTarget,
) -> Result<Option<bool>> {
    match &a.keep_alive {
        Some(k) if !k.get_ref() && target.template.http != crate::load::request::Http::H1 => {
            Err(src.at(
                k,
                "keep_alive = false opens a connection per request over HTTP/1.1; HTTP/2 \
                 shares one by design: give [target] http = \"1.1\"",
            ))
        }
        Some(k) => Ok(Some(*k.get_ref())),
        None => Ok(None),
    }
}
