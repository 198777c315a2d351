//! The windowed policies' rules, for any alignment of the limiter's clock:
//! a sliding log, fixed windows, a segmented sliding window (with the
//! rules that survive several clocks), a sliding counter; `continuous`
//! picks a policy's (buckets' are in buckets.rs).

use super::buckets::{banking, bucket, chunked};
use super::rule::{
    grow, per_window, rule, shrink, window, windows_over_time, Rule, Rules, Slow, Timing, Unit,
};
use crate::false_reject::RejectCheck;
use crate::removal::Bound;
use rlbench_policy::Policy;

/// Rules that hold for any alignment of the limiter's clock.
///
/// Every span a rule counts in is the limiter's, [`shrink`]-ed onto the
/// trace's clock (a shorter span makes a weaker rule), and every span a
/// reject looks back over is [`grow`]-n (a longer one forgives more).
pub(crate) fn continuous(policy: &Policy, timing: Timing) -> Rules {
    let late = timing.lateness_us.max(0);
    let ppm = timing.rate_ppm;
    // A table: one line per algorithm, its rules proven where they are built.
    match *policy {
        Policy::SlidingLog { limit, window_us } => sliding_log(limit, window_us, timing),
        Policy::FixedWindow { limit, window_us } => fixed_window(limit, window_us, timing),
        Policy::SlidingWindow {
            limit,
            window_us,
            segments,
        } => sliding_window(limit, window_us, segments, timing),
        Policy::SlidingCounter { limit, window_us } => sliding_counter(limit, window_us, timing),
        Policy::TokenBucket { capacity, refill } if timing.chunked_refill => banking(
            chunked(capacity, refill.count, refill.per_us as i64, late, ppm),
            timing.banked,
        ),
        // Tokens at the first admit ≤ capacity; refill adds L·rate.
        Policy::TokenBucket { capacity, refill } => banking(
            bucket(capacity, refill.count, refill.per_us, late, ppm),
            timing.banked,
        ),
        // GCRA with burst b is a bucket of b tokens refilled one per interval.
        Policy::Gcra { rate, burst } => bucket(burst, rate.count, rate.per_us, late, ppm),
    }
}

/// N+1 admits decided within less than W (every stored admit with a
/// reading inside the window counts, in whatever order they came).
fn sliding_log(limit: u64, window_us: u64, timing: Timing) -> Rules {
    let ppm = timing.rate_ppm;
    let short = |x: i64| shrink(x, ppm);
    let long = |x: i64| grow(x, ppm);
    let w = window_us as i64;
    Rules {
        definite: vec![rule(
            window(limit, short(w)),
            "a sliding log admits at most its limit in any window",
        )],
        grid: None,
        attempts: None,
        // An admit that took a window to answer fits in no span
        // shorter than the window: no rule speaks of it.
        slow: Some(Slow { from: short(w) }),
        peak: (limit, w),
        reject: RejectCheck::Lookback {
            limit,
            span: long(w),
        },
    }
}

/// Alignment unknown to the verifier: a span shorter than W meets at
/// most two windows, so only more than 2N proves a violation; a span
/// L meets at most L/W + 2 windows: more than N·(2 + L/W) over long
/// spans (a limiter admitting twice its limit forever is caught).
/// Each window's count only grows: several clocks change nothing.
fn fixed_window(limit: u64, window_us: u64, timing: Timing) -> Rules {
    let late = timing.lateness_us.max(0);
    let ppm = timing.rate_ppm;
    let short = |x: i64| shrink(x, ppm);
    let long = |x: i64| grow(x, ppm);
    let w = window_us as i64;
    Rules {
        definite: per_window(limit, short(w), Unit::Window),
        grid: None,
        attempts: None,
        slow: None,
        peak: (limit, w),
        // The current window began less than W (+ lateness) ago.
        reject: RejectCheck::Lookback {
            limit,
            span: long(w.saturating_add(late)),
        },
    }
}

