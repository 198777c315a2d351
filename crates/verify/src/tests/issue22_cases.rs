//! The second review's cases (issue 22): each a trace that was judged
//! wrongly before, checked by hand.

use super::*;

/// Capacity 10, 5 per s, refill late by up to 500 ms: ten admits at
/// 5.000 s empty the bucket; at 5.450 s a correct limiter whose refill has
/// not come yet rejects (450 ms surely brought no token once the refill
/// may be 500 ms late). Both a token bucket and GCRA of that shape.
#[test]
fn a_late_refill_explains_a_reject_of_a_continuous_bucket() {
    let rate = Rate {
        count: 5,
        per_us: 1_000_000,
    };
    let late = Options {
        lateness_us: 500_000,
        ..exact()
    };
    for p in [
        Policy::TokenBucket {
            capacity: 10,
            refill: rate,
        },
        Policy::Gcra { rate, burst: 10 },
    ] {
        let mut trace: Vec<Obs> = (0..10).map(|_| admit(5_000_000, 5_000_000)).collect();
        trace.push(reject(5_450_000, 5_450_000));
        assert_eq!(verify_key(&p, &trace, &late).false_rejects, 0, "{p:?}");
        assert_eq!(
            verify_key(&p, &trace, &exact()).false_rejects,
            1,
            "{p:?}: on time, 450 ms bring 2.25 tokens"
        );
        // The boundary: a refill 500 ms late brings its first token at
        // 5.700 s; the verifier allows for ⌈5 · 0.5⌉ = 3 missing tokens, so
        // it is sure of one only from 5.800 s (4 tokens − 3).
        let mut later = trace.clone();
        later[10] = reject(5_690_000, 5_690_000);
        assert_eq!(verify_key(&p, &later, &late).false_rejects, 0, "{p:?}");
        later[10] = reject(5_799_000, 5_799_000);
        assert_eq!(verify_key(&p, &later, &late).false_rejects, 0, "{p:?}");
        later[10] = reject(5_800_000, 5_800_000);
        assert_eq!(verify_key(&p, &later, &late).false_rejects, 1, "{p:?}");
    }
}

/// The rule at its boundary, with admits decided where they were sent:
/// 2N within a closed span of S segments is allowed, 2N + 1 is not; and
/// over long spans the rate is 2N per S+1 segments.
#[test]
fn s_plus_one_segments_hold_at_most_twice_the_limit() {
    // N = 2, W = 4 ms in S = 4 segments of 1 ms.
    let p = Policy::SlidingWindow {
        limit: 2,
        window_us: 4_000,
        segments: 4,
    };
    let several = Options {
        one_clock: false,
        ..exact()
    };
    let at = |ts: &[i64]| -> Vec<Obs> { ts.iter().map(|&t| admit(t, t)).collect() };
    // Spread so that no segment holds more than N and no S−1 segments
    // (the one-clock window) are tested: 4 admits within 4 000 µs.
    assert_eq!(
        verify_key(&p, &at(&[0, 1_000, 2_000, 4_000]), &several).definite_violations,
        0,
        "2N within S·g, closed"
    );
    assert_eq!(
        verify_key(&p, &at(&[0, 1_000, 2_000, 3_000, 4_000]), &several).definite_violations,
        1,
        "2N + 1 within S·g"
    );
    assert_eq!(
        verify_key(&p, &at(&[0, 1_000, 2_000, 3_000, 4_001]), &several).definite_violations,
        0,
        "2N + 1 just over S·g: six segments may be met"
    );
    // Long intervals (a segment or more) prove nothing by this rule.
    let mut long = at(&[0, 1_000, 2_000, 3_000, 4_000]);
    long[2].done = 3_000;
    assert_eq!(verify_key(&p, &long, &several).definite_violations, 0);
}

