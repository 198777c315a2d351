//! What each policy promises, as bounds the verifier can check soundly.
//! Each bound holds for every state the limiter could be in and every
//! alignment of its windows; where a stronger claim would need knowledge
//! we do not have, the weaker one is used (a false alarm is worse).
//!
//! Windows and segments are never shorter than stated (late ones only last
//! longer), so the counts rest on "a closed span of length L ≤ k·g meets at
//! most k + 1 windows of length ≥ g": the windows strictly between the first
//! and the last one met lie inside the span's interior.
//!
//! Several clocks: when deciders read clocks of their own (replicas, or a
//! clock read before the state is locked), a decision may reach the state
//! after another whose reading was later. Keyed windows still hold at most
//! N each, and a sliding log counts every stored admit, but a segmented
//! window or a sliding counter may then miss the admits of the segment
//! "ahead" of its reading: only the rules marked below survive.

mod buckets;
mod rule;
mod windows;

#[cfg(test)]
pub(crate) use rule::plain;
pub(crate) use rule::{grow, shrink, Rule, Rules, Timing};

use crate::attempts::Attempts;
use crate::false_reject::RejectCheck;
use crate::grid::Grid;
use rlbench_policy::Policy;
use windows::continuous;

pub(crate) fn for_policy(policy: &Policy, timing: Timing) -> Rules {
    let mut rules = continuous(policy, timing);
    if timing.count_rejected {
        counting_attempts(&mut rules, policy, timing);
    }
    // Windows that run late are not on the epoch grid any more. An admit
    // surely inside one aligned segment was also applied inside it, so the
    // grid rules hold with several clocks too.
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
            // Chunks on the epoch grid: after a chunk lands the bucket
            // holds at most its capacity, and nothing comes until the next
            // boundary, so admits surely inside one period number at most
            // B. (A decision surely inside the period read a clock inside
            // it, whatever the order of readings: a chunk is counted once
            // by a bucket whose `last` never runs back.)
            Policy::TokenBucket { capacity, refill }
                if timing.chunked_refill && timing.chunks_on_epoch =>
            {
                Some(Grid {
                    segment_us: refill.per_us as i64,
                    segments: 1,
                    // (A bucket that banks hands that over at a boundary.)
                    limit: capacity.saturating_add(timing.banked),
                })
            }
            _ => None,
        };
    }
    rules
}

/// A limiter that counts rejected attempts too: every admit needs fewer
/// than the limit of attempts counted before it (a sliding log's window; a
/// segmented window's last S − 1 segments, which every sum covers; a
/// sliding counter's weighted estimate; a fixed window of unknown
/// alignment may have begun just before any admit: no such rule), and a
/// reject is false only when the attempts before it, itself among them,
/// left room (the possible admits it is judged against are then every
/// request).
fn counting_attempts(rules: &mut Rules, policy: &Policy, timing: Timing) {
    let short = |x: i64| shrink(x, timing.rate_ppm);
    rules.attempts = match *policy {
        Policy::SlidingLog { limit, window_us } => Some(Attempts::Within {
            limit,
            span: short(window_us as i64),
            inclusive: false,
        }),
        Policy::SlidingWindow {
            limit,
            window_us,
            segments,
        } if segments > 1 => Some(Attempts::Within {
            limit,
            span: short(window_us as i64 / segments as i64) * (segments as i64 - 1),
            inclusive: true,
        }),
        Policy::SlidingCounter { limit, window_us } => Some(Attempts::Weighted {
            limit,
            window: short(window_us as i64),
        }),
        _ => None,
    };
    if let RejectCheck::Lookback { limit, span } = rules.reject {
        rules.reject = RejectCheck::Lookback {
            limit: limit + 1,
            span,
        };
    }
}