/// A segmented sliding window: with one clock, the spans of segments one
/// window counts; with several, what survives readings out of order.
fn sliding_window(limit: u64, window_us: u64, segments: u64, timing: Timing) -> Rules {
    let late = timing.lateness_us.max(0);
    let ppm = timing.rate_ppm;
    let short = |x: i64| shrink(x, ppm);
    let long = |x: i64| grow(x, ppm);
    let s = segments as i64;
    // The window and its segments as short as the trace may see them.
    let (w, g) = (short(window_us as i64), short(window_us as i64 / s));
    let definite = if timing.one_clock {
        // A closed span of at most W·(S-1)/S meets at most S
        // consecutive segments, all counted by the last decision:
        // at most N. Shorter than W it meets at most S+1 segments:
        // at most 2N. Any m consecutive segments hold at most
        // N·⌈m/S⌉ ≤ N·(L/W + 1 + 1/S).
        vec![
            rule(
                Bound::Window {
                    limit,
                    span: g * (s - 1),
                    inclusive: true,
                },
                "a span of at most (S-1) segments meets at most S, all in one window",
            ),
            rule(
                window(2 * limit, w),
                "a span shorter than the window meets at most S+1 segments",
            ),
            rule(
                windows_over_time(limit, limit + limit.div_ceil(segments), w),
                "m consecutive segments hold at most N per S of them",
            ),
        ]
    } else {
        // Each segment holds at most N (its own count is in every
        // sum). With short admits (interval plus slack under one
        // segment g), any S+1 consecutive segments k..k+S hold at
        // most 2N. Segments are the ones the admits were counted
        // in, by their deciders' readings; a reading comes before
        // its decision reaches the state. So when p reached the
        // state before q, p's reading r_p ≤ p's step < q's step ≤
        // done_q, and q's reading r_q ≥ sent_q less the clocks'
        // offset: r_p − r_q < q's interval plus slack < g, and p's
        // segment is at most one past q's. Take q the last of the
        // admits of k..k+S to reach the state, in segment k+j:
        //   j = S: q's sum covers k+1..k+S, all of whose admits
        //     came before it or are q: at most N; segment k holds
        //     at most N.
        //   j < S: q's sum covers k+j−S+1..k+j ⊇ k..k+j: at most
        //     N there; k+j+1 holds at most N; k+j+2..k+S hold none,
        //     since each came before q and would be two past it.
        // (S+2 segments are not bounded by 2N: with j = S+1, q's
        // sum leaves out k, and k, k+1..k+S and k+S+1 hold N each.)
        // A span of length L meets m ≤ L/g + 2 segments, which hold
        // at most 2N·⌈m/(S+1)⌉ ≤ 2N·(L/g + S + 2)/(S+1): a closed
        // span of at most S·g meets S+1 segments (2N), and any L
        // holds at most ⌈2N(S+2)/(S+1)⌉ + 2N·L/((S+1)g), which
        // catches a sustained 2× (2N per S segments).
        // Slower answers: the same with k segments ([`readings_apart`]).
        let mut rules = per_window(limit, g, Unit::Segment);
        if s > 1 {
            rules.extend(readings_apart(limit, g, segments));
        }
        rules
    };
    // Several clocks: admits as slow as the whole window are
    // judged by the segments alone.
    let slow = (!timing.one_clock && s > 1).then_some(Slow {
        from: g.saturating_mul(s),
    });
    Rules {
        definite,
        grid: None,
        attempts: None,
        slow,
        peak: (limit, window_us as i64),
        // S segments, each late by up to the lateness.
        reject: RejectCheck::Lookback {
            limit,
            span: long((window_us as i64).saturating_add(late.saturating_mul(s))),
        },
    }
}

/// Across a boundary, x admits in the previous window and y in the
/// current one within span L ≤ W satisfy x + y < N + 1 + N·L/W
/// (the `estimate < N` variant; `estimate + 1 <= N` allows less), so
/// more than N + 1 + N·L/W is a violation either way — with one
/// clock. Each fixed window holds at most N (the estimate is at
/// least its count), with several clocks too, so long spans are
/// bounded as a fixed window's are.
fn sliding_counter(limit: u64, window_us: u64, timing: Timing) -> Rules {
    let late = timing.lateness_us.max(0);
    let ppm = timing.rate_ppm;
    let short = |x: i64| shrink(x, ppm);
    let long = |x: i64| grow(x, ppm);
    let w = short(window_us as i64);
    let mut definite = per_window(limit, w, Unit::Window);
    if timing.one_clock {
        definite.push(rule(
            Bound::Linear {
                burst: limit + 1,
                count: limit,
                per: w,
                max_span: Some(w),
            },
            "two weighted windows admit at most N + 1 + N*L/W within L <= W",
        ));
    }
    Rules {
        definite,
        grid: None,
        attempts: None,
        slow: None,
        peak: (limit, window_us as i64),
        // The estimate never exceeds the admits of the last 2W.
        reject: RejectCheck::Lookback {
            limit,
            span: long((2 * window_us as i64).saturating_add(2 * late)),
        },
    }
}

