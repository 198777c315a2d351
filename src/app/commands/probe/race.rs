//! The starter's bursts arm rehearsed before it is written: its sends
//! (the arm's own bursts schedule, each key picked as the load picks it)
//! decided by simulated limiters of the fitted policy and judged by the
//! verifier as the steady arm's rehearsal judges them ([`rehearse`]).
//! One limiter as it should be, and one that checks a key's count and
//! counts the request [`GAP_US`] later — a read then a write, an `await`
//! between them, the race teams ship inside one process — so a key's
//! requests closer together than that race past the limit
//! ([`predict::decide_racing`], the plainest limiter of the policy's
//! writing, not the verifier's replay). A race narrower than the gap may
//! go unseen, and the comment says so.

use super::rehearse;
use crate::analyze::fit::Candidate;
use crate::analyze::predict;
use crate::load::schedule::{Schedule, Shape};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::time::Duration;

/// How far apart the simulated race's check and count are (µs): a
/// round trip to a store on this machine's network, or a handler's
/// `await` between reading a count and writing it.
pub(super) const GAP_US: i64 = 1_000;

/// Sends rehearsed per key, at most: the racing limiter decides each
/// send on all before it.
const MOST_PER_KEY: usize = 2_000;

/// The bursts arm's load.
#[derive(Clone, Copy, Debug)]
pub(super) struct Bursts {
    /// Requests at each window edge, over all keys.
    pub per_edge: u32,
    pub spread: Duration,
    pub keys: u32,
    pub duration_s: u64,
}

/// What the rehearsal proved: the correct limiter's definite violations
/// and false rejects (both zero, or the rehearsal itself is wrong), and
/// the racing limiter's admits proven past the policy.
#[derive(Debug, PartialEq)]
pub(super) struct Raced {
    pub correct: (u64, u64),
    pub race: u64,
}

/// Rehearses `load` under `best` (seeded: the same answer every time).
pub(super) fn rehearse(best: &Candidate, load: &Bursts, seed: u64) -> Raced {
    let sends = sends(best, load, seed);
    let opts = best.options(&rehearse::options());
    let judged = |decide: &dyn Fn(&[i64]) -> Vec<bool>| {
        let admitted = per_key(&sends, decide);
        rehearse::judge(best, &sends, &admitted, &opts)
    };
    Raced {
        correct: judged(&|times| predict::decide(best, times, 0)),
        race: judged(&|times| predict::decide_racing(best, times, GAP_US, 0)).0,
    }
}

/// The arm's sends in order, (µs, key): its bursts around the edges of
/// the policy's window on the epoch grid (trace time 0 on a line, as the
/// simulated limiters' windows), keys picked uniformly; at most
/// [`MOST_PER_KEY`] of a key's.
fn sends(best: &Candidate, load: &Bursts, seed: u64) -> Vec<(i64, u32)> {
    let window = Duration::from_micros(crate::verify::window(&best.policy).1.max(1) as u64);
    let shape = Shape::Bursts {
        per_edge: load.per_edge,
        spread: load.spread,
        window,
    };
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut each: HashMap<u32, usize> = HashMap::new();
    Schedule::new(&shape, Duration::from_secs(load.duration_s), seed, 0)
        .map(|at| {
            (
                at.as_micros().min(i64::MAX as u128) as i64,
                rng.random_range(0..load.keys.max(1)),
            )
        })
        .filter(|&(_, key)| {
            let n = each.entry(key).or_default();
            *n += 1;
            *n <= MOST_PER_KEY
        })
        .collect()
}

/// Each send decided by `decide` over its key's sends alone.
fn per_key(sends: &[(i64, u32)], decide: &dyn Fn(&[i64]) -> Vec<bool>) -> Vec<bool> {
    let mut keys: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, &(_, key)) in sends.iter().enumerate() {
        keys.entry(key).or_default().push(i);
    }
    let mut admitted = vec![false; sends.len()];
    for indices in keys.values() {
        let times: Vec<i64> = indices.iter().map(|&i| sends[i].0).collect();
        for (&i, a) in indices.iter().zip(decide(&times)) {
            admitted[i] = a;
        }
    }
    admitted
}

#[cfg(test)]
mod tests;

/// The most requests the starter's bursts send at one edge.
pub(super) const MOST_PER_EDGE: u64 = 2_000;

/// The rehearsal's seeds and longest stretch, as the steady arm's.
const SEEDS: [u64; 3] = [1, 2, 3];
pub(super) const REHEARSED_S: u64 = 30;

/// The starter's bursts for `best` over `keys` keys: about twice each
/// key's limit at every edge, within `spread` — or, when a race 1 ms wide
/// goes unproven under any seed, twice and then four times that (at most
/// [`MOST_PER_EDGE`]); with the fewest admits the race was proven by
/// under every seed (`None`: not proven even so).
pub(super) fn starter_bursts(
    best: &Candidate,
    keys: u32,
    spread: Duration,
    duration_s: u64,
) -> (u64, Option<u64>) {
    let (limit, _) = best.policy.quota();
    let mut last = (0, None);
    for times in [1, 2, 4] {
        let per_edge = (2 * limit * keys as u64 * times).clamp(10, MOST_PER_EDGE);
        let load = Bursts {
            per_edge: per_edge as u32,
            spread,
            keys,
            duration_s: duration_s.min(REHEARSED_S),
        };
        let fewest = SEEDS
            .iter()
            .map(|&seed| rehearse(best, &load, seed).race)
            .min()
            .unwrap_or(0);
        last = (per_edge, (fewest > 0).then_some(fewest));
        if fewest > 0 || per_edge >= MOST_PER_EDGE {
            break;
        }
    }
    last
}
