//! Phase verdicts (before, during and after faults) and early rejects on
//! a target with an unknown history.

use super::*;

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
