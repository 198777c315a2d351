//! A token bucket's and GCRA's rules: a continuous bucket, and one that
//! refills in chunks.

use super::rule::{grow, rule, shrink, Rules};
use crate::false_reject::RejectCheck;
use crate::removal::Bound;

/// A continuous bucket. A refill that runs up to `late` behind only ever
/// admits less, so the bound stands; a reject is judged with the
/// ⌈count·late/per⌉ tokens the late refill may not have brought yet.
pub(crate) fn bucket(burst: u64, count: u64, per_us: u64, late: i64, ppm: i64) -> Rules {
    let per = per_us as i64;
    let missing = (count as i128 * late as i128 + per as i128 - 1) / (per as i128).max(1);
    Rules {
        definite: vec![rule(
            Bound::Linear {
                burst,
                count,
                per: shrink(per, ppm),
                max_span: None,
            },
            "a bucket holds at most its burst, and gains only its rate",
        )],
        grid: None,
        attempts: None,
        slow: None,
        // Over one rate period a bucket may admit its burst plus the refill.
        peak: (burst + count, per),
        reject: RejectCheck::Bucket {
            burst,
            count,
            per: grow(per, ppm),
            loss: u64::try_from(missing).unwrap_or(u64::MAX),
        },
    }
}

/// A bucket of `burst` that gains `count` tokens at once per period `per`
/// (periods at least `per` apart, at most `per + late`): a closed span of
/// L ≤ k·per holds at most k refills, so at most `burst + k·count` admits;
/// a stretch of D surely gains ⌊D/(per + late)⌋ refills, at least
/// `D·count/(per + late) − count` tokens.
pub(crate) fn chunked(burst: u64, count: u64, per: i64, late: i64, ppm: i64) -> Rules {
    let reject_per = grow(per.saturating_add(late), ppm);
    let per = shrink(per, ppm);
    let step = |k: u64, why| {
        rule(
            Bound::Window {
                limit: burst + k * count,
                span: per.saturating_mul(k as i64),
                inclusive: true,
            },
            why,
        )
    };
    Rules {
        // (No "B at once": a refill may land at that instant, and a span
        // is never below the slack anyway.)
        definite: vec![
            step(1, "a span of one period meets at most one refill"),
            step(2, "a span of two periods meets at most two refills"),
            rule(
                Bound::Linear {
                    burst: burst + count,
                    count,
                    per,
                    max_span: None,
                },
                "a span of L meets at most L/P + 1 refills",
            ),
        ],
        grid: None,
        attempts: None,
        slow: None,
        peak: (burst + count, per),
        reject: RejectCheck::Bucket {
            burst,
            count,
            per: reject_per,
            loss: count,
        },
    }
}

/// A bucket that banks up to `banked` tokens while full and hands them
/// over at once later: released ASP.NET Core's partitioned
/// `TokenBucketRateLimiter` (dotnet/runtime#74360) adds `rate·(now − last)`
/// at each heartbeat, capped at its capacity, but returns early while the
/// bucket is full without moving `last` — so the first refill after it
/// empties adds the whole time spent full, up to the capacity at once.
/// Every count rule allows `banked` more. Proof: in a span, the admits are
/// at most the tokens at its start (≤ B), plus its first refill (≤
/// `banked`: capped), plus the later ones — each the rate times the time
/// since the refill before it, which lies inside the span (≤ r·L in all;
/// for chunks, at most the chunks the rule already counts).
pub(crate) fn banking(mut rules: Rules, banked: u64) -> Rules {
    if banked == 0 {
        return rules;
    }
    for r in &mut rules.definite {
        r.bound = match r.bound {
            Bound::Linear {
                burst,
                count,
                per,
                max_span,
            } => Bound::Linear {
                burst: burst.saturating_add(banked),
                count,
                per,
                max_span,
            },
            Bound::Window {
                limit,
                span,
                inclusive,
            } => Bound::Window {
                limit: limit.saturating_add(banked),
                span,
                inclusive,
            },
        };
        r.why = "a bucket holds at most its burst, hands over at once at most the tokens it \
                 banked while full (released ASP.NET Core: up to its capacity), and gains only \
                 its rate";
    }
    rules
}
