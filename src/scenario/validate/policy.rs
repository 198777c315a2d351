//! The `[policy]` table (and an arm's `[arms.policy]`): algorithm and
//! parameters, each checked against what the algorithm takes.

use super::{Result, Source};
use crate::scenario::raw::RawPolicy;
use crate::scenario::units::micros;
use crate::scenario::PolicyTiming;
use reference_api::Policy;
use std::ops::Range;
use toml::Spanned;

/// An arm's policy: the scenario's, replaced (the arm names an algorithm)
/// or with the arm's fields overriding.
pub(super) fn arm_policy(
    src: &Source,
    scenario: &Spanned<RawPolicy>,
    arm: &Spanned<RawPolicy>,
) -> Result<(Policy, Option<String>, PolicyTiming)> {
    let a = arm.get_ref();
    if a.algorithm.is_some() || a.preset.is_some() {
        return Ok((
            policy(src, arm.span(), a)?,
            preset_label(a),
            timing(src, a)?,
        ));
    }
    let mut merged = scenario.get_ref().clone();
    macro_rules! take {
        ($($field:ident),*) => { $( if a.$field.is_some() { merged.$field = a.$field.clone(); } )* };
    }
    take!(
        limit,
        window,
        segments,
        capacity,
        refill,
        rate,
        burst,
        nodelay,
        replenish_lateness,
        limiter,
        permit_limit,
        segments_per_window,
        token_limit,
        tokens_per_period,
        replenishment_period
    );
    Ok((
        policy(src, arm.span(), &merged)?,
        preset_label(&merged),
        timing(src, &merged)?,
    ))
}

/// ASP.NET Core replenishes partitioned limiters from a 100 ms heartbeat.
const ASPNETCORE_LATENESS_US: i64 = 100_000;

/// How late the policy's windows or refills may run, and whether a bucket
/// refills in chunks: `replenish_lateness` (default 0; 100 ms for
/// `aspnetcore`), chunked for `aspnetcore`'s token bucket.
pub(super) fn timing(src: &Source, p: &RawPolicy) -> Result<PolicyTiming> {
    let aspnetcore = p
        .preset
        .as_ref()
        .is_some_and(|n| n.get_ref() == "aspnetcore");
    let lateness_us = match &p.replenish_lateness {
        Some(d) => micros(src.duration(d)?) as i64,
        None if aspnetcore => ASPNETCORE_LATENESS_US,
        None => 0,
    };
    let chunked_refill = aspnetcore
        && p.limiter
            .as_ref()
            .is_some_and(|l| l.get_ref() == "token_bucket");
    // ASP.NET Core's limiters count under one lock, against windows its
    // own timer advances.
    Ok(PolicyTiming {
        lateness_us,
        chunked_refill,
        one_clock: aspnetcore,
    })
}

/// A preset as written, e.g. `nginx_limit_req rate=10r/s burst=5 nodelay`
/// (the policy it stands for is described apart).
pub(super) fn preset_label(p: &RawPolicy) -> Option<String> {
    let preset = p.preset.as_ref()?.get_ref();
    let mut label = preset.clone();
    if let Some(l) = &p.limiter {
        label.push_str(&format!(" {}", l.get_ref()));
    }
    for (name, v) in [
        ("permit_limit", &p.permit_limit),
        ("segments_per_window", &p.segments_per_window),
        ("token_limit", &p.token_limit),
        ("tokens_per_period", &p.tokens_per_period),
    ] {
        if let Some(v) = v {
            label.push_str(&format!(" {name}={}", v.get_ref()));
        }
    }
    for (name, v) in [
        ("window", &p.window),
        ("replenishment_period", &p.replenishment_period),
    ] {
        if let (Some(v), true) = (v, preset == "aspnetcore") {
            label.push_str(&format!(" {name}={}", v.get_ref()));
        }
    }
    if let Some(r) = &p.rate {
        label.push_str(&format!(" rate={}", r.get_ref()));
    }
    if let Some(b) = &p.burst {
        label.push_str(&format!(" burst={}", b.get_ref()));
    }
    if p.nodelay.as_ref().is_some_and(|n| *n.get_ref()) {
        label.push_str(" nodelay");
    }
    Some(label)
}

/// Fails at the first parameter given that `what` does not take.
fn only(src: &Source, p: &RawPolicy, params: &[&str], what: &str) -> Result<()> {
    let given: [(&str, Option<Range<usize>>); 14] = [
        ("limit", p.limit.as_ref().map(|v| v.span())),
        ("window", p.window.as_ref().map(|v| v.span())),
        ("segments", p.segments.as_ref().map(|v| v.span())),
        ("capacity", p.capacity.as_ref().map(|v| v.span())),
        ("refill", p.refill.as_ref().map(|v| v.span())),
        ("rate", p.rate.as_ref().map(|v| v.span())),
        ("burst", p.burst.as_ref().map(|v| v.span())),
        ("nodelay", p.nodelay.as_ref().map(|v| v.span())),
        ("limiter", p.limiter.as_ref().map(|v| v.span())),
        ("permit_limit", p.permit_limit.as_ref().map(|v| v.span())),
        (
            "segments_per_window",
            p.segments_per_window.as_ref().map(|v| v.span()),
        ),
        ("token_limit", p.token_limit.as_ref().map(|v| v.span())),
        (
            "tokens_per_period",
            p.tokens_per_period.as_ref().map(|v| v.span()),
        ),
        (
            "replenishment_period",
            p.replenishment_period.as_ref().map(|v| v.span()),
        ),
    ];
    // Any policy may declare how late its replenishment runs.
    match given
        .into_iter()
        .find(|(key, span)| span.is_some() && !params.contains(key))
    {
        Some((key, span)) => Err(src.error(
            span,
            format!(
                "{key:?} is not a parameter of {what}, expected {}",
                params.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

pub(super) fn policy(src: &Source, table: Range<usize>, p: &RawPolicy) -> Result<Policy> {
    if let Some(preset_value) = &p.preset {
        if let Some(a) = &p.algorithm {
            return Err(src.at(
                a,
                "give either \"algorithm\" or \"preset\" (a preset names its algorithm)",
            ));
        }
        return preset(src, table, preset_value, p);
    }
    if let Some(n) = &p.nodelay {
        return Err(src.at(n, "\"nodelay\" belongs to preset = \"nginx_limit_req\""));
    }
    let Some(algorithm_value) = &p.algorithm else {
        return Err(src.error(
            Some(table),
            "[policy] needs \"algorithm\" (or a \"preset\": nginx_limit_req, redis_cell, governor, aspnetcore)",
        ));
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
    only(src, p, params, algorithm)?;
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
            segmented(src, limit, window_us, seg, "segments")?
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

/// A sliding window of `segments` (1 to 10,000) equal whole-µs segments.
fn segmented(
    src: &Source,
    limit: u64,
    window_us: u64,
    seg: &Spanned<i64>,
    key: &str,
) -> Result<Policy> {
    let segments = src.count(seg, key, 1, 10_000)?;
    if window_us % segments != 0 {
        return Err(src.at(
            seg,
            format!("the window must split into {segments} equal whole-microsecond segments"),
        ));
    }
    Ok(Policy::SlidingWindow {
        limit,
        window_us,
        segments,
    })
}

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
fn preset(
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
///   added in one chunk every `replenishment_period`.
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
