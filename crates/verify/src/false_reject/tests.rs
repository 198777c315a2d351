//! False rejects on hand-built traces: for each check one reject that is
//! right, one that is false, and the boundary between them; and the review's
//! cases (a bucket drained before the trace, a timeout the server decided
//! after the client gave up, one long interval hiding a plain false reject).

use super::*;

fn at(pairs: &[(i64, i64)]) -> Vec<Item> {
    pairs.iter().map(|&(x, y)| Item { x, y }).collect()
}

fn false_ones(check: RejectCheck, admits: &[Item], rejects: &[Item], start: Start) -> u64 {
    count(check, admits, rejects, 0, start)
}

const LOG: RejectCheck = RejectCheck::Lookback {
    limit: 2,
    span: 1_000,
};

#[test]
fn a_reject_with_a_full_window_is_correct() {
    let admits = at(&[(0, 10), (100, 110)]);
    assert_eq!(
        false_ones(LOG, &admits, &at(&[(500, 510)]), Start::Fresh),
        0
    );
}

#[test]
fn a_reject_with_spare_capacity_is_false() {
    let admits = at(&[(0, 10)]);
    assert_eq!(
        false_ones(LOG, &admits, &at(&[(500, 510)]), Start::Fresh),
        1
    );
    let p = proof(LOG, &admits, &Item { x: 500, y: 510 }, 0, Start::Fresh);
    assert_eq!((p.counted, p.from, p.spare), (vec![0], -500, 1));
}

#[test]
fn the_boundary_gives_the_limiter_the_benefit_of_the_doubt() {
    let admits = at(&[(0, 10), (100, 110)]);
    // The first admit may have been decided at 10; a reject decided in
    // [1005, 1015] may still see it inside its window.
    assert_eq!(
        false_ones(LOG, &admits, &at(&[(1_005, 1_015)]), Start::Fresh),
        0
    );
    // From 1011 on it has certainly left.
    assert_eq!(
        false_ones(LOG, &admits, &at(&[(1_011, 1_020)]), Start::Fresh),
        1
    );
}

#[test]
fn unknown_results_count_as_admits() {
    let reject = at(&[(900, 910)]);
    assert_eq!(false_ones(LOG, &at(&[(0, 10)]), &reject, Start::Fresh), 1);
    let with_timeout = at(&[(0, 10), (50, 2_050)]); // the 2nd timed out
    assert_eq!(false_ones(LOG, &with_timeout, &reject, Start::Fresh), 0);
}

#[test]
fn a_timeout_may_be_decided_long_after_the_client_gave_up() {
    // The review's case: a request times out at 100 µs, the server admits
    // it later anyway. A reject at 1,500 (its window reaches back to 500)
    // with one other admit is then right: the undecided one may be in it.
    let decided = (1_000, 1_010);
    let gave_up = Item { x: 50, y: 100 };
    let reject = at(&[(1_500, 1_510)]);
    // Clamped to `done`, the timeout has left the window: a false reject.
    let clamped = [Item { x: 1_000, y: 1_010 }, gave_up];
    assert_eq!(false_ones(LOG, &clamped, &reject, Start::Fresh), 1);
    // Decided any time after its send: it may still count.
    let open = at(&[decided, (50, i64::MAX)]);
    assert_eq!(false_ones(LOG, &open, &reject, Start::Fresh), 0);
    // With a declared bound on server time (here: decided by 300) it has left.
    let bounded = at(&[decided, (50, 300)]);
    assert_eq!(false_ones(LOG, &bounded, &reject, Start::Fresh), 1);
}

const BUCKET: RejectCheck = RejectCheck::Bucket {
    burst: 2,
    count: 1,
    per: 100,
    loss: 0,
};

#[test]
fn a_bucket_reject_after_a_drained_burst_is_correct() {
    let admits = at(&[(0, 1), (0, 1)]);
    assert_eq!(
        false_ones(BUCKET, &admits, &at(&[(50, 51)]), Start::Fresh),
        0
    );
}

#[test]
fn a_bucket_reject_with_tokens_left_is_false() {
    let admits = at(&[(0, 1)]);
    // One token left plus 0.5 refilled at 50 µs.
    assert_eq!(
        false_ones(BUCKET, &admits, &at(&[(50, 51)]), Start::Fresh),
        1
    );
    // After the refill the drained bucket has a token again.
    let drained = at(&[(0, 1), (0, 1)]);
    assert_eq!(
        false_ones(BUCKET, &drained, &at(&[(150, 151)]), Start::Fresh),
        1
    );
    // ...but not yet at 100 µs: the admits may have been decided at 1.
    assert_eq!(
        false_ones(BUCKET, &drained, &at(&[(100, 101)]), Start::Fresh),
        0
    );
    // (A reject answered at once: its own interval costs nothing.)
    assert_eq!(
        false_ones(BUCKET, &drained, &at(&[(101, 101)]), Start::Fresh),
        1
    );
    // Answered 1 µs later, another decision may have come between its
    // clock read and its turn: one µs of refill less.
    assert_eq!(
        false_ones(BUCKET, &drained, &at(&[(101, 102)]), Start::Fresh),
        0
    );
    let p = proof(BUCKET, &drained, &Item { x: 150, y: 151 }, 0, Start::Fresh);
    assert_eq!(p.spare, 1);
}