/// Readings less than `k` segments apart (k = 1, 2, …, S; thinned past 8):
/// among admits whose interval plus slack is shorter than `k·g`, any S+k
/// consecutive segments hold at most `(k+1)·N`.
///
/// Proof. If p reached the state before q, p's reading r_p ≤ p's step <
/// q's step ≤ done_q (plus the clocks' offset), and q's reading r_q ≥
/// sent_q (less it): r_p − r_q < q's interval plus slack < k·g, so p's
/// segment is at most k past q's. Take segments m..m+S+k−1 and q the last
/// of the admits in them to reach the state, in segment m+j. q's sum
/// covers m+j−S+1..m+j, whose admits came before q or are q: at most N
/// there. Every other admit is at most k segments past q's, so beyond
/// m+j only m+j+1..m+min(j+k, S+k−1) may hold any, N each: at most
/// min(k, S+k−1−j) segments. Before q's sum, m..m+j−S holds N per
/// segment: j−S+1 segments when j ≥ S. For j < S: N + k·N. For j ≥ S:
/// N + (S+k−1−j)·N + (j−S+1)·N = (k+1)·N. (k = 1 is the rule above.)
///
/// A closed span of at most (S+k−1)·g meets at most S+k segments:
/// `(k+1)N`; a span of L meets m ≤ L/g + 2 segments, which hold at most
/// `(k+1)N·⌈m/(S+k)⌉ ≤ (k+1)N·(L/g + S + k + 1)/(S+k)`. A rule k+1 on the
/// same admits is weaker (its rate (k+1)N/(S+k) grows with k), so it is
/// checked only when some admit is too slow for rule k.
fn readings_apart(limit: u64, g: i64, segments: u64) -> Vec<Rule> {
    let s = segments as i64;
    let mut rules = Vec::new();
    let mut before = None;
    for k in apart(segments) {
        let (ki, most) = (k as i64, (k + 1) * limit);
        let blocks = segments + k;
        let threshold = g.saturating_mul(ki);
        let (why_window, why_linear) = if k == 1 {
            (
                "with readings less than a segment apart, S+1 segments hold at most 2N",
                "with readings less than a segment apart, S+1 segments hold at most 2N",
            )
        } else {
            (
                "with readings less than k segments apart, S+k segments hold at most (k+1)N",
                "with readings less than k segments apart, S+k segments hold at most (k+1)N",
            )
        };
        let rule = |bound, why| Rule {
            bound,
            why,
            shorter_than: Some(threshold),
            after: before,
            segments_apart: k,
        };
        rules.push(rule(
            Bound::Window {
                limit: most,
                span: g.saturating_mul(s + ki - 1),
                inclusive: true,
            },
            why_window,
        ));
        rules.push(rule(
            Bound::Linear {
                burst: (most * (blocks + 1)).div_ceil(blocks),
                count: most,
                per: g.saturating_mul(s + ki),
                max_span: None,
            },
            why_linear,
        ));
        before = Some(threshold);
    }
    rules
}

/// The `k` of [`readings_apart`]: 1..=S, every one up to 8, then each at
/// least a quarter above the one before (and S itself), so that a window
/// of thousands of segments adds a few dozen rules, not thousands.
fn apart(segments: u64) -> Vec<u64> {
    let mut ks = Vec::new();
    let mut k = 1;
    while k <= segments {
        ks.push(k);
        k = if k < 8 { k + 1 } else { k + k.div_ceil(4) };
    }
    if ks.last() != Some(&segments) {
        ks.push(segments);
    }
    ks
}
