//! Which rate each of the fit's rounds sends: one rest and saturation
//! again (it tells a refill from a window); then, while the closest fits
//! disagree on the long-run rate, a steady phase at the middle of their
//! rates (geometric): a policy slower than it is caught admitting too
//! much, one faster refusing what it allows — a bisection on the rate,
//! each step proven by the verifier.

use super::grid::{admits_per_second, as_good_as_best, disagreement, TOLD_APART};
use crate::analyze::fit;
use crate::events::Event;
use std::time::Duration;

/// What one round sends: `count` requests at `rate` after `wait` at rest.
pub(super) struct Round {
    pub wait: Duration,
    pub rate: f64,
    pub count: u64,
}

/// The rounds so far, and what the limiter did with their steady loads.
pub(super) struct Bisection {
    /// The first round's rest, its rate and its least count.
    rest: Duration,
    saturate_rate: f64,
    burst: u64,
    /// The rounds begun.
    round: u32,
    tried_rates: Vec<f64>,
    admitted_at: Option<f64>,
    refused_at: Option<f64>,
}

impl Bisection {
    /// Before the first round: it rests `rest`, then sends at least
    /// `burst` requests at `saturate_rate`.
    pub(super) fn new(rest: Duration, saturate_rate: f64, burst: u64) -> Self {
        Bisection {
            rest,
            saturate_rate,
            burst,
            round: 0,
            tried_rates: Vec::new(),
            admitted_at: None,
            refused_at: None,
        }
    }

    /// The next round, on the fits `judged` so far on `events`; `None`
    /// when the fits agree, the steps have closed in, or there were enough.
    pub(super) fn next(
        &mut self,
        judged: Option<&[fit::Tried]>,
        events: &[Event],
        epoch_offset: i64,
    ) -> Option<Round> {
        let next = if self.round == 0 {
            Round {
                wait: self.rest,
                rate: self.saturate_rate,
                count: self
                    .burst
                    .max((self.rest.as_secs_f64() * self.saturate_rate) as u64),
            }
        } else {
            let (mid, longest) = judged.and_then(|t| disagreement(t, events, epoch_offset))?;
            // The next rate from what the limiter did: up by doubling
            // while it admits a steady load whole, then a bisection
            // between the fastest it admitted and the slowest it refused
            // (the verifier turns each step into proofs; this only picks
            // where to look).
            let mid = match (self.admitted_at, self.refused_at) {
                // Not slower than the fit's admits so far came: a
                // saturated limiter admits about its rate, so a first
                // step from the fits' slow end (1 a second against
                // HAProxy's 10) would spend the budget crawling up.
                (None, None) => mid.max(admits_per_second(events)),
                (Some(a), None) => a * 2.0,
                (None, Some(r)) => r / 2.0,
                (Some(a), Some(r)) if r / a < TOLD_APART => return None,
                (Some(a), Some(r)) => (a * r).sqrt(),
            };
            // At least 1 a second: slower steps tell little in the time.
            let mid = mid.max(1.0);
            if self.round > 12
                || self
                    .tried_rates
                    .iter()
                    .any(|r: &f64| (r / mid - 1.0).abs() < (TOLD_APART - 1.0) / 2.0)
            {
                return None;
            }
            self.tried_rates.push(mid);
            let secs = (2.0 * longest).clamp(2.0, 8.0);
            Round {
                wait: Duration::ZERO,
                rate: mid,
                count: (mid * secs) as u64,
            }
        };
        self.round += 1;
        Some(next)
    }

    /// What the limiter did with a round's `events` sent at `rate`, kept
    /// for the steady rounds (those after the second saturation).
    pub(super) fn heard(&mut self, rate: f64, events: &[Event]) {
        if self.round <= 1 {
            return;
        }
        // Judged on its second half: the refusals at its start may be
        // the saturation before it still counted (a limiter counting
        // rejects remembers them for a window).
        let mut sent: Vec<&Event> = events.iter().collect();
        sent.sort_by_key(|e| e.sent_us);
        let late = &sent[sent.len() / 2..];
        let refused = late
            .iter()
            .filter(|e| e.outcome == crate::events::Outcome::Rejected)
            .count() as u64;
        // (At a fortieth, a step 5 % over the limiter's rate, about 5 %
        // of it refused, reads as refused: the bisection closes in at the
        // probe's precision.)
        if refused <= (late.len() as u64 / 40).max(1) {
            self.admitted_at = Some(self.admitted_at.map_or(rate, |a: f64| a.max(rate)));
        } else {
            self.refused_at = Some(self.refused_at.map_or(rate, |r: f64| r.min(rate)));
        }
    }
}

/// When the fits replaying as well as the likeliest still differ in their
/// bursts (a bucket of 10, 11 or 12 given 5 a second: a chunk landing
/// inside a burst hides which), one round that tells them apart: a rest
/// long enough for the largest to fill whole (its burst at its rate, and
/// a second more), then a burst of a few more requests than it holds,
/// sent fast enough that little refills meanwhile. The limiter's own then
/// refuses where a larger one would not: a false reject, proven.
pub(super) fn fill_round(
    judged: Option<&[fit::Tried]>,
    events: &[Event],
    epoch_offset: i64,
) -> Option<Round> {
    let fits = as_good_as_best(&fit::fits(judged?), events, epoch_offset);
    let bursts: Vec<u64> = fits.iter().map(|t| fit::burst(&t.candidate)).collect();
    let (least, most) = (*bursts.iter().min()?, *bursts.iter().max()?);
    if least == most {
        return None;
    }
    let fill_s = fits
        .iter()
        .map(|t| fit::burst(&t.candidate) as f64 / fit::long_run_rate(&t.candidate).max(0.01))
        .fold(0.0, f64::max)
        + 1.0;
    let fastest = fits
        .iter()
        .map(|t| fit::long_run_rate(&t.candidate))
        .fold(0.0, f64::max);
    Some(Round {
        wait: Duration::from_secs_f64(fill_s.min(10.0)),
        rate: (20.0 * fastest).clamp(50.0, 1_000.0),
        count: most + 3,
    })
}
