//! `preset = "…"`: a limiter someone else wrote, stated in its own terms
//! (nginx's `limit_req`, ASP.NET Core's partitioned limiters, …) and
//! translated into the policy the verifier judges.

use super::params::{only, segmented};
use super::source::{Result, Source};
use crate::scenario::raw::RawPolicy;
use crate::scenario::units::micros;
use reference_api::Policy;
use std::ops::Range;
use toml::Spanned;

/// The presets: real limiters' burst conventions, as the GCRA they are.
/// All three schedule one admit per emission interval `1/rate`; they differ
/// in how many may come at once (the bucket's capacity):
///
/// - `nginx_limit_req` (`rate=Rr/s burst=B [nodelay]`): B+1. Without
///   `nodelay` the same requests are admitted, the excess ones answered late.
///   nginx keeps time in whole milliseconds (the verifier's 1 ms slack
///   covers it) and rounds refills down for `r/m` rates, so only `r/s`
///   rates are accepted.
/// - `redis_cell` (`CL.THROTTLE key max_burst count period`): max_burst+1.
/// - `governor` (`Quota::with_period(period/count).allow_burst(B)`): B,
///   default `count` (as `Quota::per_second(count)`).
pub(super) fn preset(
    src: &Source,
    table: Range<usize>,
    name: &Spanned<String>,
    p: &RawPolicy,
) -> Result<Policy> {
    const PRESETS: &str = "nginx_limit_req, redis_cell, governor or aspnetcore";
    if name.get_ref() == "aspnetcore" {
        return aspnetcore(src, table, p);
    }
    let allowed: &[&str] = match name.get_ref().as_str() {
        "nginx_limit_req" => &["rate", "burst", "nodelay"],
        "redis_cell" | "governor" => &["rate", "burst"],
        other => {
            return Err(src.at(
                name,
                format!("unknown preset {other:?}, expected {PRESETS}"),
            ))
        }
    };
    let preset = name.get_ref().as_str();
    only(src, p, allowed, &format!("preset {preset}"))?;
    let rate_value = p.rate.as_ref().ok_or_else(|| {
        src.error(
            Some(table.clone()),
            format!("preset {preset} needs \"rate\", e.g. rate = \"10r/s\""),
        )
    })?;
    let burst = |default: i64| -> Result<u64> {
        match &p.burst {
            Some(b) => src.count(b, "burst", 0, u32::MAX as i64 - 1),
            None => Ok(default as u64),
        }
    };
    Ok(match preset {
        "nginx_limit_req" => {
            let text = rate_value.get_ref().trim();
            let per_second = text
                .strip_suffix("r/s")
                .and_then(|n| n.trim().parse::<u64>().ok())
                .filter(|&n| n >= 1);
            let Some(count) = per_second else {
                return Err(src.at(
                    rate_value,
                    format!(
                        "{text:?}: expected nginx's rate in requests per second, like \"10r/s\" \
                         (for r/m nginx rounds its refills down; state the policy with \
                         algorithm = \"gcra\" instead)"
                    ),
                ));
            };
            Policy::Gcra {
                rate: reference_api::Rate {
                    count,
                    per_us: 1_000_000,
                },
                burst: burst(0)? + 1,
            }
        }
        "redis_cell" => Policy::Gcra {
            rate: src.rate(rate_value)?,
            burst: burst(0)? + 1,
        },
        _ => {
            let rate = src.rate(rate_value)?;
            let b = burst(rate.count as i64)?;
            if b == 0 {
                let at = p.burst.as_ref().map(|v| v.span());
                return Err(src.error(at, "governor's burst must be at least 1"));
            }
            Policy::Gcra { rate, burst: b }
        }
    })
}

/// `preset = "aspnetcore"`: ASP.NET Core's partitioned limiters in their own
/// terms (`RateLimitPartition.Get…Limiter` with QueueLimit 0,
/// AutoReplenishment off: the framework's 100 ms heartbeat replenishes).
///
/// - `limiter = "fixed_window"`: `permit_limit` per `window`;
/// - `limiter = "sliding_window"`: `permit_limit` per `window` in
///   `segments_per_window` segments;
/// - `limiter = "token_bucket"`: `token_limit` tokens, `tokens_per_period`
///   per `replenishment_period` added at each heartbeat for the time since
///   the last — and, as released, banked while the bucket is full (up to
///   `token_limit` more at once: `PolicyTiming::banked_tokens`).
///
/// Each window, segment or refill comes on a heartbeat tick once a full
/// period has passed since the last one: up to `replenish_lateness`
/// (default 100 ms) late, and the lateness adds up.
fn aspnetcore(src: &Source, table: Range<usize>, p: &RawPolicy) -> Result<Policy> {
    let Some(limiter) = &p.limiter else {
        return Err(src.error(
            Some(table),
            "preset aspnetcore needs \"limiter\": fixed_window, sliding_window or token_bucket",
        ));
    };
    let kind = limiter.get_ref().as_str();
    let params: &[&str] = match kind {
        "fixed_window" => &["limiter", "permit_limit", "window"],
        "sliding_window" => &["limiter", "permit_limit", "window", "segments_per_window"],
        "token_bucket" => &[
            "limiter",
            "token_limit",
            "tokens_per_period",
            "replenishment_period",
        ],
        other => {
            return Err(src.at(
                limiter,
                format!(
                    "unknown ASP.NET Core limiter {other:?}, expected fixed_window, \
                     sliding_window or token_bucket"
                ),
            ))
        }
    };
    only(src, p, params, &format!("preset aspnetcore limiter {kind}"))?;
    let need = |key: &str| {
        src.error(
            Some(table.clone()),
            format!(
                "aspnetcore {kind} needs {key:?} ({})",
                params[1..].join(", ")
            ),
        )
    };
    let count = |v: &Option<Spanned<i64>>, key: &str| -> Result<u64> {
        src.count(
            v.as_ref().ok_or_else(|| need(key))?,
            key,
            1,
            u32::MAX as i64,
        )
    };
    let duration = |v: &Option<Spanned<String>>, key: &str| -> Result<u64> {
        let v = v.as_ref().ok_or_else(|| need(key))?;
        match micros(src.duration(v)?) {
            0 => Err(src.at(v, format!("{key} must be positive"))),
            us => Ok(us),
        }
    };
    Ok(match kind {
        "fixed_window" => Policy::FixedWindow {
            limit: count(&p.permit_limit, "permit_limit")?,
            window_us: duration(&p.window, "window")?,
        },
        "sliding_window" => {
            let limit = count(&p.permit_limit, "permit_limit")?;
            let window_us = duration(&p.window, "window")?;
            let seg = p
                .segments_per_window
                .as_ref()
                .ok_or_else(|| need("segments_per_window"))?;
            segmented(src, limit, window_us, seg, "segments_per_window")?
        }
        _ => Policy::TokenBucket {
            capacity: count(&p.token_limit, "token_limit")?,
            refill: reference_api::Rate {
                count: count(&p.tokens_per_period, "tokens_per_period")?,
                per_us: duration(&p.replenishment_period, "replenishment_period")?,
            },
        },
    })
}
