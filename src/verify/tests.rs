//! The verifier end to end on hand-built traces (pass, fail, boundary for
//! each algorithm's rule) and on simulated correct limiters, which must
//! score zero however their decisions are jittered.

use super::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use reference_api::Rate;

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
fn definite(p: &Policy, trace: &[Obs]) -> u64 {
    verify_key(p, trace, &exact()).definite_violations
}

const LOG: Policy = Policy::SlidingLog {
    limit: 2,
    window_us: 1_000,
};

#[test]
fn sliding_log_pass_fail_and_boundary() {
    let pass = [admit(0, 10), admit(500, 510), admit(1_000, 1_010)];
    let fail = [admit(0, 10), admit(500, 510), admit(900, 990)];
    let boundary = [admit(0, 10), admit(500, 510), admit(990, 1_000)];
    assert_eq!(definite(&LOG, &pass), 0);
    assert_eq!(definite(&LOG, &fail), 1);
    assert_eq!(
        definite(&LOG, &boundary),
        0,
        "N+1 admits spanning exactly W"
    );
    let v = verify_key(&LOG, &boundary, &exact());
    assert_eq!(
        v.possible_violations, 1,
        "the decisions may have been 980 µs apart"
    );
}

#[test]
fn fixed_window_any_alignment_needs_more_than_twice_the_limit() {
    let p = Policy::FixedWindow {
        limit: 2,
        window_us: 1_000,
    };
    let four: Vec<Obs> = (0..4).map(|i| admit(i * 100, i * 100 + 5)).collect();
    let five: Vec<Obs> = (0..5).map(|i| admit(i * 100, i * 100 + 5)).collect();
    assert_eq!(definite(&p, &four), 0, "2N across one boundary is legal");
    assert_eq!(definite(&p, &five), 1);
    let spread: Vec<Obs> = (0..5).map(|i| admit(i * 250, i * 250)).collect();
    assert_eq!(definite(&p, &spread), 0, "5 admits spanning exactly W");
}

#[test]
fn segmented_window_bounds() {
    // 2 per 1000 µs in 4 segments: any closed span ≤ 750 holds at most 2.
    let p = Policy::SlidingWindow {
        limit: 2,
        window_us: 1_000,
        segments: 4,
    };
    let fail = [admit(0, 1), admit(300, 301), admit(749, 750)];
    let boundary = [admit(0, 1), admit(300, 301), admit(750, 751)];
    assert_eq!(definite(&p, &fail), 1);
    assert_eq!(
        definite(&p, &boundary),
        0,
        "span 751 > 750 may touch 5 segments"
    );
    // One segment: a fixed window of unknown alignment, at most 2N in a
    // span under W.
    let one = Policy::SlidingWindow {
        limit: 2,
        window_us: 1_000,
        segments: 1,
    };
    let five: Vec<Obs> = (0..5).map(|i| admit(i * 240, i * 240)).collect();
    assert_eq!(definite(&one, &five), 1);
    let four: Vec<Obs> = (0..4).map(|i| admit(i * 240, i * 240)).collect();
    assert_eq!(definite(&one, &four), 0);
}

#[test]
fn sliding_counter_bound() {
    // 4 per 1000 µs: at most 4 + 1 + 4·L/1000 in a span L ≤ 1000.
    let p = Policy::SlidingCounter {
        limit: 4,
        window_us: 1_000,
    };
    let burst = |n: i64| (0..n).map(|_| admit(0, 0)).collect::<Vec<_>>();
    assert_eq!(definite(&p, &burst(5)), 0);
    assert_eq!(definite(&p, &burst(6)), 1);
    // 6 admits need L ≥ 250 µs (5 + 4·0.25 = 6).
    let spread = |last: i64| {
        let mut t = burst(5);
        t.push(admit(last, last));
        t
    };
    assert_eq!(definite(&p, &spread(250)), 0);
    assert_eq!(definite(&p, &spread(249)), 1);
}

#[test]
fn token_bucket_and_gcra_pass_fail_and_boundary() {
    let rate = Rate {
        count: 1,
        per_us: 100,
    };
    for p in [
        Policy::TokenBucket {
            capacity: 3,
            refill: rate,
        },
        Policy::Gcra { rate, burst: 3 },
    ] {
        let at = |last: i64| {
            [
                admit(0, 0),
                admit(0, 0),
                admit(0, 0),
                admit(100, 100),
                admit(last, last),
            ]
        };
        assert_eq!(definite(&p, &at(200)), 0, "{p:?}");
        assert_eq!(definite(&p, &at(199)), 1, "{p:?}");
        let four = [admit(0, 5), admit(0, 5), admit(1, 5), admit(2, 5)];
        assert_eq!(definite(&p, &four), 1, "{p:?}");
    }
}

