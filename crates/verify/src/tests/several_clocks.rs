//! With several clocks (replicas reading their own, within the slack of
//! each other), keyed segments and sliding counters may miss the admits of
//! the segment ahead of a reading: the rules that rely on the order of
//! readings are off, the per-segment and per-window ones stay.

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
