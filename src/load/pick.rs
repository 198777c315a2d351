//! Which key and which target each request gets, from a seeded generator
//! (reproducible): keys uniform, Zipf-distributed (a few customers make most
//! of the traffic) or one hot key; targets round-robin, random, sticky by
//! key (as a load balancer with consistent hashing) or a single replica.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};

pub(crate) struct Picker {
    keys: Vec<String>,
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
            keys: key_names(keys),
            targets: targets.max(1),
            fanout,
            distribution,
            zipf,
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    fn key_index(&mut self) -> usize {
        let n = self.keys.len();
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
        let key = self.key_index();
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

#[cfg(test)]
mod tests {
    use super::*;
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum Fanout {
    RoundRobin,
    Random,
    /// The same key always goes to the same replica.
    Sticky,
    /// Everything to the first replica.
    Single,
}

impl Fanout {
    pub const NAMES: &'static str = "round_robin, random, sticky or single";

    pub fn from_name(name: &str) -> Option<Fanout> {
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
pub enum KeyDistribution {
    Uniform,
    /// Key of rank k (1-based) with weight 1/k^s.
    Zipf {
        s: f64,
    },
    /// The first key takes `share` of the requests; the rest are uniform.
    Hot {
        share: f64,
    },
}
