//! The probed starter's third arm, `keys`: many keys in a sweep — one
//! key sent past its limit in a block, then every other key once, in
//! turn, again and again — where a limiter that keeps only so many keys
//! (an LRU cache, a fixed-size table) forgets the first while it is
//! limited and admits its next block afresh. Cheap for what it catches:
//! the other keys take one request each per turn, so a cache of hundreds
//! of keys is caught at a few hundred requests a second. Rehearsed on
//! simulated caches of the fitted policy before it is written: the
//! largest cache every seed proves is what the starter says the arm
//! catches.

use super::rehearse::{self, Fault};
use crate::analyze::fit;

/// The arm's requests a second, at most: what a limiter's host takes
/// beside the steady arm's load without failing requests.
pub(super) const RATE: f64 = 500.0;

/// The keys between two blocks, at most.
const MOST_BETWEEN: u64 = 1_000;

/// Fewer keys between blocks than this many times the steady arm's keys
/// add nothing the steady arm does not catch.
pub(super) const MORE_THAN_STEADY: u64 = 4;

/// Turns of the sweep in each window of the policy: two blocks of the
/// first key within one window prove a sliding window or a bucket wrong
/// when forgotten, three (a turn and a half) a window of unknown phase.
const TURNS_PER_WINDOW: f64 = 2.5;

/// The rehearsal's seeds and longest stretch, as the steady arm's.
const SEEDS: [u64; 3] = [1, 2, 3];
const REHEARSED_S: u64 = 30;

/// The many-keys arm, as the starter writes it.
#[derive(Debug)]
pub(super) struct ManyKeys {
    pub rate: u64,
    /// Every key of the sweep: the first and those between its blocks.
    pub keys: u32,
    /// The first key's requests in a row: one more than its limit.
    pub block: u32,
    /// The largest cache (keys kept) every seed proved, with the fewest
    /// admits proven past the policy; `None`: none caught.
    pub caught: Option<(usize, u64)>,
}

/// The arm for `best` beside a steady arm of `steady_keys`: `None` when
/// the bounded rate cannot put clearly more keys than that between two
/// blocks.
pub(super) fn many_keys(
    best: &fit::Candidate,
    steady_keys: u32,
    duration_s: u64,
) -> Option<ManyKeys> {
    let (limit, window_us) = best.policy.quota();
    let window_s = (window_us as f64 / 1e6).max(1e-3);
    let block = limit.saturating_add(1).min(u32::MAX as u64);
    // A turn is a block and the keys between; TURNS_PER_WINDOW of them
    // each window, at most RATE a second.
    let turn = (RATE * window_s / TURNS_PER_WINDOW).floor() as u64;
    let between = turn.saturating_sub(block).min(MOST_BETWEEN);
    if between < MORE_THAN_STEADY * steady_keys.max(1) as u64 {
        return None;
    }
    let rate = (TURNS_PER_WINDOW * (block + between) as f64 / window_s)
        .ceil()
        .max(1.0) as u64;
    let keys = (between + 1) as u32;
    let load = rehearse::Load {
        rate: rate as f64,
        keys,
        duration_s: duration_s.min(REHEARSED_S),
        sweep: Some(block as u32),
    };
    Some(ManyKeys {
        rate,
        keys,
        block: block as u32,
        caught: largest_caught(best, &load),
    })
}

/// The largest simulated cache the load proves under every seed: all the
/// keys between two blocks, then nine tenths, three quarters, a half.
fn largest_caught(best: &fit::Candidate, load: &rehearse::Load) -> Option<(usize, u64)> {
    let between = load.keys.saturating_sub(1) as usize;
    [between, between * 9 / 10, between * 3 / 4, between / 2]
        .into_iter()
        .filter(|&kept| kept >= 1)
        .find_map(|kept| {
            let fewest = SEEDS
                .iter()
                .map(|&seed| {
                    let r = rehearse::rehearse_faults(best, load, seed, vec![Fault::Forgets(kept)]);
                    r.faults.first().map_or(0, |f| f.1)
                })
                .min()
                .unwrap_or(0);
            (fewest > 0).then_some((kept, fewest))
        })
}

