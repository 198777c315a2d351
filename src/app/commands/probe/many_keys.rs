//! The probed starter's third arm, `keys`: many keys at once, each sent
//! faster than its limit, where a limiter that keeps only so many keys
//! (an LRU cache, a fixed-size table) forgets a key still limited and
//! admits it afresh. The arm's rate is bounded; the keys are as many as
//! that rate can push past their limit, so a policy of a high limit gets
//! few keys (and no arm when they would be no more than the steady arm's
//! few). Rehearsed on simulated caches of the fitted policy before it is
//! written: the largest cache every seed proves is what the starter says
//! the arm catches.

use super::rehearse::{self, Fault};
use crate::analyze::fit;

/// The arm's requests a second, at most, over all its keys: a second of
/// it is a second's judging of thousands of requests, and a limiter's
/// host answers it on kept connections.
pub(super) const RATE: f64 = 1_500.0;

/// The arm's keys, at most.
const MOST_KEYS: u32 = 1_000;

/// Fewer keys than this many times the steady arm's add nothing it does
/// not catch.
pub(super) const MORE_THAN_STEADY: u32 = 4;

/// The rehearsal's seeds and longest stretch, as the steady arm's.
const SEEDS: [u64; 3] = [1, 2, 3];
const REHEARSED_S: u64 = 30;

/// The many-keys arm, as the starter writes it.
#[derive(Debug)]
pub(super) struct ManyKeys {
    pub rate: u64,
    pub keys: u32,
    /// The largest cache (keys kept) every seed proved, with the fewest
    /// admits proven past the policy; `None`: none caught.
    pub caught: Option<(usize, u64)>,
}

/// The arm for `best` when each key is sent `per_key` a second and the
/// steady arm sends `steady_keys`: `None` when the bounded rate cannot
/// push clearly more keys than that past their limit.
pub(super) fn many_keys(
    best: &fit::Candidate,
    per_key: f64,
    steady_keys: u32,
    duration_s: u64,
) -> Option<ManyKeys> {
    let keys = ((RATE / per_key.max(1e-3)).floor() as u32).min(MOST_KEYS);
    if keys < MORE_THAN_STEADY * steady_keys.max(1) {
        return None;
    }
    let rate = (per_key * keys as f64).round().max(1.0) as u64;
    let load = rehearse::Load {
        rate: rate as f64,
        keys,
        duration_s: duration_s.min(REHEARSED_S),
    };
    Some(ManyKeys {
        rate,
        keys,
        caught: largest_caught(best, &load),
    })
}

/// The largest simulated cache (nine tenths of the keys, then three
/// quarters, a half, a quarter) the load proves under every seed.
fn largest_caught(best: &fit::Candidate, load: &rehearse::Load) -> Option<(usize, u64)> {
    let keys = load.keys as usize;
    [keys * 9 / 10, keys * 3 / 4, keys / 2, keys / 4]
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
        None => "Rehearsed: not even a limiter that keeps a quarter of them is proven at this \
                 load."
            .to_string(),
    };
    format!(
        "Many keys at once: {} keys at {}/s, each faster than its limit. A limiter that keeps \
         fewer keys than it is sent (an LRU cache, a fixed-size table) forgets a key still \
         limited and admits it afresh. {caught}",
        m.keys, m.rate
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use reference_api::Policy;

    fn sliding_log(limit: u64, window_us: u64) -> fit::Candidate {
        fit::Candidate {
            policy: Policy::SlidingLog { limit, window_us },
            count_rejected: false,
            chunked: false,
        }
    }

    /// 10 per 2 s, each key sent thrice its rate: a hundred keys at the
    /// bounded rate, and a cache of most of them is caught.
    #[test]
    fn a_low_limit_gets_many_keys_and_a_cache_of_most_is_caught() {
        let c = sliding_log(10, 2_000_000);
        let m = many_keys(&c, 15.0, 5, 10).expect("an arm");
        assert_eq!((m.keys, m.rate), (100, 1_500));
        let (kept, proven) = m.caught.expect("caught");
        assert!(kept >= 50, "{m:?}");
        assert!(proven > 0);
        let text = said(&m, 10);
        assert!(text.contains("100 keys at 1500/s"), "{text}");
        assert!(text.contains(&format!("its last {kept} keys")), "{text}");
    }

    /// A slow policy is capped at a thousand keys; a fast one gets no arm
    /// (no more keys than the steady arm's few would reach its limit).
    #[test]
    fn the_keys_are_bounded_and_a_fast_policy_gets_no_arm() {
        let slow = sliding_log(10, 60_000_000);
        let m = many_keys(&slow, 0.5, 5, 120).expect("an arm");
        assert_eq!((m.keys, m.rate), (1_000, 500));
        let fast = sliding_log(100, 1_000_000);
        assert!(many_keys(&fast, 300.0, 5, 10).is_none());
        // Exactly four times the steady arm's keys: still an arm.
        assert_eq!(many_keys(&fast, 75.0, 5, 10).map(|m| m.keys), Some(20));
    }
}
