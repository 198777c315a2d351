//! Mutant logs, windows and counters: each admits too much somewhere, and
//! the verifier must prove its stated share of the excess.

use super::*;

/// Sliding log with N + k, and two independent replicas of N. Isolated
/// bursts, each within less than W (spread + interval + slack ≤ W/5) and W
/// apart: the correct log admits exactly N per burst, every burst is one set
/// the rule bounds by N, so definite ≥ Σ (admits − N) = the excess: share
/// 100 %.
#[test]
fn mutant_sliding_logs_are_caught() {
    // The report's band is this policy's own rule (N within the window),
    // counted over admits wholly inside a span: every mutant here, caught
    // by that rule, rises above it too (1,200 of 1,200 when written).
    let (mut above, mut tried) = (0u32, 0u32);
    for seed in 0..400 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let n = rng.random_range(1..=6u64);
        let k = rng.random_range(1..=3u64);
        let w = rng.random_range(2_000..=40_000i64);
        let slack = rng.random_range(1..=w / 20);
        let dmax = rng.random_range(0..=w / 20);
        let sigma = rng.random_range(0..=w / 10);
        let count_bursts = rng.random_range(2..=8);
        let reqs = bursts(
            &mut rng,
            count_bursts,
            |r| r.random_range((n + k) as usize..=(2 * n + k + 3) as usize),
            sigma,
            dmax,
            w + sigma + dmax + slack + 1,
        );
        let policy = Policy::SlidingLog {
            limit: n,
            window_us: w as u64,
        };
        let opts = Options {
            slack_us: slack,
            ..Options::default()
        };
        let clock = Clock::exact(1_790_000_000_000_000 + seed as i64 * 7_919);
        let correct = Sim::Log(SlidingLog::new(n, w, false));
        for (name, mutant) in [
            ("log N+k", Sim::Log(SlidingLog::new(n + k, w, false))),
            ("zset N+k", Sim::Log(SlidingLog::new(n + k, w, true))),
            ("two replicas", pair(correct.clone())),
        ] {
            let what = format!("seed {seed} {name}: N {n} k {k} W {w} slack {slack}");
            let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
            assert!(
                m.excess > 0,
                "{what}: the schedule must let the mutant over-admit"
            );
            assert_caught(&what, &m, m.excess);
            tried += 1;
            above += u32::from(m.mutant.above_band);
        }
    }
    assert_eq!(
        above, tried,
        "the band shows only {above} of {tried} over-admitting mutants"
    );
}

/// Load only inside aligned windows' interiors (every interval, widened by
/// slack and twice the epoch uncertainty, inside one window): every admit is a sure
/// admit of its window. The correct limiter is the greedy "admit while the
/// window allows", which keeps the most any feasible set can; the mutant's
/// admits are a subset of the requests, so at least (mutant − correct) of
/// them must go: definite ≥ excess, share 100 %. Fixed windows (S = 1) and
/// segmented ones, mutants with N + k and two independent replicas.
#[test]
fn mutant_windows_on_a_known_grid_are_caught() {
    for seed in 0..400 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let n = rng.random_range(1..=6u64);
        let k = rng.random_range(1..=3u64);
        let s = if seed % 2 == 0 {
            1
        } else {
            rng.random_range(2..=5i64)
        };
        let seg = rng.random_range(2_000..=20_000i64);
        let slack = rng.random_range(1..=seg / 20);
        let uncertainty = if rng.random_bool(0.5) {
            rng.random_range(1..=seg / 20)
        } else {
            0
        };
        let dmax = rng.random_range(0..=seg / 20);
        let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000i64);
        // The verifier widens each interval by slack + uncertainty around
        // its own idea of the edges, which is itself off by the uncertainty.
        let margin = slack + 2 * uncertainty + 1;
        let first = (epoch.div_euclid(seg) + 1) * seg - epoch;
        let mut reqs = Vec::new();
        for j in 0..rng.random_range(3..=16i64) {
            let b = first + j * seg;
            for _ in 0..rng.random_range(0..=2 * (n + k) as usize) {
                let sent = rng.random_range(b + margin..=b + seg - margin - dmax);
                reqs.push(random_req(&mut rng, sent, dmax));
            }
        }
        let (policy, correct, plus_k) = if s == 1 {
            (
                Policy::FixedWindow {
                    limit: n,
                    window_us: seg as u64,
                },
                Sim::Fixed(FixedWindow::new(n, seg, FixedKind::Epoch)),
                Sim::Fixed(FixedWindow::new(n + k, seg, FixedKind::Keyed)),
            )
        } else {
            (
                Policy::SlidingWindow {
                    limit: n,
                    window_us: (s * seg) as u64,
                    segments: s as u64,
                },
                Sim::Seg(Segmented::new(n, seg, s)),
                Sim::Seg(Segmented::new(n + k, seg, s)),
            )
        };
        let mut opts = Options {
            slack_us: slack,
            epoch_offset_us: epoch + rng.random_range(-uncertainty..=uncertainty),
            aligned: true,
            ..Options::default()
        };
        opts.epoch_uncertainty_us = uncertainty;
        let clock = Clock::exact(epoch);
        for (name, mutant) in [("N+k", plus_k), ("two replicas", pair(correct.clone()))] {
            let what = format!("seed {seed} {name}: N {n} k {k} S {s} seg {seg} slack {slack}");
            let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
            assert_caught(&what, &m, m.excess);
        }
    }
}

