//! The rehearsal on hand-built loads: a correct limiter of every family
//! is never proven wrong at the starter's load, a pair counting apart
//! always is; under the limit it is not (why the starter sends over it);
//! a cache that forgets keys is caught only when the load has more keys
//! than it keeps.

use super::*;
use reference_api::{Policy, Rate};

fn candidate(policy: Policy, count_rejected: bool) -> Candidate {
    Candidate {
        policy,
        count_rejected,
        chunked: false,
    }
}

/// A policy of each family the probe fits, with whether rejects count.
fn families() -> Vec<Candidate> {
    vec![
        candidate(
            Policy::SlidingLog {
                limit: 10,
                window_us: 2_000_000,
            },
            false,
        ),
        candidate(
            Policy::FixedWindow {
                limit: 10,
                window_us: 1_000_000,
            },
            false,
        ),
        candidate(
            Policy::SlidingCounter {
                limit: 10,
                window_us: 2_000_000,
            },
            true,
        ),
        candidate(
            Policy::SlidingWindow {
                limit: 20,
                window_us: 2_000_000,
                segments: 4,
            },
            false,
        ),
        candidate(
            Policy::TokenBucket {
                capacity: 6,
                refill: Rate {
                    count: 10,
                    per_us: 1_000_000,
                },
            },
            false,
        ),
    ]
}

/// `per_key` times the policy's long-run rate over `keys` keys.
fn load(c: &Candidate, per_key: f64, keys: u32, duration_s: u64) -> Load {
    Load {
        rate: crate::analyze::fit::long_run_rate(c) * per_key * keys as f64,
        keys,
        duration_s,
        sweep: None,
    }
}

#[test]
fn at_the_starters_load_a_correct_limiter_passes_and_a_pair_is_caught() {
    for c in families() {
        let per_key = if c.count_rejected { 1.5 } else { 3.0 };
        let l = load(&c, per_key, 5, 10);
        let r = rehearse(&c, &l, 7);
        assert_eq!(r.correct, (0, 0), "{}: {r:?}", c.describe());
        assert!(
            r.caught().any(|f| f == Fault::Pair),
            "{}: {r:?}",
            c.describe()
        );
        assert!(
            r.caught().any(|f| f == Fault::Workers),
            "{}: {r:?}",
            c.describe()
        );
    }
}

/// Under the limit, each of a pair sees half of it and admits all: at
/// 0.8 times the rate nothing is proven (the HAProxy starter that once
/// sent so), and the rehearsal says so rather than claim it.
#[test]
fn under_the_limit_a_pair_is_not_caught_and_the_rehearsal_says_so() {
    let c = candidate(
        Policy::SlidingCounter {
            limit: 10,
            window_us: 2_000_000,
        },
        true,
    );
    let r = rehearse(&c, &load(&c, 0.8, 5, 10), 3);
    assert_eq!(r.correct, (0, 0), "{r:?}");
    assert!(r.missed().any(|f| f == Fault::Pair), "{r:?}");
}

/// A cache keeping two thirds of the load's keys forgets keys while they
/// are still limited: caught. The same cache under a load of fewer keys
/// than it keeps never forgets one: nothing to catch, and it is not
/// rehearsed.
#[test]
fn a_cache_that_forgets_keys_is_caught_only_beyond_its_size() {
    let c = candidate(
        Policy::SlidingLog {
            limit: 10,
            window_us: 2_000_000,
        },
        false,
    );
    let l = load(&c, 3.0, 30, 10);
    assert_eq!(faults(&l).last(), Some(&Fault::Forgets(20)));
    let r = rehearse(&c, &l, 11);
    assert_eq!(r.correct, (0, 0), "{r:?}");
    assert!(r.caught().any(|f| f == Fault::Forgets(20)), "{r:?}");
    // Keeping every key, the limiter is the correct one.
    let sends = schedule(&l, 11);
    let whole = lives(&sends, 30);
    assert!(whole.iter().all(|&life| life == 1));
}

#[test]
fn a_key_forgotten_starts_a_new_life_and_one_kept_does_not() {
    let sends: Vec<(i64, u32)> = [0, 1, 2, 0, 1]
        .iter()
        .enumerate()
        .map(|(i, &k)| (i as i64, k))
        .collect();
    // Keeping 2: key 0 goes when 2 comes, and 1 when 0 comes back.
    assert_eq!(lives(&sends, 2), vec![1, 1, 1, 2, 2]);
    assert_eq!(lives(&sends, 3), vec![1, 1, 1, 1, 1]);
    // Keeping 1: every other key pushes the last out; the same key again
    // is still there.
    let again: Vec<(i64, u32)> = [0, 0, 1, 0].iter().map(|&k| (0, k)).collect();
    assert_eq!(lives(&again, 1), vec![1, 1, 1, 2]);
}

/// A plain LRU cache written out (the least recently seen key at the
/// front, pushed out past `kept`), against which the counting in
/// [`lives`] is held.
fn lives_by_cache(sends: &[(i64, u32)], kept: usize) -> Vec<usize> {
    let mut order: std::collections::VecDeque<u32> = Default::default();
    let mut life: HashMap<u32, usize> = HashMap::new();
    sends
        .iter()
        .map(|&(_, key)| {
            match order.iter().position(|&k| k == key) {
                Some(at) => {
                    order.remove(at);
                }
                None => *life.entry(key).or_default() += 1,
            }
            order.push_back(key);
            if order.len() > kept.max(1) {
                order.pop_front();
            }
            life[&key]
        })
        .collect()
}

#[test]
fn the_rehearsal_gives_the_same_answer_every_time() {
    let c = &families()[0];
    let l = load(c, 3.0, 5, 10);
    let (a, b) = (rehearse(c, &l, 5), rehearse(c, &l, 5));
    assert_eq!(a.correct, b.correct);
    assert_eq!(a.faults, b.faults);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// The counting LRU is the cache written out, whatever the keys and
    /// the size.
    #[test]
    fn lives_are_those_of_a_cache_written_out(
        keys in proptest::collection::vec(0u32..12, 0..200),
        kept in 1usize..14,
    ) {
        let sends: Vec<(i64, u32)> = keys.iter().map(|&k| (0, k)).collect();
        proptest::prop_assert_eq!(lives(&sends, kept), lives_by_cache(&sends, kept));
    }

    /// Whatever the load and the seed, the simulated correct limiter is
    /// never proven wrong: a rehearsal that could claim a fault in a
    /// correct limiter would tell the starter it catches what it cannot.
    #[test]
    fn the_correct_limiter_is_never_proven_wrong(
        family in 0usize..5,
        per_key in 0.3f64..4.0,
        keys in 1u32..12,
        seed in proptest::prelude::any::<u64>(),
    ) {
        let c = families().swap_remove(family);
        let r = rehearse(&c, &load(&c, per_key, keys, 6), seed);
        proptest::prop_assert_eq!(r.correct, (0, 0), "{}", c.describe());
    }
}