/// An earlier run's straggler: a request sent before the trace and decided
/// (admitted) 300 ms after it started, by a sliding log of 2 per 1 s. A
/// reject at 1.050 s, past the log's memory of the start, is right: the
/// straggler and one more still count. Rejects are judged only once the
/// stragglers are decided (`history_settles_us`) and forgotten.
#[test]
fn a_straggler_from_an_earlier_run_explains_an_early_reject() {
    let p = Policy::SlidingLog {
        limit: 2,
        window_us: 1_000_000,
    };
    let trace = [admit(900_000, 900_100), reject(1_050_000, 1_050_100)];
    let unknown = |settles| Options {
        unknown_history: true,
        history_settles_us: settles,
        ..exact()
    };
    assert_eq!(
        verify_key(&p, &trace, &unknown(0)).false_rejects,
        1,
        "with no stragglers the log held one admit"
    );
    assert_eq!(verify_key(&p, &trace, &unknown(500_000)).false_rejects, 0);
    // After the stragglers are decided and forgotten, rejects count again.
    let late = [admit(1_400_000, 1_400_100), reject(1_600_000, 1_600_100)];
    assert_eq!(verify_key(&p, &late, &unknown(500_000)).false_rejects, 1);
    let boundary = [admit(1_400_000, 1_400_100), reject(1_500_000, 1_500_100)];
    assert_eq!(
        verify_key(&p, &boundary, &unknown(500_000)).false_rejects,
        0
    );
}

/// The same for a bucket (2 tokens, 1 per s), taken as empty at the start:
/// a straggler admitted at 1.000 s took the token refilled by then, so a
/// reject at 1.200 s is right. With the stragglers decided by 1 s, the
/// bucket is taken as empty then, and a reject is false once a token has
/// surely come back (2.1 s).
#[test]
fn a_straggler_empties_a_bucket_taken_as_empty_at_the_start() {
    let p = Policy::TokenBucket {
        capacity: 2,
        refill: Rate {
            count: 1,
            per_us: 1_000_000,
        },
    };
    let unknown = |settles| Options {
        unknown_history: true,
        history_settles_us: settles,
        ..exact()
    };
    let early = [reject(1_200_000, 1_200_000)];
    assert_eq!(verify_key(&p, &early, &unknown(0)).false_rejects, 1);
    assert_eq!(verify_key(&p, &early, &unknown(1_000_000)).false_rejects, 0);
    let later = [reject(1_900_000, 1_900_000)];
    assert_eq!(verify_key(&p, &later, &unknown(1_000_000)).false_rejects, 0);
    let later = [reject(2_100_000, 2_100_000)];
    assert_eq!(verify_key(&p, &later, &unknown(1_000_000)).false_rejects, 1);
}

/// A chunked bucket (4 tokens, 2 per 100 ms) whose chunk lands at the very
/// instant of a burst: 4 admits, the refill, 2 more — 6 at one instant,
/// with no slack. "More than B at once" called that 2 violations; it was
/// never a rule a correct chunked bucket keeps, and it is gone.
#[test]
fn a_chunk_landing_mid_burst_is_not_a_violation() {
    let p = Policy::TokenBucket {
        capacity: 4,
        refill: Rate {
            count: 2,
            per_us: 100_000,
        },
    };
    let chunked = Options {
        chunked_refill: true,
        ..exact()
    };
    let mut trace: Vec<Obs> = (0..6).map(|_| admit(100_000, 100_000)).collect();
    assert_eq!(verify_key(&p, &trace, &chunked).definite_violations, 0);
    // One more than burst plus one chunk within one period is still caught.
    trace.push(admit(100_000, 100_000));
    assert_eq!(verify_key(&p, &trace, &chunked).definite_violations, 1);
}

