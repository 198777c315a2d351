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

/// The long-run rate a candidate allows, per second (a window's limit
/// over the window, a bucket's refill).
pub(super) fn per_second(c: &fit::Candidate) -> f64 {
    let (limit, window_us) = c.policy.quota();
    limit as f64 * 1e6 / window_us.max(1) as f64
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

/// The slowest and the fastest long-run rate among the plausible fits:
/// those whose bound on these requests is within a quarter of the
/// tightest one's.
fn rate_range(tried: &[fit::Tried]) -> Option<(f64, f64)> {
    let fits = fit::fits(tried);
    let tightest = fits.first()?.verdict.allowed_max;
    let rates = fits
        .iter()
        .filter(|t| t.verdict.allowed_max as f64 <= tightest as f64 * 1.25)
        .map(|t| per_second(&t.candidate));
    let lo = rates.clone().fold(f64::INFINITY, f64::min);
    let hi = rates.fold(0.0, f64::max);
    Some((lo, hi))
}

/// The plausible fits disagree on the rate by more than half: the probe
/// has not told them apart.
fn ambiguous(tried: &[fit::Tried]) -> bool {
    rate_range(tried).is_some_and(|(lo, hi)| hi > lo * 1.5)
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

/// When [`ambiguous`]: the geometric middle of the plausible fits' rates
/// (a steady load at it rules out those slower than it if the limiter
/// admits it all, the faster ones if it refuses some) and the longest
/// plausible window not over a minute, in seconds. The middle of the
/// range, not its median: the plausible fits crowd at the slow end (their
/// bounds are the tight ones), and a bisection on their median crawled up
/// from the slowest (1, 2, 2.3 a second against HAProxy's 10) until the
/// budget was spent.
pub(super) fn disagreement(tried: &[fit::Tried]) -> Option<(f64, f64)> {
    if !ambiguous(tried) {
        return None;
    }
    let (lo, hi) = rate_range(tried)?;
    let fits = fit::fits(tried);
    let tightest = fits.first()?.verdict.allowed_max as f64;
    let longest = fits
        .iter()
        .filter(|t| t.verdict.allowed_max as f64 <= tightest * 1.25)
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
