//! Which key and which target each request gets: keys uniform from a
//! seeded generator (reproducible), targets round-robin or random.

use crate::scenario::Fanout;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

pub struct Picker {
    keys: Vec<String>,
    targets: usize,
    fanout: Fanout,
    rng: SmallRng,
}

impl Picker {
    pub fn new(keys: u32, targets: usize, fanout: Fanout, seed: u64) -> Self {
        let width = keys.to_string().len().max(4);
        Picker {
            keys: (0..keys).map(|i| format!("customer-{i:0width$}")).collect(),
            targets: targets.max(1),
            fanout,
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// (key, target index) for request `seq`.
    pub fn pick(&mut self, seq: u64) -> (&str, usize) {
        let key = self.rng.random_range(0..self.keys.len());
        let target = match self.fanout {
            Fanout::RoundRobin => (seq % self.targets as u64) as usize,
            Fanout::Random => self.rng.random_range(0..self.targets),
        };
        (&self.keys[key], target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn round_robin_cycles_and_keys_are_uniform_and_seeded() {
        let mut p = Picker::new(10, 3, Fanout::RoundRobin, 9);
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
            Picker::new(10, 3, Fanout::RoundRobin, seed)
                .pick(0)
                .0
                .to_string()
        };
        assert_eq!(first(9), first(9), "the same seed gives the same keys");
        assert!(first(9).starts_with("customer-"));
    }

    #[test]
    fn random_fanout_reaches_every_target() {
        let mut p = Picker::new(1, 4, Fanout::Random, 1);
        let mut seen = [0u32; 4];
        for seq in 0..4_000 {
            seen[p.pick(seq).1] += 1;
        }
        assert!(seen.iter().all(|&n| n > 800), "{seen:?}");
    }
}
