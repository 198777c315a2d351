//! Hand-minimised regressions: correct limiters the verifier flagged. Each
//! comment says what the limiter did and why it is correct.

use super::*;

fn obs(sent: i64, done: i64, decided: Decided) -> Obs {
    Obs {
        sent,
        done,
        decided,
    }
}

/// GCRA, burst 2, one per 10 ms; two replicas whose clocks are 500 µs apart
/// (within the default 1 ms slack). Replica B (clock +500) admits the first
/// request at true 10.000 ms, reading 10.500: TAT = 20.500. Replica A
/// (exact) decides the second at true 10.100, reading 10.100: TAT − now =
/// 10.400 ms > (burst − 1)·T = 10 ms, so it rejects. A GCRA keeps only its
/// TAT, so a clock that is behind an earlier decision's clock refills
/// "negatively": 0.04 of a token short. Nothing clamps that in a real GCRA
/// (governor's CAS loop with a stale `now`, Redis scripts fed the caller's
/// time). Within the slack this reject is correct. At commit 420e315 the
/// bucket bound took the bucket as full at `sent − slack` and subtracted
/// each later admit whole, with no allowance for the missing refill, and
/// called it false.
#[test]
fn gcra_with_replica_clocks_within_the_slack_is_not_a_false_reject() {
    let policy = Policy::Gcra {
        rate: Rate {
            count: 1,
            per_us: 10_000,
        },
        burst: 2,
    };
    // The simulation agrees with the story above.
    let mut g = Gcra::new(2, 1, 10_000);
    assert!(g.decide(10_500).admitted);
    assert!(!g.decide(10_100).admitted);
    let trace = [
        obs(10_000, 10_000, Decided::Admitted),
        obs(10_100, 10_100, Decided::Rejected),
    ];
    for unknown_history in [false, true] {
        let opts = Options {
            unknown_history,
            ..Options::default()
        };
        let v = verify_key(&policy, &trace, &opts);
        assert_eq!(
            v.false_rejects, 0,
            "unknown_history {unknown_history}: {v:?}"
        );
    }
}

/// The same on one replica that reads its clock, then waits for the lock
/// (stamp-then-lock). The reject reads `read` at its send; the admit, sent
/// at 10.200 ms, takes the lock first and is admitted at 10.250 (reading
/// 10.250, TAT 20.250); then the reject applies its stale reading: TAT −
/// now > 10 ms, rejected. An exact GCRA at true 10.300 would have had a
/// token left. Stale by 150 µs (within the slack) and by 2.3 ms (beyond
/// the slack, but inside the reject's own interval, which bounds how far
/// ahead any admit it sees can be). Failed at commit 420e315.
#[test]
fn gcra_with_a_stale_reading_is_not_a_false_reject() {
    let policy = Policy::Gcra {
        rate: Rate {
            count: 1,
            per_us: 10_000,
        },
        burst: 2,
    };
    for read in [10_100, 8_000] {
        let mut g = Gcra::new(2, 1, 10_000);
        assert!(g.decide(10_250).admitted);
        assert!(!g.decide(read).admitted);
        let trace = [
            obs(10_200, 10_260, Decided::Admitted),
            obs(read, 10_300, Decided::Rejected),
        ];
        let v = verify_key(&policy, &trace, &Options::default());
        assert_eq!(v.false_rejects, 0, "stale reading {read}: {v:?}");
    }
}

/// A segmented window kept in Redis, one key per segment (limit 1, three
/// segments of 1 ms, epoch 0 so trace time is wall time), two replicas
/// whose clocks are 400 µs apart (within the default 1 ms slack). At true
/// 2.800 ms replica A (clock +400) reads 3.200 — segment 3 — finds
/// segments 1..3 empty and admits. At true 2.810 replica B (exact) reads
/// 2.810 — segment 2 — finds segments 0..2 empty (A's admit is in segment
/// 3) and admits. Each decision applied the algorithm to the shared state
/// at its own clock; the two clocks straddle an edge in opposite order to
/// the decisions. Two admits 10 µs apart: the rule "more than N within
/// W·(S−1)/S" calls one a definite violation.
#[test]
fn segments_on_redis_keys_with_replica_clocks_within_the_slack_are_not_violations() {
    let policy = Policy::SlidingWindow {
        limit: 1,
        window_us: 3_000,
        segments: 3,
    };
    let mut l = SegmentedKeys {
        limit: 1,
        seg: 1_000,
        s: 3,
        keys: Keys::default(),
    };
    assert!(l.decide(3_200).admitted);
    assert!(l.decide(2_810).admitted);
    let trace = [
        obs(2_800, 2_800, Decided::Admitted),
        obs(2_810, 2_810, Decided::Admitted),
    ];
    let v = verify_key(&policy, &trace, &Options::default());
    assert_eq!(v.definite_violations, 0, "{v:?}");
}