#[test]
fn allowed_max_and_over_admission_ratio() {
    // A request every 100 µs for 3000 µs, 2 per 1000 µs: 6 allowed.
    let trace: Vec<Obs> = (0..30).map(|i| admit(i * 100, i * 100 + 10)).collect();
    let v = verify_key(&LOG, &trace, &exact());
    assert_eq!(v.allowed_max, 6);
    assert_eq!(v.admitted, 30);
    assert_eq!(v.over_admission_ratio(), Some(5.0));
    assert_eq!(v.peak_window_ratio, 5.0);
}

#[test]
fn false_rejects_are_counted_and_correct_rejects_are_not() {
    let trace = [
        admit(0, 10),
        reject(100, 110),
        admit(200, 210),
        reject(300, 310),
    ];
    let v = verify_key(&LOG, &trace, &exact());
    assert_eq!(v.false_rejects, 1, "only the first reject had room");
    assert_eq!(v.false_reject_ratio(), 0.5);
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
fn three_independent_limiters_are_caught() {
    // The fake global: three correct limiters, each seeing a third of the traffic.
    let p = Policy::SlidingLog {
        limit: 10,
        window_us: 1_000_000,
    };
    let trace: Vec<Obs> = (0..300)
        .map(|i| admit(i * 1_000, i * 1_000 + 500))
        .collect();
    let mut replicas = [0u64; 3];
    let admitted: Vec<Obs> = trace
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let r = &mut replicas[i % 3];
            *r += 1;
            Obs {
                decided: if *r <= 10 {
                    Decided::Admitted
                } else {
                    Decided::Rejected
                },
                ..*o
            }
        })
        .collect();
    let v = verify_key(&p, &admitted, &Options::default());
    assert_eq!(v.admitted, 30);
    assert_eq!(v.allowed_max, 10);
    assert_eq!(v.definite_violations, 20);
    assert_eq!(v.over_admission_ratio(), Some(3.0));
}

#[test]
fn a_known_grid_sharpens_the_fixed_window_verdict() {
    let p = Policy::FixedWindow {
        limit: 2,
        window_us: 1_000,
    };
    let three = [admit(100, 110), admit(400, 410), admit(800, 810)];
    assert_eq!(definite(&p, &three), 0, "alignment unknown: 3 ≤ 2N");
    let aligned = Options {
        aligned: true,
        ..exact()
    };
    assert_eq!(verify_key(&p, &three, &aligned).definite_violations, 1);
    // The same admits with a boundary at 500 (epoch offset 500) are fine.
    let shifted = Options {
        aligned: true,
        epoch_offset_us: 500,
        ..exact()
    };
    assert_eq!(verify_key(&p, &three, &shifted).definite_violations, 0);
}

