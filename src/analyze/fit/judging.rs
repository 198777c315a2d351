//! The candidates judged on a trace, each by the verifier; the grid's
//! with the sizes it leaves out walked from its fits. The first burst
//! a glance counts is the limit or the bucket plus whatever came in
//! while it drained: a chunk that lands on a bucket being emptied (up to
//! a whole chunk), the refill of a slow drain, a window's boundary
//! splitting the burst (up to the whole limit). The grid tries sizes
//! within two of the burst and of half of it, so the truth can lie
//! between or below: a bucket of 10 given 5 a second whose chunk lands
//! after 4 of its tokens went, or a fixed window of 10 whose boundary
//! comes after 4 admits, shows a first burst of 14, and the grid's 12…16
//! and 5…9 miss it.
//!
//! So every fit whose next smaller size was not tried is walked down, and
//! every one whose next larger size (up to the grid's largest) was not
//! tried is walked up, while the sizes fit. The fits of one policy (all
//! but its size fixed) are an interval of its size — a smaller limit or
//! bucket only tightens the definite bounds and only loosens the check on
//! rejects, a larger one the other way — so a walk stops at its first
//! miss. This only finds more candidates: each is judged by the verifier
//! like those of the grid.

use super::candidate::{Candidate, Tried};
use crate::verify::{self, Obs, Options};
use rayon::prelude::*;
use reference_api::Policy;
use std::collections::{HashMap, HashSet};

/// Judges every candidate on the trace (`base`: what is known of the
/// limiter's clocks and history).
pub(crate) fn judge(obs: &[Obs], base: &Options, candidates: Vec<Candidate>) -> Vec<Tried> {
    candidates
        .into_par_iter()
        .map(|candidate| {
            let opts = candidate.options(base);
            let verdict = verify::verify_key(&candidate.policy, obs, &opts);
            Tried { candidate, verdict }
        })
        .collect()
}

/// [`judge`] on the grid's `candidates`, then the sizes beside its fits
/// while they fit (see the module's words).
pub(crate) fn judge_walking_sizes(
    obs: &[Obs],
    base: &Options,
    candidates: Vec<Candidate>,
) -> Vec<Tried> {
    let mut tried = judge(obs, base, candidates);
    let known: HashMap<String, bool> = tried
        .iter()
        .map(|t| (t.candidate.inline(), t.fits()))
        .collect();
    let untried = |c: Option<Candidate>| c.is_some_and(|c| !known.contains_key(&c.inline()));
    // Above the grid's largest size no first burst reaches.
    let ceiling = tried
        .iter()
        .filter_map(|t| size(&t.candidate))
        .max()
        .unwrap_or(0);
    let mut walks: Vec<(&Candidate, Walk)> = Vec::new();
    for t in tried.iter().filter(|t| t.fits()) {
        let (c, n) = (&t.candidate, size(&t.candidate).unwrap_or(0));
        if untried(n.checked_sub(1).and_then(|m| with_size(c, m))) {
            walks.push((c, Walk::Down(n - floor(c))));
        }
        if n < ceiling && untried(with_size(c, n + 1)) {
            walks.push((c, Walk::Up(ceiling - n)));
        }
    }
    let found: Vec<Tried> = walks
        .into_par_iter()
        .flat_map_iter(|(c, way)| walk(obs, base, c, way, &known))
        .collect();
    // Walks of one policy from two fits may judge a size both.
    let mut added = HashSet::new();
    for t in found {
        if added.insert(t.candidate.inline()) {
            tried.push(t);
        }
    }
    tried
}

/// Sizes walked one by one beside a fit, each judged: every size that
/// fits this near is on the list (the ranking may prefer any).
pub(super) const ONE_BY_ONE: u64 = 32;

/// Which way a walk goes from its fit, and how many sizes it may go.
#[derive(Clone, Copy)]
enum Walk {
    Down(u64),
    Up(u64),
}

/// The candidates judged walking from `fit` (which fits) towards the
/// farthest size that fits: one size at a time for [`ONE_BY_ONE`] sizes,
/// then, further (a limit in the hundreds), twice as far each time while
/// they fit and halving back between the last fit and the first miss.
/// Sizes judged already (`known`) are read, not judged again.
fn walk(
    obs: &[Obs],
    base: &Options,
    fit: &Candidate,
    way: Walk,
    known: &HashMap<String, bool>,
) -> Vec<Tried> {
    let Some(from) = size(fit) else {
        return Vec::new();
    };
    let (reach, size_at): (u64, &dyn Fn(u64) -> u64) = match way {
        Walk::Down(reach) => (reach, &|d| from - d),
        Walk::Up(reach) => (reach, &|d| from + d),
    };
    let mut judged = Vec::new();
    let mut fits_at = |d: u64| -> bool {
        let Some(c) = with_size(fit, size_at(d)) else {
            return false;
        };
        if let Some(&fits) = known.get(&c.inline()) {
            return fits;
        }
        let t = judge(obs, base, vec![c]).remove(0);
        let fits = t.fits();
        judged.push(t);
        fits
    };
    // `far` fits; `miss`, once found, does not.
    let mut far = 0;
    while far < reach && far < ONE_BY_ONE {
        if !fits_at(far + 1) {
            return judged;
        }
        far += 1;
    }
    let (mut miss, mut step) = (None::<u64>, 2u64);
    while miss.is_none() && far < reach {
        let next = far.saturating_add(step).min(reach);
        if fits_at(next) {
            far = next;
            step = step.saturating_mul(2);
        } else {
            miss = Some(next);
        }
    }
    if let Some(mut miss) = miss {
        while far + 1 < miss {
            let mid = far + (miss - far) / 2;
            if fits_at(mid) {
                far = mid;
            } else {
                miss = mid;
            }
        }
    }
    judged
}

/// A candidate's size: its limit, or its bucket's capacity (`None` for
/// what the grid does not hold).
fn size(c: &Candidate) -> Option<u64> {
    match c.policy {
        Policy::SlidingLog { limit, .. }
        | Policy::SlidingWindow { limit, .. }
        | Policy::FixedWindow { limit, .. }
        | Policy::SlidingCounter { limit, .. } => Some(limit),
        Policy::TokenBucket { capacity, .. } => Some(capacity),
        Policy::Gcra { .. } => None,
    }
}

/// The least size a candidate may have: one, or a chunked bucket's chunk
/// (a chunk bigger than the bucket fills it all the same; the grid holds
/// none).
fn floor(c: &Candidate) -> u64 {
    match c.policy {
        Policy::TokenBucket { refill, .. } if c.chunked => refill.count.max(1),
        _ => 1,
    }
}

/// The candidate with `n` for its size; `None` below its floor.
fn with_size(c: &Candidate, n: u64) -> Option<Candidate> {
    if n < floor(c) {
        return None;
    }
    let policy = match c.policy {
        Policy::SlidingLog { window_us, .. } => Policy::SlidingLog {
            limit: n,
            window_us,
        },
        Policy::SlidingWindow {
            window_us,
            segments,
            ..
        } => Policy::SlidingWindow {
            limit: n,
            window_us,
            segments,
        },
        Policy::FixedWindow { window_us, .. } => Policy::FixedWindow {
            limit: n,
            window_us,
        },
        Policy::SlidingCounter { window_us, .. } => Policy::SlidingCounter {
            limit: n,
            window_us,
        },
        Policy::TokenBucket { refill, .. } => Policy::TokenBucket {
            capacity: n,
            refill,
        },
        Policy::Gcra { .. } => return None,
    };
    Some(Candidate {
        policy,
        ..c.clone()
    })
}
