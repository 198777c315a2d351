//! The `remaining` check against a correct GCRA (or a bucket that does not
//! clamp its clock) whose deciders read their clock before taking the
//! state: a limited request may see admits "from the future" and reject
//! early, by at most its own interval of refill (issue 35, finding 1).

use super::*;
use crate::{remaining_against_admits, Remaining};

/// Burst 10, 1000/s (one token per ms), several clocks, a 1 ms slack.
const GCRA: Policy = Policy::Gcra {
    rate: Rate {
        count: 1,
        per_us: 1_000,
    },
    burst: 10,
};

fn several_clocks() -> Options {
    Options {
        one_clock: false,
        ..Options::default()
    }
}

fn held(policy: &Policy, obs: &[Obs], witnesses: &[(u32, u32)], opts: &Options) -> Remaining {
    let mut out = Remaining::default();
    remaining_against_admits("k", Some(policy), obs, witnesses, opts, &mut out);
    out
}

/// A admitted at 0 ms says remaining 9; B sent at 1.2 ms reads its clock
/// then but reaches the state at 12 ms, after eight admits read at
/// 11.0–11.7 ms pushed the theoretical arrival time to 19 ms: B is
/// rejected with only 8 admits between. A correct GCRA did this.
fn issue_trace(b_done: i64) -> (Vec<Obs>, Vec<(u32, u32)>) {
    let mut obs = vec![admit(0, 100), reject(1_200, b_done)];
    obs.extend((0..8).map(|i| admit(11_000 + i * 100, 11_900)));
    (obs, vec![(0, 9)])
}

#[test]
fn a_reject_that_read_its_clock_early_is_no_contradiction() {
    let (obs, witnesses) = issue_trace(12_100);
    let out = held(&GCRA, &obs, &witnesses, &several_clocks());
    assert_eq!((out.checked, out.contradicted), (1, 0), "{out:?}");
    // The same answers from a limiter that reads one clock inside its
    // step are a contradiction: it would have seen 11 ms of refill.
    let one = Options {
        one_clock: true,
        ..several_clocks()
    };
    let out = held(&GCRA, &obs, &witnesses, &one);
    assert_eq!((out.checked, out.contradicted), (1, 1), "{out:?}");
    // And so is a window policy's: its reject sees every admit it counts.
    let log = Policy::SlidingLog {
        limit: 10,
        window_us: 10_000,
    };
    assert_eq!(
        held(&log, &obs, &witnesses, &several_clocks()).contradicted,
        1
    );
}

/// A reject answered quickly cannot have missed much refill: "9 left",
/// two admits, then a limit sent 5 ms later and answered in 0.1 ms may
/// have missed ⌈1/ms · (0.1 + 2·1) ms⌉ = 3 tokens: 2 + 3 < 9 is a proof.
#[test]
fn a_quick_reject_still_contradicts_a_promise_it_cannot_have_used() {
    let obs = vec![
        admit(0, 100),
        admit(2_000, 2_100),
        admit(3_000, 3_100),
        reject(5_000, 5_100),
    ];
    let out = held(&GCRA, &obs, &[(0, 9)], &several_clocks());
    assert_eq!((out.checked, out.contradicted), (1, 1), "{out:?}");
    let example = out.example.unwrap();
    assert!(example.contains("at most 3 tokens of refill"), "{example}");
}

/// The boundary: with k admits between and a missed refill of ⌈x⌉, "R
/// left" is contradicted exactly when R > k + ⌈x⌉.
#[test]
fn the_allowance_is_the_refill_of_the_rejects_interval_and_twice_the_slack() {
    // k = 2; B answered in 3 ms: x = 3 + 2 = 5 tokens.
    let obs = |b_done| {
        vec![
            admit(0, 100),
            admit(2_000, 2_100),
            admit(3_000, 3_100),
            reject(5_000, b_done),
        ]
    };
    let at = |promised, b_done| {
        held(&GCRA, &obs(b_done), &[(0, promised)], &several_clocks()).contradicted
    };
    assert_eq!(at(7, 8_000), 0, "7 = 2 + 5");
    assert_eq!(at(8, 8_000), 1, "8 > 2 + 5");
    assert_eq!(at(8, 8_001), 0, "⌈5.001⌉ = 6: 8 ≤ 2 + 6");
    // A clock that may run 0.5 % fast stretches the missed refill.
    let fast = Options {
        clock_rate_ppm: 5_000,
        ..several_clocks()
    };
    let out = held(&GCRA, &obs(8_000), &[(0, 8)], &fast);
    assert_eq!(out.contradicted, 0, "5 ms read 0.5 % fast: ⌈5.03⌉ = 6");
}
