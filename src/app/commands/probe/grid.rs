//! The policy grid judged on the probe's trace, and read: the trace as the
//! verifier sees it, the verifier's options, the fits ranked by their
//! replays, the long-run rates they allow and where they disagree, and a
//! proof against a candidate in words.

use super::send;
use crate::analyze::{fit, predict};
use crate::events::Event;
use crate::verify::{self, Obs, Options};
use reference_api::Policy;
use std::time::Duration;

pub(super) fn observations_of(events: &[Event]) -> Vec<Obs> {
    let refs: Vec<&Event> = events.iter().collect();
    let mut obs = send::observations(&refs);
    obs.sort_by_key(|o| o.sent);
    obs
}

/// The verifier's options for the probe: one clock of this machine's
/// (its rate measured against the wall clock, plus the usual margin), no
/// alignment known, and a history known empty only when the key was found
/// (the fit's caller is fresh).
pub(super) fn options(
    unknown_history: bool,
    timeout: Duration,
    samples: &[crate::events::clock::ClockSample],
) -> Options {
    let measured = crate::events::clock::measured_ppm(samples);
    Options {
        unknown_history,
        history_settles_us: timeout.as_micros() as i64,
        clock_rate_ppm: crate::events::clock::allowed_ppm(measured, 0, None),
        ..Options::default()
    }
}

/// The grid around `seen` judged on the fit's events; `None` when
/// nothing was limited.
pub(super) fn judge(
    events: &[Event],
    seen: Option<fit::Glance>,
    opts: &Options,
) -> Option<Vec<fit::Tried>> {
    let obs = observations_of(events);
    Some(fit::judge_walking_sizes(&obs, opts, fit::candidates(seen?)))
}

/// Fits whose long-run rates differ by more than this factor are told
/// apart only by a steady phase between them: the precision the probe
/// prints its rates at (`9 per 2s` and `10 per 2s` differ by 11 %).
pub(super) const TOLD_APART: f64 = 1.05;

/// The long-run rate a candidate allows, per second (a window's limit
/// over the window, a bucket's refill).
pub(super) fn per_second(c: &fit::Candidate) -> f64 {
    fit::long_run_rate(c)
}

/// The admits of `events` per second of their span.
pub(super) fn admits_per_second(events: &[Event]) -> f64 {
    let span_s = events.iter().map(|e| e.done_us).max().unwrap_or(0) as f64 / 1e6;
    let admits = events
        .iter()
        .filter(|e| e.outcome == crate::events::Outcome::Admitted)
        .count();
    if span_s > 0.0 {
        admits as f64 / span_s
    } else {
        0.0
    }
}

/// The slowest and the fastest long-run rate among the fits: every one
/// of them explains every decision, and the proposal is the loosest
/// ([`fit::loosest`]), so the slow ones are as much in question as the
/// fast ones.
pub(super) fn rate_range<'a>(fits: impl IntoIterator<Item = &'a fit::Tried>) -> Option<(f64, f64)> {
    let rates: Vec<f64> = fits.into_iter().map(|t| per_second(&t.candidate)).collect();
    let lo = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = rates.iter().copied().fold(0.0, f64::max);
    (!rates.is_empty()).then_some((lo, hi))
}

/// The decided requests of `events` in the order sent: (sent µs, admitted).
pub(super) fn decisions(events: &[Event]) -> Vec<(i64, bool)> {
    observations_of(events)
        .iter()
        .filter(|o| o.decided != verify::Decided::Unknown)
        .map(|o| (o.sent, o.decided == verify::Decided::Admitted))
        .collect()
}

/// The fits of `tried` on `events`, likeliest first ([`fit::ranked`]).
pub(super) fn likeliest<'a>(
    tried: &'a [fit::Tried],
    events: &[Event],
    epoch_offset: i64,
) -> Vec<&'a fit::Tried> {
    let decided = decisions(events);
    fit::ranked(tried, &|c| {
        predict::disagreements(c, &decided, epoch_offset)
    })
}