/// Cuts [0, end) at `cuts`, as the phases of a run with faults.
fn phase_spans(cuts: &[i64]) -> Vec<(i64, i64)> {
    let mut edges = vec![i64::MIN];
    edges.extend_from_slice(cuts);
    edges.push(i64::MAX);
    edges.windows(2).map(|w| (w[0], w[1])).collect()
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

#[test]
fn a_phase_counts_its_own_rejects_against_every_admit() {
    let p = Policy::SlidingLog {
        limit: 2,
        window_us: 1_000_000,
    };
    // Two admits before the cut fill the window: a reject after it is right.
    let full = [admit(0, 100), admit(1_000, 1_100), reject(500_000, 500_100)];
    let v = verify_phase(&p, &full, &exact(), 400_000, i64::MAX);
    assert_eq!(v.false_rejects, 0);
    // With one admit only, the same reject is false — and it belongs to
    // the phase it was sent in, not to the one before.
    let spare = [admit(0, 100), reject(500_000, 500_100)];
    assert_eq!(
        verify_phase(&p, &spare, &exact(), 400_000, i64::MAX).false_rejects,
        1
    );
    assert_eq!(
        verify_phase(&p, &spare, &exact(), i64::MIN, 400_000).false_rejects,
        0
    );
    // The boundary: a reject sent exactly at the cut is in the later phase.
    assert_eq!(
        verify_phase(&p, &spare, &exact(), 500_000, i64::MAX).false_rejects,
        1
    );
    assert_eq!(
        verify_phase(&p, &spare, &exact(), i64::MIN, 500_000).false_rejects,
        0
    );
}

#[test]
fn with_an_unknown_history_early_rejects_are_not_judged() {
    let p = Policy::SlidingLog {
        limit: 2,
        window_us: 1_000_000,
    };
    let unknown = Options {
        unknown_history: true,
        ..exact()
    };
    // No admit seen, yet rejected: false if the limiter started empty,
    // unjudgeable if it may remember admits from before the trace.
    let early = [reject(500_000, 500_100)];
    assert_eq!(verify_key(&p, &early, &exact()).false_rejects, 1);
    assert_eq!(verify_key(&p, &early, &unknown).false_rejects, 0);
    // The boundary: sent exactly one window after the start (plus slack,
    // here 0) is still unjudged; just after it, a reject with room is false.
    let at = [reject(1_000_000, 1_000_100)];
    assert_eq!(verify_key(&p, &at, &unknown).false_rejects, 0);
    let after = [reject(1_000_001, 1_000_100)];
    assert_eq!(verify_key(&p, &after, &unknown).false_rejects, 1);
    assert_eq!(
        verify_phase(&p, &after, &unknown, i64::MIN, i64::MAX).false_rejects,
        1
    );
    assert_eq!(false_reject_times(&p, &early, &unknown), []);
    // Violations are judged all the same: history can only add admits.
    let three = [admit(10, 20), admit(30, 40), admit(50, 60)];
    assert_eq!(verify_key(&p, &three, &unknown).definite_violations, 1);
}

/// The review's cases: each failed on the verifier before issue 12.
mod review {
    use super::*;

    fn unknown() -> Options {
        Options {
            unknown_history: true,
            ..Options::default()
        }
    }

    /// nginx-like GCRA (10 per s, burst 6) judged on a second run: the
    /// bucket was drained by the first one and stays in deficit under
    /// 50 requests/s. A correct GCRA starting empty admits one per 100 ms.
    #[test]
    fn a_bucket_drained_before_the_trace_is_not_charged_false_rejects() {
        let p = Policy::Gcra {
            rate: Rate {
                count: 10,
                per_us: 1_000_000,
            },
            burst: 6,
        };
        let mut tat = 0i64; // drained: the next token comes at 100 ms
        let trace: Vec<Obs> = (0..400)
            .map(|i| {
                let t = i * 20_000;
                if t >= tat {
                    tat = tat.max(t) + 100_000;
                    admit(t, t + 300)
                } else {
                    reject(t, t + 300)
                }
            })
            .collect();
        let v = verify_key(&p, &trace, &unknown());
        assert!(v.rejected > 300);
        assert_eq!(v.false_rejects, 0);
        assert_eq!(v.definite_violations, 0);
        // The same limiter refusing a request with a token in hand is caught.
        let mut wrong = trace.clone();
        let idle: Vec<Obs> = (0..5)
            .map(|i| reject(9_000_000 + i, 9_000_100 + i))
            .collect();
        wrong.extend(idle);
        assert_eq!(verify_key(&p, &wrong, &unknown()).false_rejects, 5);
    }

    /// A request times out at 100 ms; the server admits it at 200 ms. A
    /// later reject of a sliding log that counts it is right.
    #[test]
    fn a_timeout_admitted_after_the_client_gave_up_explains_a_later_reject() {
        let p = Policy::SlidingLog {
            limit: 2,
            window_us: 1_000_000,
        };
        let timeout = Obs {
            sent: 0,
            done: 100_000,
            decided: Decided::Unknown,
        };
        let trace = [
            timeout,
            admit(500_000, 500_100),
            reject(1_150_000, 1_150_100),
        ];
        assert_eq!(verify_key(&p, &trace, &Options::default()).false_rejects, 0);
        // Declared to be decided within 10 ms of giving up: then it left
        // the window by 1,150 ms and the reject had room.
        let bounded = Options {
            max_server_time_us: Some(10_000),
            ..Options::default()
        };
        assert_eq!(verify_key(&p, &trace, &bounded).false_rejects, 1);
    }

    /// One 2 s timeout at the start no longer hides a false reject 10 s later.
    #[test]
    fn one_long_interval_does_not_hide_a_later_false_reject() {
        let p = Policy::TokenBucket {
            capacity: 2,
            refill: Rate {
                count: 1,
                per_us: 100_000,
            },
        };
        let trace = [
            admit(0, 2_000_000),
            admit(10_000_000, 10_000_500),
            reject(10_500_000, 10_500_500),
        ];
        assert_eq!(verify_key(&p, &trace, &Options::default()).false_rejects, 1);
    }

    /// An ASP.NET-style fixed window: replenished on a heartbeat every
    /// `tick`, once a full window has passed since the last replenishment.
    fn aspnet_fixed(limit: u64, window: i64, tick: i64, sends: &[i64]) -> Vec<Obs> {
        let (mut last, mut count) = (0i64, 0u64);
        let mut next_tick = tick;
        sends
            .iter()
            .map(|&t| {
                while next_tick <= t {
                    if next_tick - last >= window {
                        (last, count) = (next_tick, 0);
                    }
                    next_tick += tick;
                }
                if count < limit {
                    count += 1;
                    admit(t, t + 200)
                } else {
                    reject(t, t + 200)
                }
            })
            .collect()
    }

    #[test]
    fn windows_replenished_late_by_a_heartbeat_are_judged_with_their_lateness() {
        // 10 per 1 s window, heartbeat 100 ms starting 30 ms off the window:
        // each window lasts 1.03..1.1 s and drifts.
        let p = Policy::FixedWindow {
            limit: 10,
            window_us: 1_000_000,
        };
        let sends: Vec<i64> = (0..1_000).map(|i| i * 9_000).collect();
        let trace = aspnet_fixed(10, 1_000_000, 103_000, &sends);
        let on_time = verify_key(&p, &trace, &Options::default());
        assert!(
            on_time.false_rejects > 0,
            "the late windows look like false rejects"
        );
        let late = Options {
            lateness_us: 103_000,
            ..Options::default()
        };
        let v = verify_key(&p, &trace, &late);
        assert_eq!((v.definite_violations, v.false_rejects), (0, 0));
    }

    #[test]
    fn a_chunked_bucket_is_judged_by_whole_refills() {
        // ASP.NET TokenBucket: 4 tokens, 2 per 100 ms in one chunk.
        let p = Policy::TokenBucket {
            capacity: 4,
            refill: Rate {
                count: 2,
                per_us: 100_000,
            },
        };
        let chunked = Options {
            chunked_refill: true,
            lateness_us: 0,
            slack_us: 0,
            ..Options::default()
        };
        // 4 at once, then the chunk of 2 just after 100 ms: 6 within 100 ms
        // + a little — the continuous bound 4 + 2·L/100 ms would say 4.
        let mut trace: Vec<Obs> = (0..4).map(|_| admit(99_000, 99_000)).collect();
        trace.extend((0..2).map(|_| admit(100_000, 100_000)));
        assert_eq!(verify_key(&p, &trace, &chunked).definite_violations, 0);
        trace.push(admit(100_000, 100_000));
        assert_eq!(verify_key(&p, &trace, &chunked).definite_violations, 1);
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
            let excess = v.admitted - v.allowed_max;
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
        let excess = v.admitted - v.allowed_max;
        assert!(excess >= 150, "{v:?}");
        assert!(v.definite_violations * 10 >= excess * 7, "{v:?}");
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

    #[test]
    fn more_than_the_limit_inside_one_aligned_sliding_counter_window_is_a_violation() {
        let p = Policy::SlidingCounter {
            limit: 3,
            window_us: 1_000,
        };
        // 4 admits inside [0, 1000): within the N + 1 + N·L/W any-alignment
        // allowance, but more than N in one aligned window.
        let four = [admit(0, 1), admit(1, 2), admit(600, 601), admit(990, 991)];
        let aligned = Options {
            aligned: true,
            ..exact()
        };
        assert_eq!(verify_key(&p, &four, &exact()).definite_violations, 0);
        assert_eq!(verify_key(&p, &four, &aligned).definite_violations, 1);
        let three = &four[..3];
        assert_eq!(verify_key(&p, three, &aligned).definite_violations, 0);
    }

    #[test]
    fn the_epoch_uncertainty_widens_the_grid_rules() {
        let p = Policy::FixedWindow {
            limit: 2,
            window_us: 1_000,
        };
        let three = [admit(100, 110), admit(400, 410), admit(980, 990)];
        let aligned = Options {
            aligned: true,
            ..exact()
        };
        assert_eq!(verify_key(&p, &three, &aligned).definite_violations, 1);
        // The boundary may be 20 µs earlier: the third admit may be past it.
        let unsure = Options {
            epoch_uncertainty_us: 20,
            ..aligned
        };
        assert_eq!(verify_key(&p, &three, &unsure).definite_violations, 0);
    }

    #[test]
    fn witnesses_name_the_admits_and_the_rule() {
        let p = Policy::SlidingLog {
            limit: 2,
            window_us: 1_000,
        };
        let trace = [
            admit(0, 10),
            reject(100, 110),
            admit(500, 510),
            admit(900, 990),
        ];
        let (v, w) = judge_key(&p, &trace, &exact(), true);
        assert_eq!(v.definite_violations, 1);
        let violation = w.iter().find(|w| w.kind == Kind::Violation).unwrap();
        assert_eq!(violation.requests, [0, 2, 3]);
        assert!(
            violation.rule.starts_with(
                "3 admits, all decided between 0.000 s and 0.001 s (0.001 s < 1 ms); \
                 the policy allows 2"
            ),
            "{}",
            violation.rule
        );
        let fr = w.iter().find(|w| w.kind == Kind::FalseReject).unwrap();
        assert_eq!((fr.reject, fr.requests.clone()), (Some(1), vec![0]));
        assert!(fr.rule.contains("at most 1 requests"), "{}", fr.rule);
        // A correct trace has none.
        let (_, none) = judge_key(&p, &[admit(0, 10), admit(500, 510)], &exact(), true);
        assert!(none.is_empty());
    }
}

/// With several clocks (replicas reading their own, within the slack of
/// each other), keyed segments and sliding counters may miss the admits of
/// the segment ahead of a reading: the rules that rely on the order of
/// readings are off, the per-segment and per-window ones stay.
mod several_clocks {
    use super::*;

    fn several() -> Options {
        Options {
            one_clock: false,
            ..exact()
        }
    }

    #[test]
    fn keyed_segments_straddling_an_edge_are_not_a_violation() {
        // The adversarial suite's case: limit 1, 3 ms in 3 segments; replica
        // A (+400 µs) reads segment 3 at 2.800 ms and admits; replica B
        // (exact) reads segment 2 at 2.810 ms and admits too — each view is
        // correct, the two readings straddle the edge.
        let p = Policy::SlidingWindow {
            limit: 1,
            window_us: 3_000,
            segments: 3,
        };
        let trace = [admit(2_800, 2_800), admit(2_810, 2_810)];
        assert_eq!(verify_key(&p, &trace, &exact()).definite_violations, 1);
        assert_eq!(verify_key(&p, &trace, &several()).definite_violations, 0);
        // Three within one segment's length is more than two segments hold.
        let three = [
            admit(2_800, 2_800),
            admit(2_810, 2_810),
            admit(2_820, 2_820),
        ];
        assert_eq!(verify_key(&p, &three, &several()).definite_violations, 1);
        // Within two segments, 2N + 1 with short intervals is proof too.
        let spread = [admit(0, 1), admit(1_000, 1_001), admit(1_999, 2_000)];
        assert_eq!(verify_key(&p, &spread, &several()).definite_violations, 1);
        // ... not when an interval is as long as a segment (its reading may
        // be a whole segment away from where it reached the state).
        let long = [admit(0, 1_000), admit(1_000, 1_001), admit(1_999, 2_000)];
        assert_eq!(verify_key(&p, &long, &several()).definite_violations, 0);
    }

    #[test]
    fn keyed_sliding_counters_straddling_an_edge_are_not_a_violation() {
        // Limit 2, 10 ms: A (+400 µs) admits two reading window 1, B admits
        // two reading window 0 (its key still empty): 4 within 10 µs.
        let p = Policy::SlidingCounter {
            limit: 2,
            window_us: 10_000,
        };
        let trace = [
            admit(9_800, 9_800),
            admit(9_801, 9_801),
            admit(9_805, 9_805),
            admit(9_810, 9_810),
        ];
        assert_eq!(verify_key(&p, &trace, &exact()).definite_violations, 1);
        assert_eq!(verify_key(&p, &trace, &several()).definite_violations, 0);
        // Five are more than two windows hold.
        let mut five = trace.to_vec();
        five.push(admit(9_811, 9_811));
        assert_eq!(verify_key(&p, &five, &several()).definite_violations, 1);
    }
}
