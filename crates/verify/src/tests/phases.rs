//! Phase verdicts (before, during and after faults) and early rejects on
//! a target with an unknown history.

use super::*;

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
