//! The rules' vocabulary: a bound and what it needs to hold, a policy's
//! rules and the timing they are built for, spans shrunk or grown by the
//! clocks' rate, the common bounds (a window, windows over time, N per
//! window), and a rule's words with the policy's numbers in place.

use crate::attempts::Attempts;
use crate::false_reject::RejectCheck;
use crate::grid::Grid;
use crate::removal::{Bound, Item};
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
    /// Tokens a bucket may bank while full (`Options::banked_tokens`).
    pub banked: u64,
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

pub(crate) fn rule(bound: Bound, why: &'static str) -> Rule {
    Rule {
        bound,
        why,
        shorter_than: None,
        after: None,
        segments_apart: 0,
    }
}

pub(crate) fn window(limit: u64, span: i64) -> Bound {
    Bound::Window {
        limit,
        span,
        inclusive: false,
    }
}

/// At most `burst + L·per_window/w` admits in any span L.
pub(crate) fn windows_over_time(per_window: u64, burst: u64, w: i64) -> Bound {
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
pub(crate) enum Unit {
    Window,
    Segment,
}

/// `limit` per window of `w` (of any alignment, each at least `w` long):
/// 2N within less than `w`, `(k+1)·N` within `k·w` for k = 2 and 3, and
/// `N·(2 + L/w)` within any L.
pub(crate) fn per_window(limit: u64, w: i64, unit: Unit) -> Vec<Rule> {
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