#[test]
fn a_concurrent_admit_may_have_taken_the_token() {
    let admits = at(&[(0, 1), (40, 60)]);
    assert_eq!(
        false_ones(BUCKET, &admits, &at(&[(50, 55)]), Start::Fresh),
        0
    );
}

#[test]
fn a_bucket_drained_before_the_trace_starts_empty() {
    // The review's case: under sustained load a bucket drained by an
    // earlier run stays in deficit. 10 tokens, 10 per 1000 µs, load at
    // 20 per 1000 µs: a correct bucket that starts empty admits one request
    // per 100 µs and rejects the rest.
    let check = RejectCheck::Bucket {
        burst: 10,
        count: 10,
        per: 1_000,
        loss: 0,
    };
    let (mut admits, mut rejects) = (Vec::new(), Vec::new());
    for i in 0..200 {
        let t = i * 50 + 50;
        if i % 2 == 1 {
            admits.push(Item { x: t, y: t + 5 });
        } else {
            rejects.push(Item { x: t, y: t + 5 });
        }
    }
    // Judged as if the bucket started full, half the rejects look false
    // (long after any "one refill time" exemption would have ended).
    assert!(false_ones(check, &admits, &rejects, Start::Fresh) > 50);
    // Starting empty (never below): every reject is consistent.
    assert_eq!(
        false_ones(check, &admits, &rejects, Start::Unknown { settled: 0 }),
        0
    );
    // And an empty start still catches a real false reject: nothing is
    // admitted for 5,000 µs, yet a request is refused.
    let idle = at(&[(6_000, 6_005)]);
    assert_eq!(
        false_ones(check, &[], &idle, Start::Unknown { settled: 0 }),
        1
    );
    // The boundary: an empty bucket holds its first token after 100 µs.
    assert_eq!(
        false_ones(check, &[], &at(&[(99, 100)]), Start::Unknown { settled: 0 }),
        0
    );
    assert_eq!(
        false_ones(
            check,
            &[],
            &at(&[(100, 100)]),
            Start::Unknown { settled: 0 }
        ),
        1
    );
}

#[test]
fn one_long_interval_does_not_blind_the_bucket_check() {
    // The review's case: a 2 s timeout at the start used to widen every
    // admit's possible lag to 2 s and hid a plain false reject 10 s later.
    let admits = at(&[(0, 2_000_000), (10_000_000, 10_000_010)]);
    let reject = at(&[(10_500_000, 10_500_010)]);
    assert_eq!(false_ones(BUCKET, &admits, &reject, Start::Fresh), 1);
}

#[test]
fn a_chunked_refill_counts_whole_late_periods_only() {
    // ASP.NET-style: 1 token per period of 100 µs, late by up to 20 µs,
    // modelled as 1 per 120 µs less one chunk. Drained at 0.
    let chunked = RejectCheck::Bucket {
        burst: 2,
        count: 1,
        per: 120,
        loss: 1,
    };
    let drained = at(&[(0, 1), (0, 1)]);
    // At 150 µs the one refill may still be late or just taken: not false.
    assert_eq!(
        false_ones(chunked, &drained, &at(&[(150, 151)]), Start::Fresh),
        0
    );
    // Two late periods later one whole chunk has surely arrived.
    assert_eq!(
        false_ones(chunked, &drained, &at(&[(241, 241)]), Start::Fresh),
        1
    );
}

/// The sweep (one simulation for all rejects) and the direct minimum over
/// `s` for one reject are the same bound.
#[test]
fn the_bucket_sweep_agrees_with_the_direct_bound() {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    let mut rng = SmallRng::seed_from_u64(11);
    for case in 0..3_000 {
        let check = RejectCheck::Bucket {
            burst: rng.random_range(1..5),
            count: rng.random_range(1..4),
            per: rng.random_range(50..400),
            loss: rng.random_range(0..2),
        };
        let slack = rng.random_range(0..30);
        let start = if rng.random_bool(0.5) {
            Start::Fresh
        } else {
            Start::Unknown { settled: 0 }
        };
        let item = |rng: &mut SmallRng| {
            let x = rng.random_range(0..3_000);
            let y = if rng.random_bool(0.1) {
                i64::MAX
            } else {
                x + rng.random_range(0..200)
            };
            Item { x, y }
        };
        let admits: Vec<Item> = (0..rng.random_range(0..25))
            .map(|_| item(&mut rng))
            .collect();
        let rejects: Vec<Item> = (0..rng.random_range(1..10))
            .map(|_| {
                let x = rng.random_range(0..3_000);
                Item {
                    x,
                    y: x + rng.random_range(0..100),
                }
            })
            .collect();
        let flags = flags(check, &admits, &rejects, slack, start);
        for (r, f) in rejects.iter().zip(&flags) {
            let direct = proof(check, &admits, r, slack, start).spare;
            let want = (direct >= 1).then_some(direct);
            assert_eq!(*f, want, "case {case}: {check:?} {admits:?} reject {r:?}");
        }
    }
}
