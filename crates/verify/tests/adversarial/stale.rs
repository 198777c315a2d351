//! Stale readings behind big bursts (the outside review's first finding):
//! buckets and GCRA whose deciders read their clock when a request arrives
//! and take the state when it is answered. A limited request X that read
//! its clock early reaches the state after a burst of admits that read
//! later clocks; it sees their theoretical arrival time (or `last`) "from
//! the future" and is rejected although an answer A just before it said
//! more remained than the burst used. Each case sets that trap again and
//! again, on a bucket of 9 to 60; a correct limiter must still score zero
//! everywhere, the `remaining` check included.

use super::*;

/// The limiters that keep a bucket's state: GCRA, a clamping bucket, one
/// whose time may run backwards, and one in floating point.
fn limiter(which: u64, cap: u64, count: u64, per: i64) -> (Policy, Sim) {
    let rate = Rate {
        count,
        per_us: per as u64,
    };
    let bucket = Policy::TokenBucket {
        capacity: cap,
        refill: rate,
    };
    match which % 4 {
        0 => (
            Policy::Gcra { rate, burst: cap },
            Sim::Gcra(Gcra::new(cap, count, per)),
        ),
        1 => (bucket, Sim::Bucket(TokenBucket::new(cap, count, per))),
        2 => (bucket, Sim::Bucket(TokenBucket::unclamped(cap, count, per))),
        _ => (bucket, Sim::FloatBucket(FloatBucket::new(cap, count, per))),
    }
}

fn answered(sent: i64, done: i64, at: i64, decider: usize, lag: i64) -> Req {
    Req {
        sent,
        done,
        answered: true,
        plan: Plan::At(at),
        decider,
        lag,
        max_stale: i64::MAX,
    }
}

/// Episodes on a full bucket: A, then X sent just after A's answer and
/// decided at its own answer with the reading of its send, then a burst
/// of m admits read (and decided) while X is open.
fn stale_case(seed: u64) -> (Case, Vec<Req>) {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x57A1_E000);
    let cap = rng.random_range(9..=60u64);
    let count = rng.random_range(1..=3u64);
    let per = rng.random_range(1_000..=20_000i64);
    let interval = per / count as i64;
    let (policy, lim) = limiter(seed, cap, count, per);
    let deciders = rng.random_range(1..=3usize);
    let spread = if deciders == 1 {
        0
    } else {
        pick(&mut rng, &[0, 40, 300, 900])
    };
    let offsets: Vec<i64> = (0..deciders)
        .map(|_| rng.random_range(0..=spread))
        .collect();
    let slack = spread + 1 + rng.random_range(0..=100);
    let mut reqs = Vec::new();
    let mut t = rng.random_range(0..=interval);
    for _ in 0..rng.random_range(3..=20) {
        // Idle long enough to refill completely.
        t += cap as i64 * interval + rng.random_range(0..=2 * interval);
        let a_done = t + rng.random_range(0..=slack);
        reqs.push(answered(t, a_done, a_done, 0, 0));
        let x_sent = a_done + slack + 1 + rng.random_range(0..=interval);
        let x_done = x_sent + rng.random_range(interval..=(cap as i64 + 5) * interval);
        reqs.push(answered(
            x_sent,
            x_done,
            x_done,
            rng.random_range(0..deciders),
            1_000,
        ));
        // The burst: read late in X's interval, decided before X.
        let m = rng.random_range(1..=cap as usize + 2);
        let from = x_sent + (x_done - x_sent) / 2;
        for _ in 0..m {
            let sent = rng.random_range(from..x_done);
            let done = rng.random_range(sent..=x_done);
            let at = rng.random_range(sent..=done).min(x_done - 1).max(sent);
            reqs.push(answered(sent, done, at, rng.random_range(0..deciders), 0));
        }
        t = x_done;
    }
    let rate_ppm: i64 = pick(&mut rng, &[0, 0, 5_000, -5_000]);
    let opts = Options {
        slack_us: slack,
        one_clock: false,
        clock_rate_ppm: rate_ppm.abs(),
        ..Options::default()
    };
    let case = Case {
        label: format!(
            "stale seed {seed}: deciders {deciders} offsets {offsets:?} rate {rate_ppm}ppm"
        ),
        policy,
        lim,
        clock: Clock {
            epoch: 1_790_000_000_000_000 + seed as i64 * 7_919,
            resolution: 1,
            offsets,
            rate_ppm,
        },
        warm: Vec::new(),
        reqs: reqs.clone(),
        opts,
    };
    (case, reqs)
}

/// Limited answers that a check ignoring stale readings would call
/// contradictions: after an answer A surely decided before the reject was
/// sent, fewer requests were sent before the reject's answer than A said
/// remained. The trap the cases set.
fn traps(run: &Run, slack: i64) -> u64 {
    let mut n = 0;
    for b in run.obs.iter().filter(|o| o.decided == Decided::Rejected) {
        let caught = run.witnesses.iter().any(|&(i, promised)| {
            let a = run.obs[i as usize];
            if a.done + slack >= b.sent {
                return false;
            }
            let between = run
                .obs
                .iter()
                .filter(|o| o.decided != Decided::Rejected)
                .filter(|o| o.done + slack >= a.sent && o.sent < b.done + slack)
                .count() as u64;
            u64::from(promised) > between.saturating_sub(1)
        });
        n += u64::from(caught);
    }
    n
}

#[test]
fn stale_readings_behind_big_bursts_are_no_proof() {
    let n = cases() / 2;
    let (mut trapped, mut unclamped, mut failures) = (0u64, 0u64, Vec::new());
    for seed in 0..n {
        let (case, _) = stale_case(seed);
        let (run, j) = judge(&case);
        // A clamping bucket's time never runs back: it sets no trap.
        if matches!(
            &case.lim,
            Sim::Gcra(_) | Sim::Bucket(TokenBucket { clamped: false, .. })
        ) {
            unclamped += 1;
            trapped += u64::from(traps(&run, case.opts.slack_us) > 0);
        }
        if j.broken().iter().any(|&b| b) && failures.len() < 2 {
            failures.push(format!(
                "a correct limiter was flagged ({:?}, {:?}), minimised:\n{}",
                j.v,
                j.header,
                show(&minimize(&case))
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // Not vacuous: the limiters whose time may run back are led into
    // limited answers that only the stale reading explains, nearly always.
    assert!(
        trapped * 10 >= unclamped * 9,
        "only {trapped} of {unclamped} cases set the trap"
    );
}