/// A wall clock slewed 0.5 % fast against the generator's: a correct
/// sliding log of 10 per 1 s, reading it, forgets an admit after 0.995 s of
/// trace time. Eleven admits decided between 0.013 s and 1.010 s (0.998 s
/// with the slack) were charged a definite violation; with the rate
/// allowed for (5 000 ppm and the margin) they are not — and 0.990 s is
/// still too short for any clock within the rate.
#[test]
fn a_fast_wall_clock_shortens_every_window_and_the_verdict_allows_it() {
    let p = Policy::SlidingLog {
        limit: 10,
        window_us: 1_000_000,
    };
    let mut trace: Vec<Obs> = (0..10)
        .map(|i| admit(13_000 + i * 10_000, 13_100 + i * 10_000))
        .collect();
    trace.push(admit(1_009_000, 1_010_000));
    let at = |ppm| Options {
        clock_rate_ppm: ppm,
        ..Options::default()
    };
    assert_eq!(verify_key(&p, &trace, &at(0)).definite_violations, 1);
    assert_eq!(verify_key(&p, &trace, &at(5_100)).definite_violations, 0);
    trace[10] = admit(1_000_000, 1_002_000);
    assert_eq!(verify_key(&p, &trace, &at(5_100)).definite_violations, 1);
    // The other way: a clock 0.5 % slow keeps a window 1.005 s; a reject
    // 1.003 s after ten admits is right, and one at 1.020 s is false.
    let mut slow: Vec<Obs> = (0..10).map(|_| admit(0, 100)).collect();
    slow.push(reject(1_003_000, 1_003_100));
    assert_eq!(verify_key(&p, &slow, &at(0)).false_rejects, 1);
    assert_eq!(verify_key(&p, &slow, &at(5_100)).false_rejects, 0);
    slow[10] = reject(1_020_000, 1_020_100);
    assert_eq!(verify_key(&p, &slow, &at(5_100)).false_rejects, 1);
}

/// The same for a bucket: 10 tokens and 10 per s on a clock 0.5 % fast
/// refill 10.05 per trace second; 10 + 10.05 admitted within one second
/// are within the policy as the limiter's clock counts it.
#[test]
fn a_fast_clock_refills_a_bucket_faster_on_the_trace() {
    let p = Policy::TokenBucket {
        capacity: 10,
        refill: Rate {
            count: 10,
            per_us: 1_000_000,
        },
    };
    let at = |ppm| Options {
        clock_rate_ppm: ppm,
        ..exact()
    };
    let mut trace: Vec<Obs> = (0..10).map(|_| admit(0, 0)).collect();
    // One every 99.5 ms: a token as the fast clock brings it.
    trace.extend((1..=10).map(|i| admit(i * 99_500, i * 99_500)));
    assert_eq!(verify_key(&p, &trace, &at(0)).definite_violations, 1);
    assert_eq!(verify_key(&p, &trace, &at(5_100)).definite_violations, 0);
}

