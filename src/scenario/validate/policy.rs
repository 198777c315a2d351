//! The `[policy]` table (and an arm's `[arms.policy]`): algorithm and
//! parameters, each checked against what the algorithm takes.

use super::params::{only, segmented};
use super::presets::preset;
use super::source::{Result, Source};
use crate::scenario::raw::RawPolicy;
use crate::scenario::spec::PolicyTiming;
use crate::scenario::units::{self, micros, UnitError};
use reference_api::{Policy, Rate};
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
        count_rejected,
        clock_resolution,
        clock_skew,
        refill_every,
        refill_aligned,
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
    let aspnet_bucket = aspnetcore
        && p.limiter
            .as_ref()
            .is_some_and(|l| l.get_ref() == "token_bucket");
    // Released ASP.NET Core fills its partitioned bucket continuously at
    // each heartbeat, and a full bucket banks what accrues until it
    // empties: up to its token limit more at once (dotnet/runtime#74360;
    // docs/own-limiter.md, "Presets").
    let chunked_refill = p.refill_every.is_some();
    let banked_tokens = match (&p.token_limit, aspnet_bucket) {
        (Some(b), true) => (*b.get_ref()).max(0) as u64,
        _ => 0,
    };
    let chunks_on_epoch = match &p.refill_aligned {
        None => false,
        Some(a) => match a.get_ref().as_str() {
            "epoch" => true,
            "first_hit" | "timer" => false,
            other => {
                return Err(src.at(
                    a,
                    format!(
                        "unknown refill_aligned {other:?}, expected epoch (the wall clock's \
                         multiples of refill_every), first_hit (from the key's first request) \
                         or timer (a timer of the limiter's own)"
                    ),
                ))
            }
        },
    };
    if let (Some(a), None) = (&p.refill_aligned, &p.refill_every) {
        return Err(src.at(
            a,
            "refill_aligned needs refill_every, e.g. refill_every = \"1s\"",
        ));
    }
    let clock_resolution_us = match &p.clock_resolution {
        Some(d) => Some(src.span_us(d, "clock_resolution")? as i64),
        None => None,
    };
    let clock_skew_us = match &p.clock_skew {
        Some(d) => Some(skew_us(src, d)?),
        None => None,
    };
    let count_rejected = match &p.count_rejected {
        Some(c) if *c.get_ref() && is_bucket(p) => {
            return Err(src.at(
                c,
                "count_rejected is for window policies (sliding_log, fixed_window, \
                 sliding_window, sliding_counter): a bucket's rejects take no token",
            ))
        }
        Some(c) => *c.get_ref(),
        None => false,
    };
    // ASP.NET Core's limiters count under one lock, against windows its
    // own timer advances.
    Ok(PolicyTiming {
        lateness_us,
        chunked_refill,
        chunks_on_epoch,
        one_clock: aspnetcore,
        count_rejected,
        clock_resolution_us,
        clock_skew_us,
        banked_tokens,
    })
}

/// `clock_skew`: a distance, so never negative; and 0 is a statement
/// (one clock, or deciders on one host), not a slip.
fn skew_us(src: &Source, d: &Spanned<String>) -> Result<i64> {
    if d.get_ref().trim_start().starts_with('-') {
        return Err(src.at(
            d,
            format!(
                "clock_skew {:?}: how far apart the deciders' clocks may be is never negative",
                d.get_ref()
            ),
        ));
    }
    match units::duration(d.get_ref()) {
        Err(UnitError::Zero(_)) => Ok(0),
        _ => Ok(micros(src.duration(d)?) as i64),
    }
}

/// A token bucket or GCRA, named or through a preset.
fn is_bucket(p: &RawPolicy) -> bool {
    let named = |v: &Option<Spanned<String>>, names: &[&str]| {
        v.as_ref()
            .is_some_and(|n| names.contains(&n.get_ref().as_str()))
    };
    named(&p.algorithm, &["token_bucket", "gcra"])
        || named(&p.preset, &["nginx_limit_req", "redis_cell", "governor"])
        || (named(&p.preset, &["aspnetcore"]) && named(&p.limiter, &["token_bucket"]))
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
        "token_bucket" => &["capacity", "refill", "refill_every", "refill_aligned"],
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
        src.span_us(p.window.as_ref().ok_or_else(|| need("window"))?, "window")
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
            refill: chunks(
                src,
                src.rate(p.refill.as_ref().ok_or_else(|| need("refill"))?)?,
                p.refill_every.as_ref(),
            )?,
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

/// `refill_every`: the rate as whole chunks, `count` tokens per `per_us`
/// (what the verifier's chunked rules read); without it, the rate as
/// given. A chunk must be a whole number of tokens.
fn chunks(src: &Source, rate: Rate, every: Option<&Spanned<String>>) -> Result<Rate> {
    let Some(every) = every else {
        return Ok(rate);
    };
    let every_us = src.span_us(every, "refill_every")?;
    let tokens = rate.count as u128 * every_us as u128;
    let per = rate.per_us as u128;
    if tokens % per != 0 || tokens == 0 {
        return Err(src.at(
            every,
            format!(
                "refill_every {:?} at {} per {} µs adds {:.3} tokens a chunk: a chunk must be \
                 a whole number of tokens",
                every.get_ref(),
                rate.count,
                rate.per_us,
                tokens as f64 / per as f64
            ),
        ));
    }
    Ok(Rate {
        count: u64::try_from(tokens / per).unwrap_or(u64::MAX),
        per_us: every_us,
    })
}
