//! A segmented window whose answers are slower than a segment (issue 35,
//! finding 2): with several clocks the rules for readings less than one
//! segment apart drop every admit; readings less than k segments apart
//! still bound S+k segments to (k+1)·N.

use super::*;

/// 10 per 1 s in 10 segments of 100 ms.
const SEG: Policy = Policy::SlidingWindow {
    limit: 10,
    window_us: 1_000_000,
    segments: 10,
};

fn several_clocks() -> Options {
    Options {
        one_clock: false,
        ..Options::default()
    }
}

/// `replicas` segmented windows of 10 per 1 s in 10 segments, each
/// counting alone, a request every 10 ms for 20 s round robin, each
/// decided at its send and answered `answer` µs later.
fn fake_global(replicas: usize, answer: i64) -> Vec<Obs> {
    let (g, s, n) = (100_000i64, 10i64, 10u64);
    let mut counts: Vec<std::collections::BTreeMap<i64, u64>> = vec![Default::default(); replicas];
    (0..2_000i64)
        .map(|i| {
            let sent = i * 10_000;
            let counted = &mut counts[i as usize % replicas];
            let seg = sent.div_euclid(g);
            let sum: u64 = counted.range(seg - s + 1..=seg).map(|(_, c)| c).sum();
            let done = sent + answer;
            if sum < n {
                *counted.entry(seg).or_insert(0) += 1;
                admit(sent, done)
            } else {
                reject(sent, done)
            }
        })
        .collect()
}

#[test]
fn three_replicas_answering_in_120_ms_are_caught() {
    let fake = fake_global(3, 120_000);
    let v = verify_key(&SEG, &fake, &several_clocks());
    // 30 per second admitted, 3N = 30 per 12 segments (25 per second)
    // allowed among readings less than two segments apart: ~5 per second.
    assert!(v.admitted >= 590, "{v:?}");
    assert!(v.definite_violations >= 50, "{v:?}");
    assert!(v.admitted > v.allowed_max, "{v:?}");
    assert_eq!(v.slow_admits, 0, "{v:?}");
    // The same with 20 ms answers, caught by the one-segment rule.
    let quick = verify_key(&SEG, &fake_global(3, 20_000), &several_clocks());
    assert!(
        quick.definite_violations >= v.definite_violations,
        "{quick:?}"
    );
}

#[test]
fn one_replica_answering_slowly_is_correct() {
    for answer in [20_000, 120_000, 250_000, 999_000, 1_200_000] {
        let v = verify_key(&SEG, &fake_global(1, answer), &several_clocks());
        assert_eq!(
            (v.definite_violations, v.false_rejects),
            (0, 0),
            "{answer}: {v:?}"
        );
        assert!(v.admitted <= v.allowed_max, "{answer}: {v:?}");
    }
}

/// The rule at its boundary, k = 2: readings less than two segments apart
/// (interval plus slack under 2g), S+2 segments hold 3N. N = 1, S = 2, g
/// = 1 ms: 3 admits within a closed span of (S+1)·g = 3 ms are allowed, a
/// fourth is not; an admit 2g slow takes no part.
#[test]
fn s_plus_k_segments_hold_k_plus_one_limits() {
    let p = Policy::SlidingWindow {
        limit: 1,
        window_us: 2_000,
        segments: 2,
    };
    let opts = Options {
        slack_us: 0,
        ..several_clocks()
    };
    // Each admit answered in 1.5 ms: too slow for k = 1, within k = 2.
    let slow = |sent: i64| admit(sent, sent + 1_500);
    let three = [slow(0), slow(750), slow(1_500)];
    assert_eq!(verify_key(&p, &three, &opts).definite_violations, 0);
    let four = [slow(0), slow(500), slow(1_000), slow(1_500)];
    assert_eq!(verify_key(&p, &four, &opts).definite_violations, 1);
    // Their span is 3 ms exactly: the boundary (inclusive).
    assert_eq!(
        verify_key(
            &p,
            &[slow(0), slow(500), slow(1_000), admit(1_500, 3_000)],
            &opts
        )
        .definite_violations,
        1
    );
    let past = [slow(0), slow(500), slow(1_000), admit(1_501, 3_001)];
    assert_eq!(verify_key(&p, &past, &opts).definite_violations, 0);
    // Answered in 2 ms (= 2g): no k = 2 rule; within k = S = 2 only.
    let too_slow = |sent: i64| admit(sent, sent + 2_000);
    let four = [too_slow(0), too_slow(300), too_slow(600), too_slow(900)];
    let v = verify_key(&p, &four, &opts);
    assert_eq!(v.definite_violations, 0, "{v:?}");
    assert_eq!(v.slow_admits, 4, "{v:?}");
}

#[test]
fn answers_slower_than_the_window_are_said_to_prove_little() {
    let v = verify_key(&SEG, &fake_global(3, 1_200_000), &several_clocks());
    assert_eq!(v.slow_admits, v.admitted, "{v:?}");
    let t = too_slow(&SEG, &several_clocks()).unwrap();
    assert_eq!(t.from_us, 1_000_000);
    assert_eq!(
        t.left,
        "only more than 10 per segment of 0.1 s over long spans"
    );
    // One clock: the rules need no short answers; a bucket's neither.
    let one = Options {
        one_clock: true,
        ..several_clocks()
    };
    assert_eq!(too_slow(&SEG, &one), None);
    let bucket = Policy::TokenBucket {
        capacity: 10,
        refill: Rate {
            count: 5,
            per_us: 1_000_000,
        },
    };
    assert_eq!(too_slow(&bucket, &several_clocks()), None);
    // A sliding log answered in a window or more: nothing at all.
    let log = too_slow(&LOG, &several_clocks()).unwrap();
    assert_eq!((log.from_us, log.left.as_str()), (1_000, "nothing"));
}
