//! Which key and which target each request gets, from a seeded generator
//! (reproducible): keys uniform, Zipf-distributed (a few customers make most
//! of the traffic) or one hot key; targets round-robin, random, sticky by
//! key (as a load balancer with consistent hashing) or a single replica.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use std::sync::{Arc, Mutex};

pub(crate) struct Picker {
    /// Shared by every picker of the same keys (a closed loop has one per
    /// worker: 32 copies of a million names took longer than a short run).
    keys: Arc<[String]>,
    /// Forged identities per principal (`[load] spoof`); 1: none, each
    /// key is its own.
    forged: usize,
    targets: usize,
    fanout: Fanout,
    distribution: KeyDistribution,
    zipf: Option<Zipf<f64>>,
    rng: SmallRng,
}

/// The load's keys: `customer-0000`, `customer-0001`, ...
pub(crate) fn key_names(keys: u32) -> Vec<String> {
    let width = keys.to_string().len().max(4);
    (0..keys.max(1))
        .map(|i| format!("customer-{i:0width$}"))
        .collect()
}

/// [`key_names`], made once per process for the last count asked and
/// shared.
fn shared_names(keys: u32) -> Arc<[String]> {
    static LAST: Mutex<Option<(u32, Arc<[String]>)>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match &*last {
        Some((n, names)) if *n == keys => names.clone(),
        _ => {
            let names: Arc<[String]> = key_names(keys).into();
            *last = Some((keys, names.clone()));
            names
        }
    }
}

/// What separates a principal's name from its forged key's number.
pub(crate) const FORGED: char = '~';

/// The forged keys of `principals` principals, `forged` each, in order:
/// `customer-0000~0000`, `customer-0000~0001`, ... (principal `p`'s `n`th
/// at `p · forged + n`).
pub(crate) fn forged_names(principals: u32, forged: u32) -> Vec<String> {
    let width = forged.to_string().len().max(4);
    key_names(principals)
        .iter()
        .flat_map(|p| (0..forged.max(1)).map(move |n| format!("{p}{FORGED}{n:0width$}")))
        .collect()
}

/// The principal a key name belongs to: the name up to its forged
/// number, or the whole name.
pub(crate) fn principal_of(name: &str) -> &str {
    name.split_once(FORGED).map_or(name, |(p, _)| p)
}

