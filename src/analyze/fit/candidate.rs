//! One candidate policy of the fit's grid, and what the verifier said of
//! it: its verifier options, its `[policy]` lines and its words.

use crate::verify::{Options, Verdict};
use reference_api::Policy;

/// One policy a limiter may enforce, as the verifier judges it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Candidate {
    pub policy: Policy,
    /// Rejected attempts count too (HAProxy's stick tables).
    pub count_rejected: bool,
    /// A token bucket that refills in whole chunks (`refill` a chunk per
    /// its period; Stripe's style, ASP.NET's TokenBucketRateLimiter) at an
    /// unknown phase, not continuously.
    pub chunked: bool,
}

/// A candidate and what the verifier said of it on the trace.
#[derive(Clone, Debug)]
pub(crate) struct Tried {
    pub candidate: Candidate,
    pub verdict: Verdict,
}

impl Tried {
    pub(crate) fn fits(&self) -> bool {
        self.verdict.definite_violations == 0 && self.verdict.false_rejects == 0
    }
}

/// A duration as a scenario writes it: "1s", "250ms", "1m".
pub(crate) fn span_text(us: u64) -> String {
    if us % 60_000_000 == 0 {
        format!("{}m", us / 60_000_000)
    } else if us % 1_000_000 == 0 {
        format!("{}s", us / 1_000_000)
    } else {
        format!("{}ms", us / 1_000)
    }
}

impl Candidate {
    /// The verifier's options for it, on `base` (what is known of the
    /// limiter's clocks and history): whether rejects count, whether the
    /// bucket refills in chunks (of an unknown phase).
    pub(crate) fn options(&self, base: &Options) -> Options {
        Options {
            count_rejected: self.count_rejected,
            chunked_refill: self.chunked,
            chunks_on_epoch: false,
            ..*base
        }
    }

    /// The `[policy]` lines that state it.
    pub(crate) fn lines(&self) -> String {
        let mut s = match self.policy {
            Policy::SlidingLog { limit, window_us }
            | Policy::FixedWindow { limit, window_us }
            | Policy::SlidingCounter { limit, window_us } => format!(
                "algorithm = \"{}\"\nlimit = {limit}\nwindow = \"{}\"\n",
                self.policy.algorithm(),
                span_text(window_us)
            ),
            Policy::SlidingWindow {
                limit,
                window_us,
                segments,
            } => format!(
                "algorithm = \"sliding_window\"\nlimit = {limit}\nwindow = \"{}\"\nsegments = {segments}\n",
                span_text(window_us)
            ),
            Policy::TokenBucket { capacity, refill } if self.chunked => format!(
                "algorithm = \"token_bucket\"\ncapacity = {capacity}\nrefill = \"{}/{}\"\nrefill_every = \"{}\"\n",
                refill.count,
                span_text(refill.per_us),
                span_text(refill.per_us)
            ),
            Policy::TokenBucket { capacity, refill } => format!(
                "algorithm = \"token_bucket\"\ncapacity = {capacity}\nrefill = \"{}/{}\"\n",
                refill.count,
                span_text(refill.per_us)
            ),
            Policy::Gcra { rate, burst } => format!(
                "algorithm = \"gcra\"\nrate = \"{}/{}\"\nburst = {burst}\n",
                rate.count,
                span_text(rate.per_us)
            ),
        };
        if self.count_rejected {
            s.push_str("count_rejected = true\n");
        }
        s
    }

    /// The lines on one line, as `--policy` takes them.
    pub(crate) fn inline(&self) -> String {
        self.lines().trim_end().replace('\n', ", ")
    }

    /// In words, with the limiters people run that state it so.
    pub(crate) fn describe(&self) -> String {
        let mut s = self.policy.describe();
        if self.count_rejected {
            s.push_str(", rejected requests counted too");
        }
        if self.chunked {
            s.push_str(" in whole chunks (Stripe's style, ASP.NET's TokenBucketRateLimiter)");
        }
        if let (Policy::TokenBucket { capacity, refill }, false) = (&self.policy, self.chunked) {
            let (capacity, refill) = (*capacity, *refill);
            if refill.per_us == 1_000_000 {
                s.push_str(&format!(
                    " (nginx: rate={}r/s burst={} nodelay; governor: \
                     Quota::per_second({}).allow_burst({}))",
                    refill.count,
                    capacity - 1,
                    refill.count,
                    capacity
                ));
            }
        }
        s
    }
}