/// The fits whose replays of `events` get no more admits wrong than the
/// likeliest one's allow ([`fit::as_good`]), in the order given. The
/// others the verifier could not rule out, but their plainest limiter,
/// replayed, decides far otherwise than this one did (a sliding counter
/// of 5 per 250 ms admits a steady 12 a second that a bucket of 10 a
/// second refused, though no refusal of it is provably false: its
/// estimate may reach the admits of two windows).
pub(super) fn as_good_as_best<'a>(
    fits: &[&'a fit::Tried],
    events: &[Event],
    epoch_offset: i64,
) -> Vec<&'a fit::Tried> {
    let decided = decisions(events);
    let wrong: Vec<usize> = fits
        .iter()
        .map(|t| predict::disagreements(&t.candidate, &decided, epoch_offset))
        .collect();
    let Some(&best) = wrong.iter().min() else {
        return Vec::new();
    };
    fits.iter()
        .zip(wrong)
        .filter(|&(_, w)| w <= fit::as_good(best))
        .map(|(&t, _)| t)
        .collect()
}

/// The policy the probe proposes: the loosest ([`fit::loosest`]) of the
/// fits replaying as well as the likeliest one — when in doubt, the
/// weaker bound.
pub(super) fn proposal<'a>(
    fits: &[&'a fit::Tried],
    events: &[Event],
    epoch_offset: i64,
) -> Option<&'a fit::Tried> {
    fit::loosest(&as_good_as_best(fits, events, epoch_offset))
}

/// When the likeliest fit is a window that one of another window family
/// of the same limit could pass for (a limit of at most 500, a window
/// from 100 ms to 10 s): its limit and window, for the boundary bursts.
pub(super) fn boundary_test(fits: &[&fit::Tried]) -> Option<(u64, Duration)> {
    let best = fits.first()?;
    match best.candidate.policy {
        Policy::SlidingLog { limit, window_us }
        | Policy::FixedWindow { limit, window_us }
        | Policy::SlidingWindow {
            limit, window_us, ..
        }
        | Policy::SlidingCounter { limit, window_us }
            if limit <= 500 && (100_000..=10_000_000).contains(&window_us) =>
        {
            Some((limit, Duration::from_micros(window_us)))
        }
        _ => None,
    }
}

/// While the fits replaying as well as the likeliest ([`as_good_as_best`])
/// disagree on the long-run rate past the probe's precision
/// ([`TOLD_APART`]): the geometric middle of their rates (a steady load
/// at it rules out those slower than it if the limiter admits it all, the
/// faster ones if it refuses some) and their longest window not over a
/// minute, in seconds. The middle of the range, not its median: the fits
/// crowd at the slow end, and a bisection on their median crawled up from
/// the slowest (1, 2, 2.3 a second against HAProxy's 10) until the budget
/// was spent.
pub(super) fn disagreement(
    tried: &[fit::Tried],
    events: &[Event],
    epoch_offset: i64,
) -> Option<(f64, f64)> {
    let fits = as_good_as_best(&fit::fits(tried), events, epoch_offset);
    let (lo, hi) = rate_range(fits.iter().copied())?;
    if hi <= lo * TOLD_APART {
        return None;
    }
    let longest = fits
        .iter()
        .map(|t| t.candidate.policy.quota().1 as f64 / 1e6)
        .filter(|&w| w <= 60.0)
        .fold(0.0, f64::max);
    Some(((lo * hi).sqrt(), longest))
}

/// The first proof against a candidate, in words.
pub(super) fn proof(c: &fit::Candidate, obs: &[Obs], base: &Options) -> String {
    proof_with(&c.policy, obs, &c.options(base))
}

pub(super) fn proof_with(policy: &Policy, obs: &[Obs], opts: &Options) -> String {
    let (_, witnesses) = verify::judge_key(policy, obs, opts, true);
    match witnesses.first() {
        Some(w) => format!(
            "{} in {:.3}–{:.3} s: {}",
            w.kind.name().replace('_', " "),
            w.from_us as f64 / 1e6,
            w.to_us as f64 / 1e6,
            w.rule
        ),
        None => "no single proof kept".into(),
    }
}
