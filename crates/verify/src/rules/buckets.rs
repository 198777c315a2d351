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
