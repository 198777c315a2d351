//! The starter's load rehearsed before it is written: its sends, spaced
//! as its constant schedule spaces them over its keys, decided by
//! simulated limiters of the fitted policy (the plainest limiter of its
//! writing, [`predict::decide`] — not the verifier's replay) and judged by
//! the verifier as `run` judges an external target (an unknown history,
//! the default clock allowance, a generous clock rate). One limiter as it
//! should be, then the faults teams ship:
//!
//! - two limiters counting apart, requests alternating between them (two
//!   replicas behind a balancer);
//! - four workers each counting alone, each request to any of them (one
//!   key's requests spread over keep-alive connections);
//! - a limiter that keeps fewer keys than the load sends (an LRU cache),
//!   a key it forgot starting afresh.
//!
//! A fault the verifier proves at this load would be proven on the wire
//! too when the limiter does what the simulation does; one it does not
//! prove, the starter's comment says it cannot catch. A race between
//! concurrent requests of one key is not simulated: at a constant rate a
//! key's requests rarely overlap, and the comment says so.

use crate::analyze::fit::Candidate;
use crate::analyze::predict;
use crate::verify::{self, Decided, Obs, Options};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;

/// How long a simulated request is in flight (µs): a loopback answer.
const IN_FLIGHT_US: i64 = 1_000;

/// The workers of the per-worker fault.
pub(super) const WORKERS: usize = 4;

/// The load rehearsed.
#[derive(Clone, Copy, Debug)]
pub(super) struct Load {
    /// Requests per second over all keys.
    pub rate: f64,
    pub keys: u32,
    pub duration_s: u64,
    /// Keys in a sweep (the first this many times in a row, then each
    /// other once, in turn), as `key_distribution = "sweep"` sends them;
    /// `None`: picked uniformly.
    pub sweep: Option<u32>,
}

/// A limiter simulated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Fault {
    /// Two limiters counting apart, the requests alternating.
    Pair,
    /// [`WORKERS`] workers each counting alone, each request to any.
    Workers,
    /// One limiter that keeps at most this many keys, the least recently
    /// seen forgotten.
    Forgets(usize),
}

impl Fault {
    pub(super) fn words(self) -> String {
        match self {
            Fault::Pair => "two limiters counting apart".into(),
            Fault::Workers => format!("{WORKERS} workers each counting alone"),
            Fault::Forgets(n) => format!("a limiter that keeps only its last {n} keys"),
        }
    }
}

/// What the rehearsal proved of each limiter: admits proven past the
/// policy (and, for the correct one, refusals proven wrong too).
#[derive(Debug)]
pub(super) struct Rehearsal {
    /// The correct limiter's definite violations and false rejects: both
    /// zero, or the rehearsal itself is wrong.
    pub correct: (u64, u64),
    /// Each fault with the admits proven past the policy.
    pub faults: Vec<(Fault, u64)>,
}

impl Rehearsal {
    pub(super) fn caught(&self) -> impl Iterator<Item = Fault> + '_ {
        self.faults.iter().filter(|f| f.1 > 0).map(|f| f.0)
    }

    pub(super) fn missed(&self) -> impl Iterator<Item = Fault> + '_ {
        self.faults.iter().filter(|f| f.1 == 0).map(|f| f.0)
    }
}

/// The faults rehearsed for `load`: a limiter forgetting keys is only
/// one when the load has more keys than it keeps (a third fewer).
pub(super) fn faults(load: &Load) -> Vec<Fault> {
    let mut all = vec![Fault::Pair, Fault::Workers];
    let kept = load.keys as usize * 2 / 3;
    if kept >= 1 {
        all.push(Fault::Forgets(kept));
    }
    all
}

/// Rehearses `load` under `best` (seeded: the same answer every time).
pub(super) fn rehearse(best: &Candidate, load: &Load, seed: u64) -> Rehearsal {
    rehearse_faults(best, load, seed, faults(load))
}

/// [`rehearse`] with the faults given.
pub(super) fn rehearse_faults(
    best: &Candidate,
    load: &Load,
    seed: u64,
    faults: Vec<Fault>,
) -> Rehearsal {
    let sends = schedule(load, seed);
    let opts = best.options(&options());
    let judged = |admitted: Vec<bool>| judge(best, &sends, &admitted, &opts);
    let correct = judged(by_limiter(best, &sends, |_, _| 0));
    let faults = faults
        .into_iter()
        .map(|f| {
            let admitted = match f {
                Fault::Pair => by_limiter(best, &sends, |i, _| i % 2),
                Fault::Workers => {
                    let mut rng = SmallRng::seed_from_u64(seed ^ 0x0a0b);
                    let to: Vec<usize> = (0..sends.len())
                        .map(|_| rng.random_range(0..WORKERS))
                        .collect();
                    by_limiter(best, &sends, |i, _| to[i])
                }
                Fault::Forgets(kept) => {
                    let lives = lives(&sends, kept);
                    by_limiter(best, &sends, |i, _| lives[i])
                }
            };
            (f, judged(admitted).0)
        })
        .collect();
    Rehearsal { correct, faults }
}

