//! The verifier against the reference API's own limiters: correct ones,
//! their decisions jittered inside their requests, must score zero; two of
//! them counting alone (a fake global limit) must be caught. These live
//! here, not in the verify crate, because they link the limiters the
//! verifier judges: the verify crate depends on the policy vocabulary
//! alone (crates/verify/Cargo.toml).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use reference_api::{Policy, Rate};
use rlbench::verify::{verify_key, verify_phase, Decided, Obs, Options, PhaseVerdict};

fn admit(sent: i64, done: i64) -> Obs {
    Obs {
        sent,
        done,
        decided: Decided::Admitted,
    }
}

fn reject(sent: i64, done: i64) -> Obs {
    Obs {
        sent,
        done,
        decided: Decided::Rejected,
    }
}

/// No slack, one clock read inside each decision's atomic step.
fn exact() -> Options {
    Options {
        slack_us: 0,
        epoch_offset_us: 0,
        epoch_uncertainty_us: 0,
        aligned: false,
        unknown_history: false,
        one_clock: true,
        ..Options::default()
    }
}

/// Runs a real, correct limiter with decisions at random points inside
/// random request intervals, and records what the verifier sees.
fn simulate(policy: &Policy, seed: u64, epoch: i64) -> Vec<Obs> {
    let limiter = reference_api::limiter::local(policy, 1_000);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut sent = 0i64;
    let mut reqs: Vec<(i64, i64, i64)> = (0..3_000)
        .map(|_| {
            // Bursts and gaps: mostly dense, sometimes a pause.
            sent += if rng.random_bool(0.02) {
                rng.random_range(0..300_000)
            } else {
                rng.random_range(0..2_000)
            };
            let latency = rng.random_range(0..8_000);
            let decision = sent + rng.random_range(0..=latency);
            (sent, sent + latency, decision)
        })
        .collect();
    reqs.sort_by_key(|r| r.2);
    reqs.iter()
        .map(|&(s, d, t)| {
            let ok = limiter.decide("k", t + epoch).allowed;
            Obs {
                sent: s,
                done: d,
                decided: if ok {
                    Decided::Admitted
                } else {
                    Decided::Rejected
                },
            }
        })
        .collect()
}

#[test]
fn correct_limiters_score_zero_under_jitter() {
    let rate = Rate {
        count: 20,
        per_us: 100_000,
    };
    let policies = [
        Policy::SlidingLog {
            limit: 10,
            window_us: 50_000,
        },
        Policy::FixedWindow {
            limit: 10,
            window_us: 50_000,
        },
        Policy::SlidingWindow {
            limit: 10,
            window_us: 50_000,
            segments: 5,
        },
        Policy::SlidingWindow {
            limit: 10,
            window_us: 50_000,
            segments: 1,
        },
        Policy::SlidingCounter {
            limit: 10,
            window_us: 50_000,
        },
        Policy::TokenBucket {
            capacity: 5,
            refill: rate,
        },
        Policy::Gcra { rate, burst: 5 },
    ];
    let epoch = 1_790_000_000_123_457;
    for p in &policies {
        for seed in 0..8 {
            let trace = simulate(p, seed, epoch);
            // The simulated limiters read the epoch-aligned clock: the
            // grid rules must hold too.
            let opts = Options {
                slack_us: 1_000,
                epoch_offset_us: epoch,
                epoch_uncertainty_us: 0,
                aligned: true,
                unknown_history: false,
                ..Options::default()
            };
            let v = verify_key(p, &trace, &opts);
            assert!(v.rejected > 100, "{p:?}: the load must press the limit");
            assert_eq!(v.definite_violations, 0, "{p:?} seed {seed}");
            assert_eq!(v.false_rejects, 0, "{p:?} seed {seed}");
        }
    }
}