/// What the arm catches, for the comment above it.
pub(super) fn said(m: &ManyKeys, duration_s: u64) -> String {
    let caught = match m.caught {
        Some((kept, proven)) => format!(
            "Rehearsed: it catches a limiter that keeps only its last {kept} keys ({proven} admits \
             proven in {} s); one that keeps more may go unseen.",
            duration_s.min(REHEARSED_S)
        ),
        None => "Rehearsed: not even a limiter that keeps half of them is proven at this load."
            .to_string(),
    };
    format!(
        "Many keys in a sweep: one key {} times in a row (past its limit), then {} other keys \
         once each, in turn, at {}/s. A limiter that keeps fewer keys than that (an LRU cache, a \
         fixed-size table) forgets the first while it is limited and admits it afresh. {caught}",
        m.block,
        m.keys.saturating_sub(1),
        m.rate
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use reference_api::{Policy, Rate};

    fn candidate(policy: Policy) -> fit::Candidate {
        fit::Candidate {
            policy,
            count_rejected: false,
            chunked: false,
        }
    }

    /// 10 per 2 s: blocks of 11 and 389 keys between them at 500/s, and
    /// a cache of all of them but one is caught; one that keeps them all
    /// and the first too is the correct limiter.
    #[test]
    fn a_sweep_catches_a_cache_one_key_short() {
        let c = candidate(Policy::SlidingLog {
            limit: 10,
            window_us: 2_000_000,
        });
        let m = many_keys(&c, 5, 10).expect("an arm");
        assert_eq!((m.block, m.keys, m.rate), (11, 390, 500));
        let (kept, proven) = m.caught.expect("caught");
        assert_eq!(kept, 389, "{m:?}");
        assert!(proven > 0);
        let load = rehearse::Load {
            rate: 500.0,
            keys: 390,
            duration_s: 10,
            sweep: Some(11),
        };
        let r = rehearse::rehearse_faults(&c, &load, 1, vec![Fault::Forgets(390)]);
        assert_eq!(r.correct, (0, 0));
        assert_eq!(r.faults, vec![(Fault::Forgets(390), 0)]);
        let text = said(&m, 10);
        assert!(text.contains("one key 11 times in a row"), "{text}");
        assert!(text.contains("its last 389 keys"), "{text}");
    }

    /// Every writing is caught one key short at its sweep, and never
    /// proven wrong when correct.
    #[test]
    fn every_writing_is_caught_at_its_sweep() {
        let rate = Rate {
            count: 5,
            per_us: 1_000_000,
        };
        for (policy, count_rejected, chunked) in [
            (
                Policy::FixedWindow {
                    limit: 10,
                    window_us: 1_000_000,
                },
                false,
                false,
            ),
            (
                Policy::SlidingCounter {
                    limit: 10,
                    window_us: 2_000_000,
                },
                true,
                false,
            ),
            (
                Policy::SlidingWindow {
                    limit: 20,
                    window_us: 2_000_000,
                    segments: 4,
                },
                false,
                false,
            ),
            (
                Policy::TokenBucket {
                    capacity: 6,
                    refill: rate,
                },
                false,
                false,
            ),
            (
                Policy::TokenBucket {
                    capacity: 10,
                    refill: rate,
                },
                false,
                true,
            ),
            (Policy::Gcra { rate, burst: 1 }, false, false),
        ] {
            let c = fit::Candidate {
                policy,
                count_rejected,
                chunked,
            };
            let m = many_keys(&c, 5, 10).expect("an arm");
            assert!(m.rate <= RATE as u64 + 1, "{}: {m:?}", c.describe());
            assert_eq!(
                m.caught.map(|k| k.0),
                Some(m.keys as usize - 1),
                "{}: {m:?}",
                c.describe()
            );
        }
    }

    /// A slow policy is capped at a thousand keys between blocks; a fast
    /// one gets no arm (no more keys than the steady arm's few between
    /// blocks at the bounded rate).
    #[test]
    fn the_keys_are_bounded_and_a_fast_policy_gets_no_arm() {
        let slow = candidate(Policy::SlidingLog {
            limit: 10,
            window_us: 60_000_000,
        });
        let m = many_keys(&slow, 5, 120).expect("an arm");
        assert_eq!(m.keys, 1_001);
        assert!(m.rate < 50, "{m:?}");
        let fast = candidate(Policy::SlidingLog {
            limit: 200,
            window_us: 1_000_000,
        });
        assert!(many_keys(&fast, 5, 10).is_none());
        // Exactly four times the steady arm's keys between blocks: an arm.
        let edge = candidate(Policy::SlidingLog {
            limit: 179,
            window_us: 1_000_000,
        });
        assert_eq!(many_keys(&edge, 5, 10).map(|m| m.keys), Some(21));
    }
}
