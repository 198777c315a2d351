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

use super::attempts::Attempts;
use super::false_reject::RejectCheck;
use super::grid::Grid;
use super::removal::{Bound, Item};
use rlbench_policy::Policy;

/// One bound and what it needs to hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rule {
    pub bound: Bound,
    /// Why it holds, in words for the witnesses (`k` stands for
    /// `segments_apart`).
    pub why: &'static str,
    /// Only admits whose interval plus slack is shorter than this count
    /// (the rule relies on how far apart two readings may be).
    pub shorter_than: Option<i64>,
    /// The threshold of the same family's rule before this one: when every
    /// admit is shorter than that, that rule speaks of the same admits at a
    /// tighter rate, and this one is not checked.
    pub after: Option<i64>,
    /// The `k` of a rule for readings less than `k` segments apart.
    pub segments_apart: u64,
}

impl Rule {
    /// Whether the rule may add anything on these admits (see `after`).
    pub(crate) fn useful(&self, items: &[Item], slack: i64) -> bool {
        self.after.map_or(true, |prev| {
            items
                .iter()
                .any(|it| (it.y - it.x).abs().saturating_add(slack) >= prev)
        })
    }

    /// Its words, with the policy's numbers.
    pub(crate) fn words(&self, policy: &Policy) -> String {
        let k = self.segments_apart;
        let why = if k > 1 {
            let s = match *policy {
                Policy::SlidingWindow { segments, .. } => segments,
                _ => 0,
            };
            let limit = match *policy {
                Policy::SlidingWindow { limit, .. } => limit,
                _ => 0,
            };
            self.why
                .replace("k segments", &format!("{k} segments"))
                .replace("S+k segments", &format!("{} segments", s + k))
                .replace("(k+1)N", &format!("{}", (k + 1) * limit))
        } else {
            self.why.to_string()
        };
        plain(&why, policy)
    }
}

pub(crate) struct Rules {
    /// Each is checked on its own; definite violations are the largest count.
    pub definite: Vec<Rule>,
    /// With a known window grid (aligned clocks): the sharper rule.
    pub grid: Option<Grid>,
    /// (limit, span): "admitted in any window" for `peak_window_ratio`.
    pub peak: (u64, i64),
    pub reject: RejectCheck,
    /// With `count_rejected`: what each admit needs of the attempts before it.
    pub attempts: Option<Attempts>,
    /// Admits whose interval plus slack reaches this are too slow for the
    /// policy's sharp rules (see [`Slow`]).
    pub slow: Option<Slow>,
}

/// Where answers become too slow for a policy's sharp rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slow {
    /// µs of interval plus slack, on the trace's clock.
    pub from: i64,
}

/// What the limiter's timing may be, beyond the policy's parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Timing {
    /// Every decision read this machine's epoch-aligned clock.
    pub aligned: bool,
    /// How late a window, a segment or a chunked refill may run.
    pub lateness_us: i64,
    /// A token bucket's refill comes in one chunk per period.
    pub chunked_refill: bool,
    /// ...on the epoch-aligned multiples of the period.
    pub chunks_on_epoch: bool,
    /// Every decision reads one clock inside its atomic step, so decisions
    /// reach the state in the order of their readings.
    pub one_clock: bool,
    /// How fast or slow (ppm) the limiter's clock may run against the
    /// trace's: a span of its clock lasts between [`shrink`] and [`grow`]
    /// of it on the trace's.
    pub rate_ppm: i64,
    /// Rejected attempts count against the limit as admits do.
    pub count_rejected: bool,
}

/// The least a span of `x` µs on a clock running up to `ppm` fast may last
/// on the trace's clock: x/(1 + ε) ≥ x·(1 − ε), rounded down.
pub(crate) fn shrink(x: i64, ppm: i64) -> i64 {
    let ppm = ppm.clamp(0, 999_999) as i128;
    let cut = (x.max(0) as i128 * ppm + 999_999) / 1_000_000;
    (x as i128 - cut) as i64
}

/// The most a span of `x` µs on a clock running up to `ppm` slow may last
/// on the trace's clock: x/(1 − ε), rounded up.
pub(crate) fn grow(x: i64, ppm: i64) -> i64 {
    let ppm = ppm.clamp(0, 999_999) as i128;
    let x = x.max(0) as i128;
    let d = 1_000_000 - ppm;
    ((x * 1_000_000 + d - 1) / d).min(i64::MAX as i128) as i64
}

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
                    limit: capacity,
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

fn rule(bound: Bound, why: &'static str) -> Rule {
    Rule {
        bound,
        why,
        shorter_than: None,
        after: None,
        segments_apart: 0,
    }
}

