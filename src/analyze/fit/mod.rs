//! The policy fit (`rlbench probe`, and a run's hint when its declared
//! policy is proven wrong): every policy of a broad grid — each
//! algorithm family with the limits, windows, capacities and rates people
//! write — judged by the verifier itself against one key's probing trace.
//! A candidate fits when the trace holds no definite violation and no false
//! reject under it; the verifier is sound, so the limiter's true policy
//! (when it is on the grid, or below a fit of it: [`judge_walking_sizes`])
//! always fits, and a trace that saturates the key,
//! rests and saturates it again rules most of the others out with a proof.
//! Of the fits, the loosest ([`loosest`]: the fastest long-run rate, then
//! the most admits allowed) is the one proposed: when in doubt, the
//! weaker bound — a policy stricter than the limiter keeps would fail it
//! as correct.

mod candidate;
mod grid;
mod judging;

pub(crate) use candidate::{Candidate, Tried};
pub(crate) use grid::{candidates, glance, Glance};
pub(crate) use judging::{judge, judge_walking_sizes};

use rayon::prelude::*;
use reference_api::Policy;

/// A family's place when two fits are equally tight: the stricter and
/// commoner first.
fn family_rank(c: &Candidate) -> u8 {
    let base = match c.policy {
        Policy::TokenBucket { .. } | Policy::Gcra { .. } => 0,
        Policy::SlidingLog { .. } => 1,
        Policy::SlidingWindow { .. } => 2,
        Policy::SlidingCounter { .. } => 3,
        Policy::FixedWindow { .. } => 4,
    };
    base + if c.count_rejected { 5 } else { 0 } + u8::from(c.chunked)
}

/// How plainly a candidate is written: a rate per second before one per
/// minute (people write `10r/s`, and a tie between `5/1s` and `340/1m` on
/// a short trace is no reason to propose the odd one).
fn plainness(c: &Candidate) -> u8 {
    match c.policy {
        Policy::TokenBucket { refill: r, .. } | Policy::Gcra { rate: r, .. } => {
            u8::from(r.per_us != 1_000_000)
        }
        _ => 0,
    }
}

/// The slower of two equally tight refills first (the tighter claim).
fn refill_per_second(c: &Candidate) -> u64 {
    match c.policy {
        Policy::TokenBucket { refill: r, .. } | Policy::Gcra { rate: r, .. } => {
            (r.count as u128 * 1_000_000_000 / r.per_us.max(1) as u128) as u64
        }
        _ => 0,
    }
}

/// The fits, tightest first: the least over-admission bound U (the most
/// admits the policy allowed these requests), then the family, the
/// plainer writing, the slower refill and the shorter window.
pub(crate) fn fits(tried: &[Tried]) -> Vec<&Tried> {
    let mut fits: Vec<&Tried> = tried.iter().filter(|t| t.fits()).collect();
    fits.sort_by_key(|t| tightness(t));
    fits
}

fn tightness(t: &Tried) -> (u64, u8, u8, u64, u64) {
    (
        t.verdict.allowed_max,
        family_rank(&t.candidate),
        plainness(&t.candidate),
        refill_per_second(&t.candidate),
        t.candidate.policy.quota().1,
    )
}

/// The fits, likeliest first: those whose replays get the fewest
/// admits wrong (`wrong`), where every fit within a quarter of the best's
/// errors (at least 2) of the best is as good — a boundary's
/// jitter is no reason to propose `301/1m` over `5/1s` — and comes in the
/// order of [`fits`]; the rest follow by their wrong decisions.
pub(crate) fn ranked<'a>(
    tried: &'a [Tried],
    wrong: &(dyn Fn(&Candidate) -> usize + Sync),
) -> Vec<&'a Tried> {
    rerank(fits(tried), wrong)
}

/// The most wrong admits a replay may have and be as good as one with
/// `best`.
pub(crate) fn as_good(best: usize) -> usize {
    best + (best / 4).max(2)
}

/// [`ranked`] over some of the fits.
pub(crate) fn rerank<'a>(
    mut fits: Vec<&'a Tried>,
    wrong: &(dyn Fn(&Candidate) -> usize + Sync),
) -> Vec<&'a Tried> {
    fits.sort_by_key(|t| tightness(t));
    let mut scored: Vec<(usize, &Tried)> = fits
        .into_par_iter()
        .map(|t| (wrong(&t.candidate), t))
        .collect();
    let Some(best) = scored.iter().map(|(w, _)| *w).min() else {
        return Vec::new();
    };
    // A replay that slips by one request slips every later one with it
    // (a bucket of one): a quarter of the best's errors is noise too.
    let good = as_good(best);
    // Stable: the as-good keep their order, but a bucket refilled in
    // chunks goes after the plainer writings as good as it (its chunks'
    // phase and size bend to a short trace: a sliding counter of 10 a
    // second replays like a bucket of 8 given 5 every half second).
    scored.sort_by_key(|&(w, t)| {
        if w <= good {
            (0, u8::from(t.candidate.chunked))
        } else {
            (w, u8::from(t.candidate.chunked))
        }
    });
    scored.into_iter().map(|(_, t)| t).collect()
}

