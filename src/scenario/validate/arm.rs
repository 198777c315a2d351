//! `[[arms]]`: one arm against the reference API (mode, replicas, clocks,
//! Redis behaviour) or against an external target (its URLs), each with
//! its policy and its `[arms.expect]` bounds.

mod defaults;
mod external;
mod schedule;

pub(super) use defaults::ArmDefaults;

use super::load;
use super::source::{identifier, skews, Result, Source, MAX_REPLICAS};
use crate::scenario::raw::RawArm;
use crate::scenario::spec::{Arm, Mode, PolicyTiming};
use defaults::arm_policy;
use reference_api::config::{ClockSource, HeaderStyle, OnError};
use reference_api::Policy;
use schedule::{arm_key_distribution, arm_keys, arm_schedule};
use std::time::Duration;
use toml::Spanned;

pub(super) fn read_arm(src: &Source, a: &RawArm, defaults: &ArmDefaults) -> Result<Arm> {
    let name = identifier(src, &a.name, "arm name")?;
    if let Some(external) = defaults.external {
        return external::external_arm(src, a, name, external, defaults);
    }
    let reading = ArmReading { src, a, defaults };
    let (mode_value, mode) = reading.mode(&name)?;
    let stated = arm_policy(src, a, defaults)?;
    reading.policy_fits(mode_value, &mode, &stated)?;
    let (policy, preset, timing) = stated;
    let replicas = match &a.replicas {
        Some(r) => src.count(r, "replicas", 1, MAX_REPLICAS)? as usize,
        None => defaults.replicas,
    };
    let fanout = match &a.fanout {
        Some(f) => load::fanout(src, f)?,
        None => defaults.fanout,
    };
    let (clock, clock_skew_us, clock_rate_ppm) = reading.clocks(&mode)?;
    let (on_redis_error, wait_replicas, deadline_aware) = reading.redis_behaviour(&mode)?;
    let (lease, lease_ttl) = lease(src, a, &mode, &policy)?;
    if let (Mode::RedisBatched, ClockSource::Redis, Some(c)) = (&mode, clock, &a.clock) {
        return Err(src.at(
            c,
            "redis_batched spends leases on the replica's clock: Redis' windows must be counted on it too (clock = \"replica\")",
        ));
    }
    let ratelimit_headers = ratelimit_headers(src, a)?;
    let expect = super::expect::arm_expect(src, a, mode.clone(), defaults.metrics)?;
    let key_from = super::spoof::key_from(src, a, defaults.spoofing, defaults.load_key)?;
    let schedule = arm_schedule(src, a, &policy)?;
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
        schedule,
        keys: arm_keys(src, a, defaults)?,
        key_distribution: arm_key_distribution(src, a)?,
        keep_alive: None,
    })
}

/// One reference API arm's keys, read against the scenario's text and
/// what the arm takes from the scenario.
struct ArmReading<'a> {
    src: &'a Source<'a>,
    a: &'a RawArm,
    defaults: &'a ArmDefaults<'a>,
}

impl<'a> ArmReading<'a> {
    /// `mode`, which a reference API arm needs (and `urls`, which it
    /// does not take).
    fn mode(&self, name: &str) -> Result<(&'a Spanned<String>, Mode)> {
        let (src, a) = (self.src, self.a);
        if let Some(u) = &a.urls {
            return Err(src.at(u, "urls belong to arms of a [target] kind = \"external\""));
        }
        if let Some(k) = &a.keep_alive {
            return Err(src.at(
                k,
                "keep_alive belongs to arms of a [target] kind = \"external\" (the reference \
                 API's connections are kept)",
            ));
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
        Ok((mode_value, mode))
    }

    /// The arm's policy as the mode can run it: the reference API
    /// refills continuously and counts admits only, and redis_naive has
    /// three algorithms.
    fn policy_fits(
        &self,
        mode_value: &Spanned<String>,
        mode: &Mode,
        (policy, preset, timing): &(Policy, Option<String>, PolicyTiming),
    ) -> Result<()> {
        let src = self.src;
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
        if *mode == Mode::RedisNaive
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
        Ok(())
    }

    /// `clock`, `clock_skew` and `clock_rate_ppm`: whose clock the replicas
    /// read, and how far off and how fast theirs run.
    fn clocks(&self, mode: &Mode) -> Result<(ClockSource, Vec<i64>, i64)> {
        let (src, a, defaults) = (self.src, self.a, self.defaults);
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
        Ok((clock, clock_skew_us, clock_rate_ppm))
    }

    /// `on_redis_error`, `wait_replicas` and `deadline_aware`: what a Redis
    /// mode does when Redis fails, lags or runs late.
    fn redis_behaviour(&self, mode: &Mode) -> Result<(OnError, u32, bool)> {
        let (src, a, defaults) = (self.src, self.a, self.defaults);
        let on_redis_error = match &a.on_redis_error {
            None => OnError::FailOpen,
            Some(e) => match e.get_ref().as_str() {
                "fail_open" => OnError::FailOpen,
                "fail_closed" => OnError::FailClosed,
                other => {
                    return Err(src.at(
                        e,
                        format!(
                            "unknown on_redis_error {other:?}, expected fail_open or fail_closed"
                        ),
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
            Some(d) if *d.get_ref() && *mode != Mode::RedisLua => {
                return Err(src.at(
                    d,
                    "deadline_aware needs mode redis_lua: the script checks the deadline",
                ))
            }
            Some(d) => *d.get_ref(),
        };
        Ok((on_redis_error, wait_replicas, deadline_aware))
    }
}

/// `ratelimit_headers`: the rate-limit headers the replicas send.
fn ratelimit_headers(src: &Source, a: &RawArm) -> Result<HeaderStyle> {
    Ok(match &a.ratelimit_headers {
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
    })
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
