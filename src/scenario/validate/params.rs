//! Checks a policy's parameters share, whether stated by algorithm or by
//! preset: no parameter the policy does not take, and a segmented window
//! that divides evenly.

use super::source::{Result, Source};
use crate::scenario::raw::RawPolicy;
use reference_api::Policy;
use std::ops::Range;
use toml::Spanned;

/// Fails at the first parameter given that `what` does not take.
pub(super) fn only(src: &Source, p: &RawPolicy, params: &[&str], what: &str) -> Result<()> {
    let given: [(&str, Option<Range<usize>>); 16] = [
        ("limit", p.limit.as_ref().map(|v| v.span())),
        ("window", p.window.as_ref().map(|v| v.span())),
        ("segments", p.segments.as_ref().map(|v| v.span())),
        ("capacity", p.capacity.as_ref().map(|v| v.span())),
        ("refill", p.refill.as_ref().map(|v| v.span())),
        ("refill_every", p.refill_every.as_ref().map(|v| v.span())),
        (
            "refill_aligned",
            p.refill_aligned.as_ref().map(|v| v.span()),
        ),
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

/// A sliding window of `segments` (1 to 10,000) equal whole-µs segments.
pub(super) fn segmented(
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
