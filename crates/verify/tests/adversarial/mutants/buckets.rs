//! Mutant token buckets and GCRA: too large a capacity, too fast a rate,
//! too large a chunk.

use super::*;

/// Token buckets and GCRA with capacity B + k, and two replicas: isolated
/// bursts within L with L·rate < 1, each after both have refilled
/// completely. The correct one admits exactly B per burst (the refill
/// during it is under a token) and the rule allows ⌊B + L·rate⌋ = B:
/// definite ≥ the excess, share 100 %.
#[test]
fn mutant_bucket_capacities_are_caught() {
    for seed in 0..400 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let gcra = seed % 2 == 1;
        let cap = rng.random_range(1..=6u64);
        let k = rng.random_range(1..=3u64);
        let count = rng.random_range(1..=3u64);
        let per = rng.random_range(2_000..=20_000i64);
        let interval = per / count as i64;
        let slack = rng.random_range(1..=interval / 4);
        let dmax = rng.random_range(0..=interval / 4);
        let sigma = rng.random_range(0..=interval / 4);
        let count_bursts = rng.random_range(2..=8);
        let reqs = bursts(
            &mut rng,
            count_bursts,
            |r| r.random_range((cap + k) as usize..=(2 * cap + k + 3) as usize),
            sigma,
            dmax,
            2 * (cap + k) as i64 * interval + sigma + dmax + slack,
        );
        let policy = bucket_policy(gcra, cap, count, per);
        let opts = Options {
            slack_us: slack,
            ..Options::default()
        };
        let clock = Clock::exact(1_790_000_000_000_000 + seed as i64);
        let correct = bucket_sim(gcra, cap, count, per);
        for (name, mutant) in [
            ("B+k", bucket_sim(gcra, cap + k, count, per)),
            ("two replicas", pair(correct.clone())),
        ] {
            let what = format!("seed {seed} gcra {gcra} {name}: B {cap} k {k} rate {count}/{per}");
            let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
            assert!(
                m.excess > 0,
                "{what}: the schedule must let the mutant over-admit"
            );
            assert_caught(&what, &m, m.excess);
        }
    }
}

/// Token buckets and GCRA refilled twice too fast, and two replicas, under
/// steady saturating load (a request every g ≤ a quarter token interval)
/// for D ≥ 20 token intervals. With B ≥ 2 the correct bucket never
/// overflows, so over its decisions' span D' it admits at least
/// B + D'·rate − 1. The whole trace is one set the rule bounds by
/// B + (D' + 2·dmax + slack)·rate, with dmax and slack at most a quarter
/// token interval, so (2·dmax + slack)·rate < 1: definite ≥ excess − 1, a
/// share of at least 1 − 1/excess (≥ 95 % here, excess ≥ 20).
#[test]
fn mutant_bucket_rates_are_caught() {
    for seed in 0..300 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let gcra = seed % 2 == 1;
        let cap = rng.random_range(2..=6u64);
        let count = rng.random_range(1..=3u64);
        let per = rng.random_range(2_000..=20_000i64);
        let interval = per / count as i64;
        let slack = rng.random_range(1..=interval / 4);
        let dmax = rng.random_range(0..=interval / 4);
        let g = rng.random_range(interval / 16..=interval / 4);
        let d = rng.random_range(20..=60) * interval;
        let mut reqs = Vec::new();
        let mut sent = rng.random_range(0..=interval);
        let end = sent + d;
        while sent < end {
            reqs.push(random_req(&mut rng, sent, dmax));
            sent += g;
        }
        let policy = bucket_policy(gcra, cap, count, per);
        let opts = Options {
            slack_us: slack,
            ..Options::default()
        };
        let clock = Clock::exact(1_790_000_000_000_000 + seed as i64);
        let correct = bucket_sim(gcra, cap, count, per);
        for (name, mutant) in [
            ("2x rate", bucket_sim(gcra, cap, 2 * count, per)),
            ("two replicas", pair(correct.clone())),
        ] {
            let what = format!("seed {seed} gcra {gcra} {name}: B {cap} rate {count}/{per}");
            let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
            assert!(m.excess >= 20, "{what}: excess {}", m.excess);
            assert_caught(&what, &m, m.excess - 1);
        }
    }
}