/// The verifier's options as `run` takes them for a limiter it did not
/// start: an unknown history settling within the timeout, the default
/// clock allowance (1 ms resolution, 10 ms skew), clocks allowed 0.1 %
/// off; weaker than a run's, so what is proven here is proven there.
pub(super) fn options() -> Options {
    Options {
        slack_us: Options::slack_for(1_000, 10_000),
        unknown_history: true,
        history_settles_us: 2_000_000,
        clock_rate_ppm: 1_000,
        ..Options::default()
    }
}

/// The sends of `load` in order: (µs, key), keys picked uniformly or in
/// a sweep, as the load picks them.
fn schedule(load: &Load, seed: u64) -> Vec<(i64, u32)> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let n = (load.rate * load.duration_s as f64) as u64;
    let gap = 1e6 / load.rate.max(1e-3);
    let keys = load.keys.max(1);
    (0..n)
        .map(|i| {
            let key = match load.sweep {
                Some(block) => crate::load::pick::sweep(i, block, keys as usize) as u32,
                None => rng.random_range(0..keys),
            };
            ((i as f64 * gap) as i64, key)
        })
        .collect()
}

/// Each send decided by the limiter `which(index, key)` routes it to (a
/// number per key's limiter: a process, a worker, a life of the key in a
/// cache), every limiter deciding its own sends alone.
fn by_limiter(
    best: &Candidate,
    sends: &[(i64, u32)],
    which: impl Fn(usize, u32) -> usize,
) -> Vec<bool> {
    let mut groups: HashMap<(u32, usize), Vec<usize>> = HashMap::new();
    for (i, &(_, key)) in sends.iter().enumerate() {
        groups.entry((key, which(i, key))).or_default().push(i);
    }
    let mut admitted = vec![false; sends.len()];
    for indices in groups.values() {
        let times: Vec<i64> = indices.iter().map(|&i| sends[i].0).collect();
        for (&i, a) in indices.iter().zip(predict::decide(best, &times, 0)) {
            admitted[i] = a;
        }
    }
    admitted
}

/// For a cache of `kept` keys, least recently seen forgotten: the life of
/// its key each send falls in (a forgotten key starts a new one). A key
/// is still kept when fewer than `kept` other keys were seen since its
/// last send: those since are counted with a Fenwick tree over the sends,
/// each key marked at its latest (n log n; a many-keys load has a
/// thousand keys and tens of thousands of sends).
fn lives(sends: &[(i64, u32)], kept: usize) -> Vec<usize> {
    let mut latest = Fenwick::new(sends.len());
    let mut last: HashMap<u32, usize> = HashMap::new();
    let mut life: HashMap<u32, usize> = HashMap::new();
    sends
        .iter()
        .enumerate()
        .map(|(i, &(_, key))| {
            let since = last.get(&key).map(|&at| {
                latest.add(at, -1);
                // Keys seen after `at`: marks in (at, i).
                latest.sum(i) - latest.sum(at + 1)
            });
            if since.map_or(true, |others| others >= kept.max(1) as i64) {
                *life.entry(key).or_default() += 1;
            }
            latest.add(i, 1);
            last.insert(key, i);
            life[&key]
        })
        .collect()
}

/// Counts over positions, each prefix summed in log n.
struct Fenwick(Vec<i64>);

impl Fenwick {
    fn new(n: usize) -> Self {
        Fenwick(vec![0; n + 1])
    }

    fn add(&mut self, at: usize, by: i64) {
        let mut i = at + 1;
        while i < self.0.len() {
            self.0[i] += by;
            i += i & i.wrapping_neg();
        }
    }

    /// The sum over positions `0..end`.
    fn sum(&self, end: usize) -> i64 {
        let mut i = end;
        let mut total = 0;
        while i > 0 {
            total += self.0[i];
            i -= i & i.wrapping_neg();
        }
        total
    }
}

/// The verifier on each key's sends: (definite violations, false rejects).
pub(super) fn judge(
    best: &Candidate,
    sends: &[(i64, u32)],
    admitted: &[bool],
    opts: &Options,
) -> (u64, u64) {
    let mut per_key: HashMap<u32, Vec<Obs>> = HashMap::new();
    for (&(t, key), &a) in sends.iter().zip(admitted) {
        per_key.entry(key).or_default().push(Obs {
            sent: t,
            done: t + IN_FLIGHT_US,
            decided: if a {
                Decided::Admitted
            } else {
                Decided::Rejected
            },
        });
    }
    per_key.values().fold((0, 0), |(d, f), obs| {
        let v = verify::verify_key(&best.policy, obs, opts);
        (d + v.definite_violations, f + v.false_rejects)
    })
}

#[cfg(test)]
mod tests;
