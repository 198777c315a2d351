//! The `[policy]` table (and an arm's `[arms.policy]`): algorithm and
//! parameters, each checked against what the algorithm takes.

use super::{Result, Source};
use crate::scenario::raw::RawPolicy;
use crate::scenario::units::micros;
use reference_api::Policy;
use std::ops::Range;
use toml::Spanned;

/// An arm's policy: the scenario's, replaced (the arm names an algorithm)
/// or with the arm's fields overriding.
pub(super) fn arm_policy(
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

pub(super) fn policy(src: &Source, table: Range<usize>, p: &RawPolicy) -> Result<Policy> {
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