/// Alignment unknown to the verifier (the phase is hidden): the attack puts
/// a burst on every other window edge, at least N + k just before it and as
/// many just after, within 2σ + interval + slack < W. The correct limiter
/// admits exactly 2N per pair (both windows fresh), and a span shorter than
/// W may hold 2N: definite ≥ Σ (admits − 2N) = the excess, share 100 %.
#[test]
fn mutant_fixed_windows_of_unknown_alignment_are_caught_at_the_edges() {
    for seed in 0..400 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let n = rng.random_range(1..=6u64);
        let k = rng.random_range(1..=3u64);
        let w = rng.random_range(2_000..=40_000i64);
        let slack = rng.random_range(1..=w / 20);
        let dmax = rng.random_range(0..=w / 20);
        let sigma = rng.random_range(dmax + 1..=w / 8);
        let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000i64);
        let first = (epoch.div_euclid(w) + 1) * w - epoch;
        let size = |r: &mut SmallRng| r.random_range((n + k) as usize..=(2 * n + k + 3) as usize);
        let mut reqs = Vec::new();
        for j in 0..rng.random_range(1..=6i64) {
            let b = first + (2 * j + 1) * w;
            for _ in 0..size(&mut rng) {
                let sent = rng.random_range(b - sigma..b - dmax);
                reqs.push(random_req(&mut rng, sent, dmax));
            }
            for _ in 0..size(&mut rng) {
                let sent = rng.random_range(b..=b + sigma);
                reqs.push(random_req(&mut rng, sent, dmax));
            }
        }
        let policy = Policy::FixedWindow {
            limit: n,
            window_us: w as u64,
        };
        let opts = Options {
            slack_us: slack,
            ..Options::default()
        };
        let clock = Clock::exact(epoch);
        let correct = Sim::Fixed(FixedWindow::new(n, w, FixedKind::Epoch));
        for (name, mutant) in [
            (
                "N+k",
                Sim::Fixed(FixedWindow::new(n + k, w, FixedKind::Epoch)),
            ),
            ("two replicas", pair(correct.clone())),
        ] {
            let what = format!("seed {seed} {name}: N {n} k {k} W {w} slack {slack}");
            let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
            assert!(
                m.excess > 0,
                "{what}: the schedule must let the mutant over-admit"
            );
            assert_caught(&what, &m, m.excess);
        }
    }
}

/// Alignment unknown, steady saturating load for T windows (from one edge
/// to another, every window offered more than the mutant admits): the
/// correct limiter admits N·T, the mutant (N + k)·T. A span L meets at most
/// L/W + 2 windows, so the verifier may allow 2N + N·L/W; over the whole
/// trace L ≤ T·W + interval + slack (< T·W + W/N), so definite ≥ k·T − 2N −
/// 1, a share of at least (kT − 2N − 1)/(kT) (T ≥ 10). The best sound bound
/// would be N·(T + 1) for a span shorter than T·W: (kT − N)/(kT).
#[test]
fn mutant_fixed_windows_of_unknown_alignment_are_caught_over_time() {
    for seed in 0..200 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let n = rng.random_range(1..=6u64);
        let k = rng.random_range(1..=n);
        let w = rng.random_range(2_000..=40_000i64);
        let slack = rng.random_range(1..=w / (20 * n as i64));
        let dmax = rng.random_range(0..=w / (20 * n as i64));
        let t = rng.random_range(10..=30i64);
        let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000i64);
        let first = (epoch.div_euclid(w) + 1) * w - epoch;
        // Sent every g, decided before the window ends: 3(N + k) per window.
        let g = w / (3 * (n + k) as i64);
        let mut reqs = Vec::new();
        let mut sent = first;
        while sent + dmax < first + t * w {
            reqs.push(random_req(&mut rng, sent, dmax));
            sent += g;
        }
        let policy = Policy::FixedWindow {
            limit: n,
            window_us: w as u64,
        };
        let opts = Options {
            slack_us: slack,
            ..Options::default()
        };
        let clock = Clock::exact(epoch);
        let correct = Sim::Fixed(FixedWindow::new(n, w, FixedKind::Epoch));
        let mutant = Sim::Fixed(FixedWindow::new(n + k, w, FixedKind::Epoch));
        let what = format!("seed {seed}: N {n} k {k} W {w} T {t} slack {slack}");
        let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
        assert_eq!(m.excess, (k as i64) * t, "{what}");
        assert_caught(&what, &m, m.excess - 2 * n as i64 - 1);
    }
}