/// ASP.NET's chunked token bucket with capacity B + k (k > count), on an
/// exact timer or a late heartbeat: isolated bursts within one period,
/// after a complete refill. A closed span of at most one period may see one
/// chunk, so the rule allows B + count per burst; the correct bucket admits
/// B, or B + count when a chunk lands inside the burst (and so does the
/// mutant, plus k): definite ≥ excess − count per burst, a share of at
/// least (k − count)/k.
#[test]
fn mutant_chunked_buckets_are_caught() {
    for seed in 0..400 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let cap = rng.random_range(1..=6u64);
        let count = rng.random_range(1..=3u64);
        let k = rng.random_range(count + 1..=count + 3);
        let per = rng.random_range(2_000..=20_000i64);
        let tick = if rng.random_bool(0.5) {
            0
        } else {
            rng.random_range(1..=per)
        };
        let slack = rng.random_range(1..=per / 4);
        let dmax = rng.random_range(0..=per / 4);
        let sigma = rng.random_range(0..=per / 4);
        let bursts_n = rng.random_range(2..=8);
        let reqs = bursts(
            &mut rng,
            bursts_n,
            |r| r.random_range((cap + k) as usize..=(2 * cap + k + 3) as usize),
            sigma,
            dmax,
            ((cap + k) / count + 2) as i64 * (per + tick) + sigma + dmax + slack,
        );
        let policy = bucket_policy(false, cap, count, per);
        let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000i64);
        let opts = Options {
            slack_us: slack,
            lateness_us: tick,
            chunked_refill: true,
            ..Options::default()
        };
        let clock = Clock::exact(epoch);
        let origin = epoch - rng.random_range(0..=per);
        let asp = |cap| {
            Sim::AspBucket(AspBucket {
                cap,
                count,
                hb: Heartbeat {
                    period: per,
                    tick,
                    origin,
                    last: origin,
                    ties_late: false,
                },
                tokens: cap,
            })
        };
        for (name, mutant) in [("B+k", asp(cap + k)), ("two replicas", pair(asp(cap)))] {
            let what = format!("seed {seed} {name}: B {cap} k {k} rate {count}/{per} tick {tick}");
            let m = mutate(&what, &policy, &asp(cap), &mutant, &clock, &reqs, &opts);
            assert!(
                m.excess > 0,
                "{what}: the schedule must let the mutant over-admit"
            );
            assert_caught(&what, &m, m.excess - (count as i64) * bursts_n as i64);
        }
    }
}

/// A bucket in chunks on the epoch grid (Stripe's whole seconds) with
/// capacity B + k, and three replicas each keeping their own: isolated
/// bursts inside one period, each after a complete refill, judged with
/// the grid known. The correct bucket admits exactly B per burst (no chunk
/// lands inside it) and the grid rule allows B per period: definite ≥ the
/// excess, share 100 %.
#[test]
fn mutant_chunk_buckets_on_the_epoch_are_caught() {
    for seed in 0..300 {
        let mut rng = SmallRng::seed_from_u64(seed ^ 0xC4_0000);
        let cap = rng.random_range(1..=20u64);
        let chunk = rng.random_range(1..=3u64);
        let k = rng.random_range(1..=3u64);
        let per = rng.random_range(2_000..=20_000i64);
        let slack = rng.random_range(1..=per / 16);
        let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000i64);
        // Trace time of the first period boundary after 0.
        let first = per - epoch.rem_euclid(per);
        let gap = ((cap + k) / chunk + 2) as i64;
        let mut reqs = Vec::new();
        for b in 0..rng.random_range(2..=8i64) {
            let start = first + b * gap * per;
            for _ in 0..rng.random_range((cap + k) as usize..=(2 * cap + k + 3) as usize) {
                let sent = start + per / 4 + rng.random_range(0..=per / 4);
                reqs.push(random_req(&mut rng, sent, per / 8));
            }
        }
        reqs.sort_by_key(|r| r.sent);
        let policy = Policy::TokenBucket {
            capacity: cap,
            refill: Rate {
                count: chunk,
                per_us: per as u64,
            },
        };
        let opts = Options {
            slack_us: slack,
            chunked_refill: true,
            chunks_on_epoch: true,
            aligned: true,
            epoch_offset_us: epoch,
            ..Options::default()
        };
        let clock = Clock::exact(epoch);
        let stripe = |cap| Sim::Chunks(ChunkBucket::new(cap, chunk, per, true));
        for (name, mutant) in [
            ("B+k", stripe(cap + k)),
            (
                "three replicas",
                Sim::Replicas(vec![stripe(cap), stripe(cap), stripe(cap)]),
            ),
        ] {
            let what = format!("seed {seed} {name}: B {cap} k {k} chunk {chunk}/{per}");
            let m = mutate(&what, &policy, &stripe(cap), &mutant, &clock, &reqs, &opts);
            assert!(
                m.excess > 0,
                "{what}: the schedule must let the mutant over-admit"
            );
            assert_caught(&what, &m, m.excess);
        }
    }
}