/// The long-run rate a candidate allows, admits per second (a window's
/// limit over the window, a bucket's refill).
pub(crate) fn long_run_rate(c: &Candidate) -> f64 {
    let (limit, window_us) = c.policy.quota();
    limit as f64 * 1e6 / window_us.max(1) as f64
}

/// Two long-run rates the same as written (`10/1s` and `600/1m`).
fn same_rate(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.max(b)
}

/// How many admits a candidate lets through at once from rest: a
/// window's limit, a bucket's capacity, GCRA's burst.
pub(crate) fn burst(c: &Candidate) -> u64 {
    match c.policy {
        Policy::SlidingLog { limit, .. }
        | Policy::FixedWindow { limit, .. }
        | Policy::SlidingWindow { limit, .. }
        | Policy::SlidingCounter { limit, .. } => limit,
        Policy::TokenBucket { capacity, .. } => capacity,
        Policy::Gcra { burst, .. } => burst,
    }
}

/// Two candidates of one writing but for their sizes: the same algorithm,
/// rejects counted alike, refilled alike.
fn same_shape(a: &Candidate, b: &Candidate) -> bool {
    a.policy.algorithm() == b.policy.algorithm()
        && a.count_rejected == b.count_rejected
        && a.chunked == b.chunked
}

/// The loosest of `fits` (given likeliest first): the fastest long-run
/// rate; of those as fast, the first given's writing; of that writing,
/// the largest burst (then the first given). Every fit explains every
/// decision, so the limiter's own policy may be any of them: declaring
/// the loosest never fails a limiter that keeps a slower or smaller one
/// ("when in doubt, the weaker bound"), where the tightest failed one
/// whose rate the probe could not tell from a slower one's. Writings are
/// not ranked against each other by burst: a bucket of 9 refilled 5 each
/// half second and one of 6 refilled continuously at 10 a second each let
/// more through in some spans, and the likeliest is the better guess.
pub(crate) fn loosest<'a>(fits: &[&'a Tried]) -> Option<&'a Tried> {
    let fastest = fits
        .iter()
        .map(|t| long_run_rate(&t.candidate))
        .fold(f64::NEG_INFINITY, f64::max);
    let as_fast = |t: &&&Tried| same_rate(long_run_rate(&t.candidate), fastest);
    let first = *fits.iter().find(as_fast)?;
    let mut best = first;
    for &t in fits.iter().filter(as_fast) {
        if same_shape(&t.candidate, &first.candidate)
            && burst(&t.candidate) > burst(&best.candidate)
        {
            best = t;
        }
    }
    Some(best)
}

/// A family's name for grouping what was ruled out.
pub(crate) fn family(c: &Candidate) -> String {
    let name = match c.policy {
        Policy::TokenBucket { .. } | Policy::Gcra { .. } => "token bucket",
        Policy::SlidingLog { .. } => "sliding log",
        Policy::SlidingWindow { .. } => "segmented sliding window",
        Policy::SlidingCounter { .. } => "sliding counter",
        Policy::FixedWindow { .. } => "fixed window",
    };
    if c.count_rejected {
        format!("{name} counting rejects")
    } else {
        name.to_string()
    }
}

/// Per family, the candidate nearest to fitting (fewest definite
/// violations plus false rejects), when no candidate of it fits.
pub(crate) fn nearest_misses(tried: &[Tried]) -> Vec<&Tried> {
    let mut by_family: Vec<(String, &Tried)> = Vec::new();
    for t in tried {
        let f = family(&t.candidate);
        let wrong = |t: &Tried| t.verdict.definite_violations + t.verdict.false_rejects;
        match by_family.iter_mut().find(|(name, _)| *name == f) {
            Some((_, best)) => {
                if t.fits() || (!best.fits() && wrong(t) < wrong(best)) {
                    *best = t;
                }
            }
            None => by_family.push((f, t)),
        }
    }
    by_family
        .into_iter()
        .map(|(_, t)| t)
        .filter(|t| !t.fits())
        .collect()
}

#[cfg(test)]
mod tests;
