//! What each policy promises, as bounds the verifier can check soundly.
//! Each bound holds for every state the limiter could be in and every
//! alignment of its windows; where a stronger claim would need knowledge
//! we do not have, the weaker one is used (a false alarm is worse).

use super::false_reject::RejectCheck;
use super::grid::Grid;
use super::removal::Bound;
use reference_api::Policy;

pub struct Rules {
    /// Each is checked on its own; definite violations are the largest count.
    pub definite: Vec<Bound>,
    /// With a known window grid (aligned clocks): the sharper rule.
    pub grid: Option<Grid>,
    /// (limit, span): "admitted in any window" for `peak_window_ratio`.
    pub peak: (u64, i64),
    pub reject: RejectCheck,
}

pub fn for_policy(policy: &Policy, aligned: bool) -> Rules {
    let mut rules = continuous(policy);
    if aligned {
        rules.grid = match *policy {
            Policy::FixedWindow { limit, window_us } => Some(Grid {
                segment_us: window_us as i64,
                segments: 1,
                limit,
            }),
            Policy::SlidingWindow {
                limit,
                window_us,
                segments,
            } => Some(Grid {
                segment_us: (window_us / segments) as i64,
                segments: segments as i64,
                limit,
            }),
            _ => None,
        };
    }
    rules
}

/// Rules that hold for any alignment of the limiter's clock.
fn continuous(policy: &Policy) -> Rules {
    match *policy {
        // N+1 admits decided within less than W.
        Policy::SlidingLog { limit, window_us } => {
            let w = window_us as i64;
            Rules {
                definite: vec![window(limit, w)],
                grid: None,
                peak: (limit, w),
                reject: RejectCheck::Lookback { limit, span: w },
            }
        }
        // Alignment unknown to the verifier: a span shorter than W meets at
        // most two windows, so only more than 2N proves a violation.
        Policy::FixedWindow { limit, window_us } => {
            let w = window_us as i64;
            Rules {
                definite: vec![window(2 * limit, w)],
                grid: None,
                peak: (limit, w),
                reject: RejectCheck::Lookback { limit, span: w },
            }
        }
        // A closed span of at most W·(S-1)/S meets at most S consecutive
        // segments, all counted by the last decision: at most N. Shorter
        // than W it meets at most S+1 segments: at most 2N.
        Policy::SlidingWindow {
            limit,
            window_us,
            segments,
        } => {
            let w = window_us as i64;
            let s = segments as i64;
            Rules {
                definite: vec![
                    Bound::Window {
                        limit,
                        span: w / s * (s - 1),
                        inclusive: true,
                    },
                    window(2 * limit, w),
                ],
                grid: None,
                peak: (limit, w),
                reject: RejectCheck::Lookback { limit, span: w },
            }
        }
        // Across a boundary, x admits in the previous window and y in the
        // current one within span L ≤ W satisfy x + y < N + 1 + N·L/W
        // (the `estimate < N` variant; `estimate + 1 <= N` allows less), so
        // more than N + 1 + N·L/W is a violation either way.
        Policy::SlidingCounter { limit, window_us } => {
            let w = window_us as i64;
            Rules {
                definite: vec![Bound::Linear {
                    burst: limit + 1,
                    count: limit,
                    per: w,
                    max_span: Some(w),
                }],
                grid: None,
                peak: (limit, w),
                // The estimate never exceeds the admits of the last 2W.
                reject: RejectCheck::Lookback { limit, span: 2 * w },
            }
        }
        // Tokens at the first admit ≤ capacity; refill adds L·rate.
        Policy::TokenBucket { capacity, refill } => bucket(capacity, refill.count, refill.per_us),
        // GCRA with burst b is a bucket of b tokens refilled one per interval.
        Policy::Gcra { rate, burst } => bucket(burst, rate.count, rate.per_us),
    }
}

fn window(limit: u64, span: i64) -> Bound {
    Bound::Window {
        limit,
        span,
        inclusive: false,
    }
}

fn bucket(burst: u64, count: u64, per_us: u64) -> Rules {
    let per = per_us as i64;
    Rules {
        definite: vec![Bound::Linear {
            burst,
            count,
            per,
            max_span: None,
        }],
        grid: None,
        // Over one rate period a bucket may admit its burst plus the refill.
        peak: (burst + count, per),
        reject: RejectCheck::Bucket { burst, count, per },
    }
}