/// A limiter that counts every attempt (HAProxy's stick tables): 10 per
/// 1 s as a sliding log; a client sending 50 per s stays limited after its
/// first 10, since its rejected attempts fill the window. Judged as a plain
/// sliding log that is hundreds of false rejects; with `count_rejected`
/// none, and an admit after 10 attempts within the window is a violation.
#[test]
fn limiters_that_count_rejected_attempts_are_judged_as_such() {
    let p = Policy::SlidingLog {
        limit: 10,
        window_us: 1_000_000,
    };
    // Admit while fewer than 10 attempts (any outcome) in the last second.
    let mut attempts: Vec<i64> = Vec::new();
    let trace: Vec<Obs> = (0..400)
        .map(|i| {
            let t = i * 20_000;
            let counted = attempts.iter().filter(|&&a| a > t - 1_000_000).count();
            attempts.push(t);
            if counted < 10 {
                admit(t, t + 500)
            } else {
                reject(t, t + 500)
            }
        })
        .collect();
    assert_eq!(
        trace
            .iter()
            .filter(|o| o.decided == Decided::Admitted)
            .count(),
        10
    );
    let plain = Options::default();
    let counting = Options {
        count_rejected: true,
        ..Options::default()
    };
    assert!(verify_key(&p, &trace, &plain).false_rejects > 300);
    let v = verify_key(&p, &trace, &counting);
    assert_eq!((v.definite_violations, v.false_rejects), (0, 0), "{v:?}");
    assert_eq!(v.allowed_max, 10, "no correct counting limiter admits more");
    // One admit more, after 10 attempts within the window: proven.
    let mut wrong = trace.clone();
    wrong[50].decided = Decided::Admitted;
    let (v, w) = judge_key(&p, &wrong, &counting, true);
    assert_eq!(v.definite_violations, 1, "{v:?}");
    assert!(v.over_admission_ratio().unwrap() > 1.0);
    assert!(w[0].rule.contains("after 10 attempts"), "{}", w[0].rule);
    // The boundary: an admit once the window holds 9 attempts is right.
    let quiet: Vec<Obs> = (0..9)
        .map(|i| reject(i * 1_000, i * 1_000 + 10))
        .chain([admit(500_000, 500_010)])
        .collect();
    assert_eq!(verify_key(&p, &quiet, &counting).definite_violations, 0);
    let full: Vec<Obs> = (0..10)
        .map(|i| reject(i * 1_000, i * 1_000 + 10))
        .chain([admit(500_000, 500_010)])
        .collect();
    assert_eq!(verify_key(&p, &full, &counting).definite_violations, 1);
    // A reject after 10 attempts within the window (admitted or not: each
    // counts) is right; after 9 it is false.
    let after = |n: i64| -> Vec<Obs> {
        (0..n)
            .map(|i| {
                if i % 2 == 0 {
                    admit(i * 1_000, i * 1_000 + 10)
                } else {
                    reject(i * 1_000, i * 1_000 + 10)
                }
            })
            .chain([reject(500_000, 500_010)])
            .collect()
    };
    let last_is_false =
        |t: &[Obs]| false_reject_times(&p, t, &counting).contains(&(500_000, 500_010));
    assert!(!last_is_false(&after(10)));
    assert!(last_is_false(&after(9)));
}

/// The same for a sliding counter (HAProxy's `http_req_rate`): the weighted
/// estimate over every attempt.
#[test]
fn a_sliding_counter_counting_attempts_is_judged_by_its_estimate() {
    let p = Policy::SlidingCounter {
        limit: 10,
        window_us: 1_000_000,
    };
    let counting = Options {
        count_rejected: true,
        ..Options::default()
    };
    // A correct counter of attempts, epoch-aligned at 0: estimate over the
    // previous and current window, admit below 10.
    let mut per_window: std::collections::BTreeMap<i64, u64> = Default::default();
    let trace: Vec<Obs> = (0..400)
        .map(|i| {
            let t = i * 20_000 + 7;
            let k = t / 1_000_000;
            let elapsed = t - k * 1_000_000;
            let prev = *per_window.get(&(k - 1)).unwrap_or(&0) as f64;
            let cur = *per_window.get(&k).unwrap_or(&0) as f64;
            let estimate = prev * (1_000_000 - elapsed) as f64 / 1e6 + cur;
            *per_window.entry(k).or_default() += 1;
            if estimate < 10.0 {
                admit(t, t + 300)
            } else {
                reject(t, t + 300)
            }
        })
        .collect();
    let v = verify_key(&p, &trace, &counting);
    assert!(v.rejected > 300, "{v:?}");
    assert_eq!((v.definite_violations, v.false_rejects), (0, 0), "{v:?}");
    assert!(
        verify_key(&p, &trace, &Options::default()).false_rejects > 100,
        "judged as counting admits only"
    );
    // 20 attempts within 100 ms weigh more than 20 × 0.9 = 18 > 11: an
    // admit after them is proven wrong.
    let mut flood: Vec<Obs> = (0..20)
        .map(|i| reject(i * 1_000, i * 1_000 + 100))
        .collect();
    flood.push(admit(100_000, 100_100));
    assert_eq!(verify_key(&p, &flood, &counting).definite_violations, 1);
}