/// Segmented windows (S ≥ 2), alignment unknown: isolated bursts within
/// one segment's length (so within W·(S−1)/S), W + a segment apart: the
/// correct limiter admits exactly N per burst and the rule bounds each
/// burst by N: definite ≥ the excess, share 100 %. Mutants: N + k on the
/// epoch grid, N + k on a late ASP.NET heartbeat, two replicas.
#[test]
fn mutant_segmented_windows_of_unknown_alignment_are_caught() {
    for seed in 0..400 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let n = rng.random_range(1..=6u64);
        let k = rng.random_range(1..=3u64);
        let s = rng.random_range(2..=5i64);
        let seg = rng.random_range(1_000..=10_000i64);
        let slack = rng.random_range(1..=seg / 4);
        let dmax = rng.random_range(0..=seg / 4);
        let sigma = rng.random_range(0..=seg / 4);
        let tick = rng.random_range(1..=seg);
        let count_bursts = rng.random_range(2..=8);
        let reqs = bursts(
            &mut rng,
            count_bursts,
            |r| r.random_range((n + k) as usize..=(2 * n + k + 3) as usize),
            sigma,
            dmax,
            (s + 1) * (seg + tick) + sigma + dmax + slack,
        );
        let policy = Policy::SlidingWindow {
            limit: n,
            window_us: (s * seg) as u64,
            segments: s as u64,
        };
        let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000i64);
        let opts = Options {
            slack_us: slack,
            lateness_us: tick,
            one_clock: true,
            ..Options::default()
        };
        let clock = Clock::exact(epoch);
        let asp = |limit| {
            Sim::AspSeg(AspSegmented {
                limit,
                hb: Heartbeat {
                    period: seg,
                    tick,
                    origin: epoch - 1_000_000,
                    last: epoch - 1_000_000,
                    ties_late: false,
                },
                ring: vec![0; s as usize].into(),
            })
        };
        let correct = Sim::Seg(Segmented::new(n, seg, s));
        for (name, correct, mutant) in [
            (
                "N+k",
                correct.clone(),
                Sim::Seg(Segmented::new(n + k, seg, s)),
            ),
            ("aspnet N+k", asp(n), asp(n + k)),
            ("two replicas", correct.clone(), pair(correct.clone())),
        ] {
            let what = format!("seed {seed} {name}: N {n} k {k} S {s} seg {seg} slack {slack}");
            let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
            assert!(
                m.excess > 0,
                "{what}: the schedule must let the mutant over-admit"
            );
            assert_caught(&what, &m, m.excess);
        }
    }
}