impl Picker {
    pub(crate) fn new(
        keys: u32,
        distribution: KeyDistribution,
        targets: usize,
        fanout: Fanout,
        seed: u64,
    ) -> Self {
        let zipf = match distribution {
            KeyDistribution::Zipf { s } => Zipf::new(keys.max(1) as f64, s).ok(),
            _ => None,
        };
        Picker {
            keys: shared_names(keys),
            forged: 1,
            targets: targets.max(1),
            fanout,
            distribution,
            zipf,
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// Each principal's requests sent under `forged` forged keys (more
    /// than 1: `[load] spoof`), one taken per request from its seq.
    pub(crate) fn forging(mut self, forged: u32) -> Self {
        if forged > 1 {
            let principals = self.keys.len() as u32;
            self.keys = forged_names(principals, forged).into();
            self.forged = forged as usize;
        }
        self
    }

    /// A principal (a key, without forging) by the distribution.
    fn key_index(&mut self) -> usize {
        let n = self.keys.len() / self.forged;
        match (self.distribution, &self.zipf) {
            // Zipf ranks start at 1; rank 1 is the busiest key.
            (KeyDistribution::Zipf { .. }, Some(z)) => {
                (z.sample(&mut self.rng) as usize).clamp(1, n) - 1
            }
            (KeyDistribution::Hot { share }, _) if n > 1 => {
                if self.rng.random_bool(share) {
                    0
                } else {
                    self.rng.random_range(1..n)
                }
            }
            _ => self.rng.random_range(0..n),
        }
    }

    /// (key, target index) for request `seq`.
    pub(crate) fn pick(&mut self, seq: u64) -> (&str, usize) {
        let (key, target) = self.pick_index(seq);
        (&self.keys[key], target)
    }

    /// The key's name at `index`.
    pub(crate) fn key(&self, index: usize) -> &str {
        &self.keys[index]
    }

    /// (key index, target index) for request `seq`: the same draws as
    /// [`Picker::pick`].
    pub(crate) fn pick_index(&mut self, seq: u64) -> (usize, usize) {
        let mut key = match self.distribution {
            KeyDistribution::Sweep { block } => {
                sweep(seq, block, (self.keys.len() / self.forged).max(1))
            }
            _ => self.key_index(),
        };
        if self.forged > 1 {
            // A scramble of the seq: a principal's requests walk its
            // forged keys in no order a limiter could learn.
            let n = seq.wrapping_mul(0xD6E8_FEB8_6659_FD93).rotate_left(29) % self.forged as u64;
            key = key * self.forged + n as usize;
        }
        let target = match self.fanout {
            Fanout::RoundRobin => (seq % self.targets as u64) as usize,
            Fanout::Random => self.rng.random_range(0..self.targets),
            // A fixed scramble of the key's index: the same key, the same replica.
            Fanout::Sticky => {
                (key as u64)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .rotate_left(17) as usize
                    % self.targets
            }
            Fanout::Single => 0,
        };
        (key, target)
    }
}

/// The key of request `seq` in a sweep of `keys` keys: the first
/// `block` times in a row, then each other once, in turn.
pub(crate) fn sweep(seq: u64, block: u32, keys: usize) -> usize {
    let block = block.max(1) as u64;
    let period = block + keys as u64 - 1;
    let at = seq % period;
    if at < block {
        0
    } else {
        (at - block + 1) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sweep of 4 keys with blocks of 3: 0 0 0 1 2 3, again and again;
    /// one key alone is every request.
    #[test]
    fn a_sweep_sends_the_first_key_in_blocks_and_every_other_between() {
        let mut p = Picker::new(4, KeyDistribution::Sweep { block: 3 }, 1, Fanout::Single, 1);
        let keys: Vec<usize> = (0..12).map(|seq| p.pick_index(seq).0).collect();
        assert_eq!(keys, [0, 0, 0, 1, 2, 3, 0, 0, 0, 1, 2, 3]);
        let mut one = Picker::new(1, KeyDistribution::Sweep { block: 3 }, 1, Fanout::Single, 1);
        assert!((0..7).all(|seq| one.pick_index(seq).0 == 0));
    }
    use std::collections::HashMap;

    #[test]
    fn round_robin_cycles_and_keys_are_uniform_and_seeded() {
        let mut p = Picker::new(10, KeyDistribution::Uniform, 3, Fanout::RoundRobin, 9);
        let mut per_key: HashMap<String, u32> = HashMap::new();
        for seq in 0..30_000 {
            let (key, target) = p.pick(seq);
            assert_eq!(target, (seq % 3) as usize);
            *per_key.entry(key.to_string()).or_default() += 1;
        }
        assert_eq!(per_key.len(), 10);
        assert!(
            per_key.values().all(|&n| (2_700..3_300).contains(&n)),
            "{per_key:?}"
        );
        let first = |seed| {
            Picker::new(10, KeyDistribution::Uniform, 3, Fanout::RoundRobin, seed)
                .pick(0)
                .0
                .to_string()
        };
        assert_eq!(first(9), first(9), "the same seed gives the same keys");
        assert!(first(9).starts_with("customer-"));
    }

    #[test]
    fn random_fanout_reaches_every_target() {
        let mut p = Picker::new(1, KeyDistribution::Uniform, 4, Fanout::Random, 1);
        let mut seen = [0u32; 4];
        for seq in 0..4_000 {
            seen[p.pick(seq).1] += 1;
        }
        assert!(seen.iter().all(|&n| n > 800), "{seen:?}");
    }

    fn counts(p: &mut Picker, n: u64) -> HashMap<String, u32> {
        let mut per_key = HashMap::new();
        for seq in 0..n {
            *per_key.entry(p.pick(seq).0.to_string()).or_default() += 1;
        }
        per_key
    }

    #[test]
    fn zipf_makes_the_first_keys_busiest() {
        let mut p = Picker::new(100, KeyDistribution::Zipf { s: 1.1 }, 1, Fanout::Single, 3);
        let c = counts(&mut p, 50_000);
        let top = c["customer-0000"];
        let tenth = c.get("customer-0009").copied().unwrap_or(0);
        // Zipf(1.1): rank 1 over rank 10 is 10^1.1 ≈ 12.6.
        assert!(top > 8 * tenth && tenth > 0, "{top} vs {tenth}");
        assert!(top > 50_000 / 8, "{top}");
    }

    #[test]
    fn a_hot_key_takes_its_share() {
        let mut p = Picker::new(
            10,
            KeyDistribution::Hot { share: 0.7 },
            1,
            Fanout::Single,
            3,
        );
        let c = counts(&mut p, 20_000);
        let hot = c["customer-0000"] as f64 / 20_000.0;
        assert!((0.68..0.72).contains(&hot), "{hot}");
        assert_eq!(c.len(), 10);
    }

    #[test]
    fn sticky_fanout_keeps_a_key_on_one_replica_and_single_uses_one() {
        let mut p = Picker::new(50, KeyDistribution::Uniform, 3, Fanout::Sticky, 5);
        let mut home: HashMap<String, usize> = HashMap::new();
        let mut used = [0u32; 3];
        for seq in 0..5_000 {
            let (key, target) = p.pick(seq);
            assert_eq!(
                *home.entry(key.to_string()).or_insert(target),
                target,
                "{key}"
            );
            used[target] += 1;
        }
        assert!(
            used.iter().all(|&n| n > 500),
            "keys spread over replicas: {used:?}"
        );
        let mut single = Picker::new(5, KeyDistribution::Uniform, 3, Fanout::Single, 5);
        assert!((0..100).all(|seq| single.pick(seq).1 == 0));
    }

    #[test]
    fn principals_keep_their_distribution_and_spread_over_their_forged_keys() {
        let hot = KeyDistribution::Hot { share: 0.7 };
        let plain = counts(&mut Picker::new(4, hot, 1, Fanout::Single, 3), 20_000);
        let mut forging = Picker::new(4, hot, 1, Fanout::Single, 3).forging(50);
        let forged = counts(&mut forging, 20_000);
        // The same principals, drawn as often, whatever their forged keys.
        let mut per_principal: HashMap<String, u32> = HashMap::new();
        for (key, n) in &forged {
            let (p, number) = key.split_once(FORGED).unwrap();
            assert!(number.parse::<u32>().unwrap() < 50, "{key}");
            *per_principal.entry(p.to_string()).or_default() += n;
        }
        assert_eq!(per_principal, plain);
        // Every forged key of the hot principal is used, about evenly.
        let hot_keys: Vec<u32> = (0..50)
            .map(|n| forged[&format!("customer-0000~{n:04}")])
            .collect();
        assert!(
            hot_keys.iter().all(|&n| (180..400).contains(&n)),
            "{hot_keys:?}"
        );
        assert_eq!(forged.len(), 200);
        assert_eq!(principal_of("customer-0003~0017"), "customer-0003");
        assert_eq!(principal_of("customer-0003"), "customer-0003");
        assert_eq!(forged_names(2, 3)[4], "customer-0001~0001");
        // Without forging, nothing changes.
        let mut one = Picker::new(4, hot, 1, Fanout::Single, 3).forging(1);
        assert_eq!(counts(&mut one, 20_000), plain);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub(crate) enum Fanout {
    RoundRobin,
    Random,
    /// The same key always goes to the same replica.
    Sticky,
    /// Everything to the first replica.
    Single,
}

impl Fanout {
    pub(crate) const NAMES: &'static str = "round_robin, random, sticky or single";

    pub(crate) fn from_name(name: &str) -> Option<Fanout> {
        Some(match name {
            "round_robin" => Fanout::RoundRobin,
            "random" => Fanout::Random,
            "sticky" => Fanout::Sticky,
            "single" => Fanout::Single,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum KeyDistribution {
    Uniform,
    /// Key of rank k (1-based) with weight 1/k^s.
    Zipf {
        s: f64,
    },
    /// The first key takes `share` of the requests; the rest are uniform.
    Hot {
        share: f64,
    },
    /// In turn, by the request's number: the first key `block` times in
    /// a row, then every other key once — so between two blocks of the
    /// first key every other key is seen, and a limiter that keeps fewer
    /// keys than that forgets the first while it is limited.
    Sweep {
        block: u32,
    },
}