/// A sliding counter kept in Redis, one key per window (limit 2, W = 10
/// ms, epoch 0), replicas 400 µs apart. At true 9.800 ms replica A (clock
/// +400) reads 10.200: window 1, previous window empty, admits two. At true
/// 9.810 replica B reads 9.810: window 0, whose key is still empty (A's two
/// went to window 1), admits two. Four admits within 10 µs; the rule allows
/// N + 1 + N·L/W = 3.2: one definite violation (N − 1 in general).
#[test]
fn sliding_counter_on_redis_keys_with_replica_clocks_within_the_slack_is_not_a_violation() {
    let policy = Policy::SlidingCounter {
        limit: 2,
        window_us: 10_000,
    };
    for plus_one in [false, true] {
        let mut l = CounterKeys {
            limit: 2,
            w: 10_000,
            plus_one,
            keys: Keys::default(),
        };
        for reading in [10_200, 10_200, 9_810, 9_810] {
            assert!(l.decide(reading).admitted);
        }
    }
    let trace = [
        obs(9_800, 9_800, Decided::Admitted),
        obs(9_800, 9_800, Decided::Admitted),
        obs(9_810, 9_810, Decided::Admitted),
        obs(9_810, 9_810, Decided::Admitted),
    ];
    let v = verify_key(&policy, &trace, &Options::default());
    assert_eq!(v.definite_violations, 0, "{v:?}");
}

/// The doubling at edges, sustained: a segmented window on Redis keys
/// (a key per segment), two replicas whose clocks are 300 µs apart. 100 µs
/// before the edge into segment a+1, replica B (+300) reads a+1 and admits
/// N; then replica A (exact) reads a, whose sum leaves a+1 out, and admits
/// N more. The next such edge whose sums are free again is S+1 segments
/// later, so the pair repeats: 2N per S+1 segments, for ever — correct, and
/// exactly what "S+1 segments hold at most 2N" allows. A rule assuming
/// S+2 (2N + 2N·L/((S+2)·g)) flags it once S+4 pairs run; the random
/// cases rarely keep the pattern up that long.
#[test]
fn segmented_keys_doubling_at_every_free_edge_is_not_a_violation() {
    let g = 1_000i64;
    for s in 1..=5i64 {
        for limit in 1..=3u64 {
            let policy = Policy::SlidingWindow {
                limit,
                window_us: (s * g) as u64,
                segments: s as u64,
            };
            let mut l = SegmentedKeys {
                limit,
                seg: g,
                s,
                keys: Keys::default(),
            };
            let mut trace = Vec::new();
            let pairs = s + 8;
            for m in 0..pairs {
                let edge = (m * (s + 1) + 1) * g;
                // (true time, the deciding replica's reading)
                for (at, reading) in [(edge - 100, edge + 200), (edge - 99, edge - 99)] {
                    for _ in 0..=limit {
                        let decided = if l.decide(reading).admitted {
                            Decided::Admitted
                        } else {
                            Decided::Rejected
                        };
                        trace.push(obs(at, at, decided));
                    }
                }
            }
            let opts = Options {
                slack_us: 301,
                ..Options::default()
            };
            let v = verify_key(&policy, &trace, &opts);
            assert_eq!(v.admitted, 2 * limit * pairs as u64, "S={s} N={limit}");
            assert_eq!(v.definite_violations, 0, "S={s} N={limit}: {v:?}");
            assert_eq!(v.false_rejects, 0, "S={s} N={limit}: {v:?}");
        }
    }
}
