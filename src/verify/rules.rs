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
    /// Why each of `definite` holds, in words for the witnesses.
    pub why: Vec<&'static str>,
    /// With a known window grid (aligned clocks): the sharper rule.
    pub grid: Option<Grid>,
    /// (limit, span): "admitted in any window" for `peak_window_ratio`.
    pub peak: (u64, i64),
    pub reject: RejectCheck,
}

/// What the limiter's timing may be, beyond the policy's parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    /// Every decision read this machine's epoch-aligned clock.
    pub aligned: bool,
    /// How late a window, a segment or a chunked refill may run.
    pub lateness_us: i64,
    /// A token bucket's refill comes in one chunk per period.
    pub chunked_refill: bool,
}

pub fn for_policy(policy: &Policy, timing: Timing) -> Rules {
    let mut rules = continuous(policy, timing);
    // Windows that run late are not on the epoch grid any more.
    if timing.aligned && timing.lateness_us == 0 {
        rules.grid = match *policy {
            Policy::FixedWindow { limit, window_us }
            | Policy::SlidingCounter { limit, window_us } => Some(Grid {
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

/// Rules that hold for any alignment of the limiter's clock. Windows and
/// segments are never shorter than stated (late ones only last longer), so
/// every count below rests on "a closed span of length L ≤ k·g meets at most
/// k + 1 windows of length ≥ g": the windows strictly between the first and
/// the last one met lie inside the span's interior.
fn continuous(policy: &Policy, timing: Timing) -> Rules {
    let late = timing.lateness_us.max(0);
    match *policy {
        // N+1 admits decided within less than W.
        Policy::SlidingLog { limit, window_us } => {
            let w = window_us as i64;
            Rules {
                definite: vec![window(limit, w)],
                why: vec!["a sliding log admits at most its limit in any window"],
                grid: None,
                peak: (limit, w),
                reject: RejectCheck::Lookback { limit, span: w },
            }
        }
        // Alignment unknown to the verifier: a span shorter than W meets at
        // most two windows, so only more than 2N proves a violation; a span
        // L meets at most L/W + 2 windows: more than N·(2 + L/W) over long
        // spans (a limiter admitting twice its limit forever is caught).
        Policy::FixedWindow { limit, window_us } => {
            let w = window_us as i64;
            Rules {
                definite: vec![window(2 * limit, w), windows_over_time(limit, 2 * limit, w)],
                why: vec![
                    "a span shorter than the window meets at most two fixed windows",
                    "a span of L meets at most L/W + 2 fixed windows",
                ],
                grid: None,
                peak: (limit, w),
                // The current window began less than W (+ lateness) ago.
                reject: RejectCheck::Lookback {
                    limit,
                    span: w.saturating_add(late),
                },
            }
        }
        // A closed span of at most W·(S-1)/S meets at most S consecutive
        // segments, all counted by the last decision: at most N. Shorter
        // than W it meets at most S+1 segments: at most 2N. Any m
        // consecutive segments hold at most N·⌈m/S⌉ ≤ N·(L/W + 1 + 1/S).
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
                    windows_over_time(limit, limit + limit.div_ceil(segments), w),
                ],
                why: vec![
                    "a span of at most (S-1) segments meets at most S, all in one window",
                    "a span shorter than the window meets at most S+1 segments",
                    "m consecutive segments hold at most N per S of them",
                ],
                grid: None,
                peak: (limit, w),
                // S segments, each late by up to the lateness.
                reject: RejectCheck::Lookback {
                    limit,
                    span: w.saturating_add(late.saturating_mul(s)),
                },
            }
        }
        // Across a boundary, x admits in the previous window and y in the
        // current one within span L ≤ W satisfy x + y < N + 1 + N·L/W
        // (the `estimate < N` variant; `estimate + 1 <= N` allows less), so
        // more than N + 1 + N·L/W is a violation either way. Each fixed
        // window holds at most N (the estimate is at least its count), so
        // long spans are bounded as a fixed window's are.
        Policy::SlidingCounter { limit, window_us } => {
            let w = window_us as i64;
            Rules {
                definite: vec![
                    Bound::Linear {
                        burst: limit + 1,
                        count: limit,
                        per: w,
                        max_span: Some(w),
                    },
                    windows_over_time(limit, 2 * limit, w),
                ],
                why: vec![
                    "two weighted windows admit at most N + 1 + N*L/W within L <= W",
                    "each fixed window holds at most N, and a span of L meets at most L/W + 2",
                ],
                grid: None,
                peak: (limit, w),
                // The estimate never exceeds the admits of the last 2W.
                reject: RejectCheck::Lookback {
                    limit,
                    span: (2 * w).saturating_add(2 * late),
                },
            }
        }
        Policy::TokenBucket { capacity, refill } if timing.chunked_refill => {
            chunked(capacity, refill.count, refill.per_us as i64, late)
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

/// At most `burst + L·per_window/w` admits in any span L.
fn windows_over_time(per_window: u64, burst: u64, w: i64) -> Bound {
    Bound::Linear {
        burst,
        count: per_window,
        per: w,
        max_span: None,
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
        why: vec!["a bucket holds at most its burst, and gains only its rate"],
        grid: None,
        // Over one rate period a bucket may admit its burst plus the refill.
        peak: (burst + count, per),
        reject: RejectCheck::Bucket {
            burst,
            count,
            per,
            loss: 0,
        },
    }
}

/// A bucket of `burst` that gains `count` tokens at once per period `per`
/// (periods at least `per` apart, at most `per + late`): a closed span of
/// L ≤ k·per holds at most k refills, so at most `burst + k·count` admits;
/// a stretch of D surely gains ⌊D/(per + late)⌋ refills, at least
/// `D·count/(per + late) − count` tokens.
fn chunked(burst: u64, count: u64, per: i64, late: i64) -> Rules {
    let step = |k: u64| Bound::Window {
        limit: burst + k * count,
        span: per.saturating_mul(k as i64),
        inclusive: true,
    };
    Rules {
        definite: vec![
            step(0),
            step(1),
            step(2),
            Bound::Linear {
                burst: burst + count,
                count,
                per,
                max_span: None,
            },
        ],
        why: vec![
            "a bucket holds at most its burst",
            "a span of one period meets at most one refill",
            "a span of two periods meets at most two refills",
            "a span of L meets at most L/P + 1 refills",
        ],
        grid: None,
        peak: (burst + count, per),
        reject: RejectCheck::Bucket {
            burst,
            count,
            per: per.saturating_add(late),
            loss: count,
        },
    }
}
