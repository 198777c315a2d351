//! What a policy bounds before any trace is read: the band a correct run's
//! admits stay inside (the admitted-vs-allowed chart), and from which
//! answer time admits are too slow for its sharp rules.

use crate::requests::timing;
use crate::trace::Options;
use crate::{removal, rules};
use rlbench_policy::Policy;

/// The most admits a correct limiter may decide within any span shorter
/// than `span_us` (µs on the trace's clock, the policy's window shrunk by
/// the clocks' rate and the slack), and the rule that says so in words:
/// what the admitted-vs-allowed chart draws as the band a correct run stays
/// inside. The least of the rules that hold for any alignment and any
/// request (the grid's and those that need short intervals left out, so
/// the band is never tighter than a rule the verifier applies). `None`
/// when no such rule bounds a span that short, or when the slack is as
/// long as the (shrunk) window: then no span is short enough.
pub fn band(policy: &Policy, opts: &Options) -> Option<Band> {
    let t = timing(opts);
    let rules = rules::for_policy(policy, t);
    // Admits counted in a span shorter than `span` are held, slack and
    // all, for less than `held`: a rule for spans up to `held` applies.
    let held = rules::shrink(rules.peak.1, t.rate_ppm);
    // A span of 1 µs is still held for `1 + slack`: with a slack as long
    // as the window no span short enough exists, and no band is drawn
    // (clamping it to 1 µs would claim a rule where none applies).
    let span = held.saturating_sub(opts.slack_us.max(0));
    if span < 1 {
        return None;
    }
    let (limit, _) = rules.peak;
    rules
        .definite
        .iter()
        .filter(|r| r.shorter_than.is_none())
        .filter_map(|r| {
            let most = match r.bound {
                removal::Bound::Window { limit, span: s, .. } => (held <= s).then_some(limit),
                removal::Bound::Linear {
                    burst,
                    count,
                    per,
                    max_span,
                } => max_span
                    .map_or(true, |m| held <= m)
                    .then(|| burst + (held as u128 * count as u128 / per.max(1) as u128) as u64),
            }?;
            Some((most, r))
        })
        .min_by_key(|(most, _)| *most)
        .map(|(most, r)| Band {
            span_us: span,
            limit,
            most,
            why: r.words(policy),
        })
}

/// See [`band`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Band {
    /// Spans shorter than this (µs) hold at most `most` admits.
    pub span_us: i64,
    /// The policy's limit per its natural window.
    pub limit: u64,
    pub most: u64,
    /// The rule, with the policy's numbers.
    pub why: String,
}

/// Where answers become too slow for the policy's sharp rules: admits
/// whose interval plus slack reaches `from_us` fit in no span those rules
/// count in, and only `left` can be proven of them (a segmented window on
/// several clocks: its segments' rate; a sliding log: nothing). `None`
/// when every rule speaks of admits however slow (buckets, fixed windows).
/// [`Verdict::slow_admits`] counts them.
pub fn too_slow(policy: &Policy, opts: &Options) -> Option<TooSlow> {
    let slow = rules::for_policy(policy, timing(opts)).slow?;
    let left = match *policy {
        Policy::SlidingWindow {
            limit,
            window_us,
            segments,
        } => format!(
            "only more than {limit} per segment of {} s over long spans",
            (window_us / segments.max(1)) as f64 / 1e6
        ),
        _ => "nothing".to_string(),
    };
    Some(TooSlow {
        from_us: slow.from,
        left,
    })
}

/// See [`too_slow`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TooSlow {
    /// Interval plus slack (µs) from which an admit is too slow.
    pub from_us: i64,
    /// What can still be proven of such admits, in words.
    pub left: String,
}