/// Sliding counters (both variants, judged with and without the grid):
/// isolated bursts within L < W/N (so N·L/W < 1) and 2W apart (both
/// windows empty at each burst). The rule allows N + 1 within such a span
/// (the estimate < N variant may admit N + 1 across an edge), the correct
/// limiter admits N or N + 1, so definite ≥ excess − 1 per burst: with the
/// N + k mutant (k ≥ 2) a share of at least (k − 1)/k.
#[test]
fn mutant_sliding_counters_are_caught() {
    for seed in 0..400 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let n = rng.random_range(1..=6u64);
        let k = rng.random_range(2..=4u64);
        let w = rng.random_range(5_000..=40_000i64);
        let third = w / (3 * n as i64 + 3);
        let slack = rng.random_range(1..=third);
        let dmax = rng.random_range(0..=third);
        let sigma = rng.random_range(0..=third);
        let count = rng.random_range(2..=8);
        let reqs = bursts(
            &mut rng,
            count,
            |r| r.random_range((n + k) as usize..=(2 * n + k + 3) as usize),
            sigma,
            dmax,
            2 * w + sigma + dmax + 1,
        );
        let policy = Policy::SlidingCounter {
            limit: n,
            window_us: w as u64,
        };
        let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000i64);
        let opts = Options {
            slack_us: slack,
            epoch_offset_us: epoch,
            aligned: rng.random_bool(0.5),
            one_clock: true,
            ..Options::default()
        };
        let clock = Clock::exact(epoch);
        for plus_one in [false, true] {
            let correct = Sim::Counter(SlidingCounter::new(n, w, plus_one));
            for (name, mutant) in [
                ("N+k", Sim::Counter(SlidingCounter::new(n + k, w, plus_one))),
                ("two replicas", pair(correct.clone())),
            ] {
                let what = format!(
                    "seed {seed} {name} plus_one {plus_one}: N {n} k {k} W {w} slack {slack} \
                     aligned {}",
                    opts.aligned
                );
                let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
                assert!(
                    m.excess > 0,
                    "{what}: the schedule must let the mutant over-admit"
                );
                assert_caught(&what, &m, m.excess - count as i64);
            }
        }
    }
}

/// Segmented windows on several clocks answered slower than a segment
/// (the outside review's second finding: 3 replicas answering in 120 ms
/// scored 0): R replicas each counting alone, saturated for 12–30
/// windows, every answer between (k−1)·g and k·g less the slack, so the
/// rule for readings less than k segments apart speaks of every admit and
/// bounds the whole trace, of span L, by ⌈(k+1)N(S+k+1)/(S+k)⌉ +
/// (k+1)N·L/((S+k)·g). R is drawn so that R·N per window beats that rate
/// by a quarter: definite ≥ admitted − the bound > 0. The correct limiter
/// on the same requests must be clean.
#[test]
fn mutant_segmented_windows_answering_slowly_are_caught() {
    for seed in 0..80 {
        let mut rng = SmallRng::seed_from_u64(seed ^ 0x5E9_0000);
        let n = rng.random_range(1..=6u64);
        let s = rng.random_range(4..=16i64);
        let seg = rng.random_range(1_000..=10_000i64);
        let slack = rng.random_range(1..=seg / 20);
        // (Every k up to 8 has its rule; past 8 they are thinned.)
        let k = rng.random_range(2..=(s - 1).min(8));
        // Replicas: more than 1.25·(k+1)·S/(S+k).
        let r = ((5 * (k + 1) * s) / (4 * (s + k)) + 1).max(2) as usize;
        let lo = (k - 1) * seg;
        let hi = k * seg - slack - 1;
        let mut reqs = Vec::new();
        let windows = rng.random_range(12..=30i64);
        let per_segment = r as i64 * n as i64 + 1;
        let end = windows * s * seg;
        let mut sent = rng.random_range(0..seg);
        while sent < end {
            let done = sent + rng.random_range(lo..=hi);
            reqs.push(req_at(sent, done, rng.random_range(sent..=done)));
            sent += (seg / per_segment).max(1) + rng.random_range(0..=seg / (4 * per_segment));
        }
        let policy = Policy::SlidingWindow {
            limit: n,
            window_us: (s * seg) as u64,
            segments: s as u64,
        };
        let opts = Options {
            slack_us: slack,
            one_clock: false,
            ..Options::default()
        };
        let clock = Clock::exact(1_790_000_000_000_000 + rng.random_range(0..1_000_000_000i64));
        let correct = Sim::Seg(Segmented::new(n, seg, s));
        let mutant = Sim::Replicas(vec![correct.clone(); r]);
        let what = format!("seed {seed}: N {n} S {s} seg {seg} k {k} replicas {r} slack {slack}");
        let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
        let bad = simulate(&mutant, &clock, &[], &reqs);
        let admits: Vec<&Obs> = bad
            .obs
            .iter()
            .filter(|o| o.decided == Decided::Admitted)
            .collect();
        let span = admits.iter().map(|o| o.done).max().unwrap() + slack
            - admits.iter().map(|o| o.sent).min().unwrap();
        let most = (k as u64 + 1) * n;
        let blocks = (s + k) as u64;
        let bound =
            (most * (blocks + 1)).div_ceil(blocks) as i64 + (most as i64 * span) / ((s + k) * seg);
        let over = admits.len() as i64 - bound;
        assert!(
            over > 0,
            "{what}: the mutant must beat the rule's rate ({} admitted, bound {bound})",
            admits.len()
        );
        assert_caught(&what, &m, over);
    }
}
