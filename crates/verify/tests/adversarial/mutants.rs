//! Mutants: limiters that admit too much must be caught, for a stated share
//! of their excess (admitted by the mutant − admitted by the correct limiter
//! on the same schedule, every request decided at the same instant).

mod buckets;
mod windows;

use super::*;

fn req_at(sent: i64, done: i64, at: i64) -> Req {
    Req {
        sent,
        done,
        answered: true,
        plan: Plan::At(at),
        decider: 0,
        lag: 0,
        max_stale: 0,
    }
}

/// A request sent at `sent`, lasting up to `dmax`, decided anywhere in it.
fn random_req(rng: &mut SmallRng, sent: i64, dmax: i64) -> Req {
    let done = sent + rng.random_range(0..=dmax);
    req_at(sent, done, rng.random_range(sent..=done))
}

struct Mutation {
    excess: i64,
    mutant: Judged,
}

/// Judges the correct limiter (must be clean) and the mutant on `reqs`.
fn mutate(
    what: &str,
    policy: &Policy,
    correct: &Sim,
    mutant: &Sim,
    clock: &Clock,
    reqs: &[Req],
    opts: &Options,
) -> Mutation {
    let good = simulate(correct, clock, &[], reqs);
    let j = judge_run(&good, policy, opts);
    assert!(
        j.broken() == [false; 5],
        "{what}: the correct limiter must be clean: {:?} {:?}",
        j.v,
        j.header
    );
    let bad = simulate(mutant, clock, &[], reqs);
    Mutation {
        excess: bad.admitted() as i64 - good.admitted() as i64,
        mutant: judge_run(&bad, policy, opts),
    }
}

fn assert_caught(what: &str, m: &Mutation, at_least: i64) {
    let definite = m.mutant.v.definite_violations as i64;
    assert!(
        definite >= at_least,
        "{what}: excess {} but only {definite} definite (want ≥ {at_least}): {:?}",
        m.excess,
        m.mutant.v
    );
}

fn pair(sim: Sim) -> Sim {
    Sim::Replicas(vec![sim.clone(), sim])
}

/// Isolated bursts: `bursts` of `size(rng)` requests each, sent within
/// `sigma`, starts at least `gap` apart.
fn bursts(
    rng: &mut SmallRng,
    bursts: usize,
    size: impl Fn(&mut SmallRng) -> usize,
    sigma: i64,
    dmax: i64,
    gap: i64,
) -> Vec<Req> {
    let mut t = rng.random_range(0..=gap);
    let mut out = Vec::new();
    for _ in 0..bursts {
        for _ in 0..size(rng) {
            let sent = t + rng.random_range(0..=sigma);
            out.push(random_req(rng, sent, dmax));
        }
        t += gap + rng.random_range(0..=gap / 2);
    }
    out
}

/// A limiter that advertises one more than it has left, under sequential
/// requests more than the slack apart: every reject right after an admit
/// that truly left nothing is a contradiction (nothing else could have
/// used the promised request). Asserted: contradicted ≥ those pairs, share
/// 100 %, for each algorithm.
#[test]
fn overstated_remaining_is_contradicted() {
    for seed in 0..300 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let n = rng.random_range(1..=6u64);
        let w = rng.random_range(5_000..=40_000i64);
        let slack = rng.random_range(1..=w / 50);
        let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000i64);
        let (policy, correct) = match seed % 4 {
            0 => (
                Policy::SlidingLog {
                    limit: n,
                    window_us: w as u64,
                },
                Sim::Log(SlidingLog::new(n, w, false)),
            ),
            1 => (
                Policy::FixedWindow {
                    limit: n,
                    window_us: w as u64,
                },
                Sim::Fixed(FixedWindow::new(n, w, FixedKind::Epoch)),
            ),
            2 => (bucket_policy(false, n, 1, w), bucket_sim(false, n, 1, w)),
            _ => (bucket_policy(true, n, 1, w), bucket_sim(true, n, 1, w)),
        };
        let mut reqs = Vec::new();
        let mut sent = 0;
        for _ in 0..rng.random_range(20..=100) {
            let r = random_req(&mut rng, sent, w / 50);
            sent = r.done + slack + 1 + rng.random_range(0..=w / (4 * n as i64));
            reqs.push(r);
        }
        // One decider on an exact clock, reading it as it decides: one
        // clock (with several, a bucket's reject may have missed up to its
        // interval of refill, and a lie of one is no proof).
        let opts = Options {
            slack_us: slack,
            one_clock: true,
            ..Options::default()
        };
        let clock = Clock::exact(epoch);
        let truth = simulate(&correct, &clock, &[], &reqs);
        let pairs = (1..reqs.len())
            .filter(|&i| {
                let (a, b) = (truth.decisions[i - 1].unwrap(), truth.decisions[i].unwrap());
                a.answer.admitted && a.answer.remaining == 0 && !b.answer.admitted
            })
            .count() as u64;
        let lied = simulate(&Sim::Liar(Box::new(correct.clone())), &clock, &[], &reqs);
        let j = judge_run(&lied, &policy, &opts);
        assert_eq!(
            judge_run(&truth, &policy, &opts).header.contradicted,
            0,
            "seed {seed}: the honest limiter"
        );
        assert!(
            j.header.contradicted >= pairs,
            "seed {seed} {policy:?}: {pairs} pairs, {:?}",
            j.header
        );
        assert!(
            pairs > 0 || seed % 4 == 3,
            "seed {seed}: the load must press"
        );
    }
}

pub(crate) fn bucket_policy(gcra: bool, cap: u64, count: u64, per: i64) -> Policy {
    let rate = Rate {
        count,
        per_us: per as u64,
    };
    if gcra {
        Policy::Gcra { rate, burst: cap }
    } else {
        Policy::TokenBucket {
            capacity: cap,
            refill: rate,
        }
    }
}

pub(crate) fn bucket_sim(gcra: bool, cap: u64, count: u64, per: i64) -> Sim {
    if gcra {
        Sim::Gcra(Gcra::new(cap, count, per))
    } else {
        Sim::Bucket(TokenBucket::new(cap, count, per))
    }
}
