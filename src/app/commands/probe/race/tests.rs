//! The bursts rehearsal on hand-built loads: a correct limiter of every
//! writing is never proven wrong by the bursts, and a limiter counting
//! 1 ms after it checks is proven at the starter's bursts (made bigger
//! where they are not enough); spread wider than the race, nothing is
//! proven.

use super::*;
use reference_api::{Policy, Rate};

fn candidate(policy: Policy, count_rejected: bool, chunked: bool) -> Candidate {
    Candidate {
        policy,
        count_rejected,
        chunked,
    }
}

/// A policy of each writing the probe fits.
fn writings() -> Vec<Candidate> {
    let rate = Rate {
        count: 5,
        per_us: 1_000_000,
    };
    vec![
        candidate(
            Policy::SlidingLog {
                limit: 10,
                window_us: 2_000_000,
            },
            false,
            false,
        ),
        candidate(
            Policy::FixedWindow {
                limit: 10,
                window_us: 1_000_000,
            },
            false,
            false,
        ),
        candidate(
            Policy::SlidingCounter {
                limit: 10,
                window_us: 2_000_000,
            },
            true,
            false,
        ),
        candidate(
            Policy::SlidingWindow {
                limit: 20,
                window_us: 2_000_000,
                segments: 4,
            },
            false,
            false,
        ),
        candidate(
            Policy::TokenBucket {
                capacity: 6,
                refill: rate,
            },
            false,
            false,
        ),
        candidate(
            Policy::TokenBucket {
                capacity: 10,
                refill: rate,
            },
            false,
            true,
        ),
        candidate(Policy::Gcra { rate, burst: 6 }, false, false),
    ]
}

/// The starter's bursts: twice each of 5 keys' limit per edge, within
/// 5 ms.
fn starters(c: &Candidate) -> Bursts {
    let (limit, _) = c.policy.quota();
    Bursts {
        per_edge: (2 * limit * 5).clamp(10, 1_000) as u32,
        spread: Duration::from_millis(5),
        keys: 5,
        duration_s: 10,
    }
}

#[test]
fn at_the_starters_bursts_a_correct_limiter_passes_and_a_race_is_caught() {
    for c in writings() {
        let r = rehearse(&c, &starters(&c), 1);
        assert_eq!(r.correct, (0, 0), "{}: {r:?}", c.describe());
        // Twice each key's limit, or twice and four times that when
        // not proven: a race 1 ms wide is caught for every writing.
        let (per_edge, race) = starter_bursts(&c, 5, Duration::from_millis(5), 10);
        assert!(race.is_some_and(|n| n > 0), "{}: {per_edge}", c.describe());
        assert!(per_edge <= MOST_PER_EDGE);
    }
    // A sliding counter's bound (its estimate may reach two windows'
    // admits) needs the bursts twice as big before the race shows.
    let counter = &writings()[2];
    assert_eq!(rehearse(counter, &starters(counter), 1).race, 0);
    assert_eq!(
        starter_bursts(counter, 5, Duration::from_millis(5), 10).0,
        200
    );
}

/// Each key's requests 20 ms apart or more: every one counted before the
/// next is checked, and the racing limiter is the correct one.
#[test]
fn bursts_spread_wider_than_the_race_prove_nothing() {
    let c = &writings()[0];
    let wide = Bursts {
        per_edge: 10,
        spread: Duration::from_millis(200),
        keys: 1,
        duration_s: 10,
    };
    assert_eq!(
        rehearse(c, &wide, 2),
        Raced {
            correct: (0, 0),
            race: 0
        }
    );
}

#[test]
fn the_bursts_rehearsal_gives_the_same_answer_every_time() {
    let c = &writings()[1];
    let load = starters(c);
    assert_eq!(rehearse(c, &load, 9), rehearse(c, &load, 9));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Whatever the bursts and the seed, the simulated correct limiter is
    /// never proven wrong: a rehearsal that could would tell the starter
    /// it catches what it cannot.
    #[test]
    fn the_correct_limiter_is_never_proven_wrong_by_bursts(
        which in 0usize..7,
        per_edge in 1u32..200,
        spread_ms in 0u64..50,
        keys in 1u32..8,
        seed in proptest::prelude::any::<u64>(),
    ) {
        let c = writings().swap_remove(which);
        let load = Bursts {
            per_edge,
            spread: Duration::from_millis(spread_ms),
            keys,
            duration_s: 6,
        };
        proptest::prop_assert_eq!(rehearse(&c, &load, seed).correct, (0, 0), "{}", c.describe());
    }
}