#[test]
fn phases_add_up_to_the_whole_and_a_correct_limiter_scores_zero_in_each() {
    let epoch = 1_790_000_000_123_457;
    let opts = Options {
        slack_us: 1_000,
        epoch_offset_us: epoch,
        epoch_uncertainty_us: 0,
        aligned: true,
        unknown_history: false,
        ..Options::default()
    };
    let policies = [
        Policy::SlidingLog {
            limit: 10,
            window_us: 50_000,
        },
        Policy::TokenBucket {
            capacity: 5,
            refill: Rate {
                count: 20,
                per_us: 100_000,
            },
        },
    ];
    for p in &policies {
        for seed in 0..4 {
            let trace = simulate(p, seed, epoch);
            let end = trace.iter().map(|o| o.sent).max().unwrap();
            let spans = phase_spans(&[end / 3, end / 2, 2 * end / 3]);
            let whole = verify_key(p, &trace, &opts);
            let (mut definite, mut false_rejects) = (0, 0);
            for &(from, to) in &spans {
                let v = verify_phase(p, &trace, &opts, from, to);
                assert_eq!(v, PhaseVerdict::default(), "{p:?} seed {seed}");
                definite += v.definite_violations;
                false_rejects += v.false_rejects;
            }
            assert_eq!((definite, false_rejects), (0, 0));
            assert_eq!(whole.definite_violations, 0);
        }
    }
    // The fake global (three limiters each admitting 10 a second): every
    // phase's share adds up to the whole, and violations land where the
    // extra admits were sent.
    let p = Policy::SlidingLog {
        limit: 10,
        window_us: 1_000_000,
    };
    let trace: Vec<Obs> = (0..30).map(|i| admit(i * 1_000, i * 1_000 + 500)).collect();
    let whole = verify_key(&p, &trace, &exact());
    assert_eq!(whole.definite_violations, 20);
    let spans = phase_spans(&[10_000, 20_000]);
    let per: Vec<u64> = spans
        .iter()
        .map(|&(from, to)| verify_phase(&p, &trace, &exact(), from, to).definite_violations)
        .collect();
    assert_eq!(per, [0, 10, 10]);
}

/// Cuts [0, end) at `cuts`, as the phases of a run with faults.
fn phase_spans(cuts: &[i64]) -> Vec<(i64, i64)> {
    let mut edges = vec![i64::MIN];
    edges.extend_from_slice(cuts);
    edges.push(i64::MAX);
    edges.windows(2).map(|w| (w[0], w[1])).collect()
}

/// 100 requests/s for 20 s alternating between two correct limiters
/// (the reference API's, on the epoch-aligned clock at `epoch`).
fn two_replicas(p: &Policy, epoch: i64) -> Vec<Obs> {
    let a = reference_api::limiter::local(p, 1_000);
    let b = reference_api::limiter::local(p, 1_000);
    (0..2_000)
        .map(|i| {
            let t = i * 10_000;
            let l = if i % 2 == 0 { &a } else { &b };
            if l.decide("k", t + 150 + epoch).allowed {
                admit(t, t + 300)
            } else {
                reject(t, t + 300)
            }
        })
        .collect()
}

/// Two replicas, each a correct fixed window of its own: 2× the limit,
/// sustained. Unaligned, the 2N rule alone proved almost nothing.
#[test]
fn a_sustained_double_on_an_unaligned_fixed_window_is_caught() {
    for p in [
        Policy::FixedWindow {
            limit: 10,
            window_us: 1_000_000,
        },
        Policy::SlidingWindow {
            limit: 10,
            window_us: 1_000_000,
            segments: 1,
        },
    ] {
        let trace = two_replicas(&p, 0);
        let v = verify_key(&p, &trace, &Options::default());
        let excess = v.admitted - v.replay_admits;
        assert!(excess >= 180, "{p:?}: {v:?}");
        assert!(
            v.definite_violations * 10 >= excess * 8,
            "{p:?}: {} of {excess}",
            v.definite_violations
        );
    }
}

#[test]
fn a_sustained_double_on_a_sliding_counter_is_caught() {
    let p = Policy::SlidingCounter {
        limit: 10,
        window_us: 1_000_000,
    };
    let trace = two_replicas(&p, 0);
    let v = verify_key(&p, &trace, &Options::default());
    let excess = v.admitted - v.replay_admits;
    assert!(excess >= 150, "{v:?}");
    assert!(v.definite_violations * 10 >= excess * 7, "{v:?}");
}

/// Two replicas, each a correct segmented window of its own (10 per 1 s,
/// 4 segments), judged with several clocks as an external target would be:
/// the fake global limit, 2× sustained, was not caught (0 definite) while
/// "S segments hold at most 2N" was the strongest rule.
#[test]
fn a_sustained_double_on_a_segmented_window_with_several_clocks_is_caught() {
    let p = Policy::SlidingWindow {
        limit: 10,
        window_us: 1_000_000,
        segments: 4,
    };
    let trace = two_replicas(&p, 0);
    let several = Options {
        unknown_history: true,
        ..Options::default()
    };
    let v = verify_key(&p, &trace, &several);
    assert!(v.admitted >= 390, "{v:?}");
    // 2N per 5 segments (16/s) + a burst of 24 against 20/s for 20 s.
    assert!(v.definite_violations >= 40, "{v:?}");
    // One replica alone is correct and scores nothing.
    let one: Vec<Obs> = trace.iter().step_by(2).copied().collect();
    assert_eq!(verify_key(&p, &one, &several).definite_violations, 0);
}