/// Rules that hold for any alignment of the limiter's clock.
///
/// Every span a rule counts in is the limiter's, [`shrink`]-ed onto the
/// trace's clock (a shorter span makes a weaker rule), and every span a
/// reject looks back over is [`grow`]-n (a longer one forgives more).
fn continuous(policy: &Policy, timing: Timing) -> Rules {
    let late = timing.lateness_us.max(0);
    let ppm = timing.rate_ppm;
    let short = |x: i64| shrink(x, ppm);
    let long = |x: i64| grow(x, ppm);
    match *policy {
        // N+1 admits decided within less than W (every stored admit with a
        // reading inside the window counts, in whatever order they came).
        Policy::SlidingLog { limit, window_us } => {
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
        // Alignment unknown to the verifier: a span shorter than W meets at
        // most two windows, so only more than 2N proves a violation; a span
        // L meets at most L/W + 2 windows: more than N·(2 + L/W) over long
        // spans (a limiter admitting twice its limit forever is caught).
        // Each window's count only grows: several clocks change nothing.
        Policy::FixedWindow { limit, window_us } => {
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
        Policy::SlidingWindow {
            limit,
            window_us,
            segments,
        } => {
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
        // Across a boundary, x admits in the previous window and y in the
        // current one within span L ≤ W satisfy x + y < N + 1 + N·L/W
        // (the `estimate < N` variant; `estimate + 1 <= N` allows less), so
        // more than N + 1 + N·L/W is a violation either way — with one
        // clock. Each fixed window holds at most N (the estimate is at
        // least its count), with several clocks too, so long spans are
        // bounded as a fixed window's are.
        Policy::SlidingCounter { limit, window_us } => {
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
        Policy::TokenBucket { capacity, refill } if timing.chunked_refill => {
            chunked(capacity, refill.count, refill.per_us as i64, late, ppm)
        }
        // Tokens at the first admit ≤ capacity; refill adds L·rate.
        Policy::TokenBucket { capacity, refill } => {
            bucket(capacity, refill.count, refill.per_us, late, ppm)
        }
        // GCRA with burst b is a bucket of b tokens refilled one per interval.
        Policy::Gcra { rate, burst } => bucket(burst, rate.count, rate.per_us, late, ppm),
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

/// What holds at most N on its own: a fixed window (also a sliding
/// counter's), or a segment.
#[derive(Clone, Copy)]
enum Unit {
    Window,
    Segment,
}

/// `limit` per window of `w` (of any alignment, each at least `w` long):
/// 2N within less than `w`, `(k+1)·N` within `k·w` for k = 2 and 3, and
/// `N·(2 + L/w)` within any L.
fn per_window(limit: u64, w: i64, unit: Unit) -> Vec<Rule> {
    let within = |k: u64| Bound::Window {
        limit: (k + 1) * limit,
        span: w.saturating_mul(k as i64),
        inclusive: true,
    };
    let (short, long) = match unit {
        Unit::Window => (
            "a span shorter than the window meets at most two fixed windows, N each",
            "a span of k windows meets at most k + 1 fixed windows, N each",
        ),
        Unit::Segment => (
            "a span shorter than a segment meets at most two segments, N each",
            "a span of k segments meets at most k + 1 segments, N each",
        ),
    };
    vec![
        rule(window(2 * limit, w), short),
        rule(within(2), long),
        rule(within(3), long),
        rule(windows_over_time(limit, 2 * limit, w), long),
    ]
}

/// A continuous bucket. A refill that runs up to `late` behind only ever
/// admits less, so the bound stands; a reject is judged with the
/// ⌈count·late/per⌉ tokens the late refill may not have brought yet.
fn bucket(burst: u64, count: u64, per_us: u64, late: i64, ppm: i64) -> Rules {
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
fn chunked(burst: u64, count: u64, per: i64, late: i64, ppm: i64) -> Rules {
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

/// A rule's words with the policy's numbers in place of N (its limit), S
/// (its segments) and W (its window): "… two fixed windows, 5 each". What
/// stays a formula gets the numbers after it.
pub(crate) fn plain(why: &str, policy: &Policy) -> String {
    let (limit, window_us, segments) = match *policy {
        Policy::SlidingLog { limit, window_us }
        | Policy::FixedWindow { limit, window_us }
        | Policy::SlidingCounter { limit, window_us } => (limit, window_us, None),
        Policy::SlidingWindow {
            limit,
            window_us,
            segments,
        } => (limit, window_us, Some(segments)),
        _ => return why.to_string(),
    };
    let mut text = why
        .replace(
            "at most 2N",
            &format!("at most {}", limit.saturating_mul(2)),
        )
        .replace("N each", &format!("{limit} each"));
    if let Some(s) = segments {
        text = text
            .replace(
                "(S-1) segments",
                &format!("{} segments", s.saturating_sub(1)),
            )
            .replace("S+1 segments", &format!("{} segments", s.saturating_add(1)))
            .replace("at most S,", &format!("at most {s},"))
            .replace("N per S", &format!("{limit} per {s}"));
    }
    let formula = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| w == "N" || w == "W" || w == "S");
    if formula {
        let w = window_us as f64 / 1e6;
        text.push_str(&format!("; N = {limit}, W = {w} s"));
        if let Some(s) = segments {
            text.push_str(&format!(", S = {s}"));
        }
    }
    text
}
