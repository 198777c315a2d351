//! Buckets that refill in whole chunks at clock boundaries (issue 35,
//! finding 3): Stripe's Redis token bucket, as Spring Cloud Gateway runs
//! it, reads the time in whole seconds and adds a second's tokens at once;
//! Envoy's local limit refills from a timer. Judged as a continuous bucket
//! such a limiter looks broken; declared as chunks it is exact.

use super::*;

/// Capacity 10, 5 tokens a second.
const BUCKET: Policy = Policy::TokenBucket {
    capacity: 10,
    refill: Rate {
        count: 5,
        per_us: 1_000_000,
    },
};

/// Several clocks, 1 ms slack; trace time 0 is a whole second of the
/// limiter's clock (this machine's), known exactly.
fn chunks(on_epoch: bool) -> Options {
    Options {
        chunked_refill: true,
        chunks_on_epoch: on_epoch,
        aligned: on_epoch,
        epoch_offset_us: 1_790_000_000_000_000,
        ..Options::default()
    }
}

fn continuous() -> Options {
    Options {
        epoch_offset_us: 1_790_000_000_000_000,
        ..Options::default()
    }
}

/// Ten admits at 0.990 s, five at 1.001 s: the second's chunk landed at
/// 1.000 s. A continuous bucket of this rate could not.
fn across_a_boundary() -> Vec<Obs> {
    let mut t: Vec<Obs> = (0..10).map(|_| admit(990_000, 990_100)).collect();
    t.extend((0..5).map(|_| admit(1_001_000, 1_001_100)));
    t
}

/// Ten admits at 0.100 s drain the bucket; a reject at 0.950 s: no chunk
/// has come yet.
fn drained_then_rejected() -> Vec<Obs> {
    let mut t: Vec<Obs> = (0..10).map(|_| admit(100_000, 100_100)).collect();
    t.push(reject(950_000, 950_100));
    t
}

#[test]
fn a_bucket_counting_whole_seconds_is_exact_when_declared() {
    for on_epoch in [true, false] {
        let opts = chunks(on_epoch);
        let v = verify_key(&BUCKET, &across_a_boundary(), &opts);
        assert_eq!(v.definite_violations, 0, "epoch {on_epoch}: {v:?}");
        assert!(v.admitted <= v.allowed_max, "epoch {on_epoch}: {v:?}");
        let v = verify_key(&BUCKET, &drained_then_rejected(), &opts);
        assert_eq!(v.false_rejects, 0, "epoch {on_epoch}: {v:?}");
    }
    // Declared continuous, the same answers are 5 violations and a false
    // reject: what the issue found.
    let v = verify_key(&BUCKET, &across_a_boundary(), &continuous());
    assert_eq!(v.definite_violations, 5, "{v:?}");
    let v = verify_key(&BUCKET, &drained_then_rejected(), &continuous());
    assert_eq!(v.false_rejects, 1, "{v:?}");
}

/// On the known epoch grid a second holds at most the capacity: eleven
/// admits surely inside one second are one too many, though a bucket of
/// unknown alignment may hold 15 there (a chunk may land in between).
#[test]
fn on_the_epoch_a_second_holds_at_most_the_capacity() {
    let eleven: Vec<Obs> = (0..11)
        .map(|i| admit(200_000 + i * 60_000, 200_100 + i * 60_000))
        .collect();
    assert_eq!(
        verify_key(&BUCKET, &eleven, &chunks(true)).definite_violations,
        1
    );
    assert_eq!(
        verify_key(&BUCKET, &eleven, &chunks(false)).definite_violations,
        0
    );
    // The boundary: the eleventh sent within the slack of the next second
    // may have been decided in it.
    let mut edge = eleven.clone();
    edge[10] = admit(999_000, 999_100);
    assert_eq!(
        verify_key(&BUCKET, &edge, &chunks(true)).definite_violations,
        0
    );
    edge[10] = admit(998_000, 998_999);
    assert_eq!(
        verify_key(&BUCKET, &edge, &chunks(true)).definite_violations,
        1
    );
    // Epoch chunks with a clock rlbench does not know: any alignment.
    let unknown = Options {
        aligned: false,
        ..chunks(true)
    };
    assert_eq!(
        verify_key(&BUCKET, &eleven, &unknown).definite_violations,
        0
    );
}

/// Any alignment: a period holds the capacity and one chunk, 15; a
/// sixteenth within one second is a violation, and so is a rate of
/// chunks kept up too fast (three replicas, 15 a second for 20 s).
#[test]
fn any_alignment_bounds_a_period_by_capacity_and_one_chunk() {
    let sixteen: Vec<Obs> = (0..16)
        .map(|i| admit(200_000 + i * 40_000, 200_100 + i * 40_000))
        .collect();
    assert_eq!(
        verify_key(&BUCKET, &sixteen[..15], &chunks(false)).definite_violations,
        0
    );
    assert_eq!(
        verify_key(&BUCKET, &sixteen, &chunks(false)).definite_violations,
        1
    );
    let three: Vec<Obs> = (0..300)
        .map(|i| admit(i * 66_000, i * 66_000 + 500))
        .collect();
    let v = verify_key(&BUCKET, &three, &chunks(false));
    assert!(v.definite_violations >= 180, "{v:?}");
}
