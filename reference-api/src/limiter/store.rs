//! Per-key state for local limiters: a sharded map whose entries expire
//! once the algorithm says they are idle, so a client spraying random keys
//! grows memory only up to (key rate × window), and never past `max_keys`.

use super::contract::{Algorithm, Decision};
use std::collections::hash_map::{DefaultHasher, Entry};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

const SHARDS: usize = 16;

pub(super) struct Store<S> {
    shards: Vec<Mutex<Shard<S>>>,
    max_per_shard: usize,
}

struct Shard<S> {
    map: HashMap<String, Slot<S>>,
    ops_since_sweep: usize,
    /// Sweep after this many operations: the live size at the last sweep,
    /// so sweeping stays amortized O(1) and the map at most doubles between sweeps.
    sweep_every: usize,
}

const MIN_SWEEP_EVERY: usize = 1024;

struct Slot<S> {
    state: S,
    idle_after: i64,
}

impl<S> Shard<S> {
    fn sweep(&mut self, now: i64) {
        self.map.retain(|_, slot| slot.idle_after > now);
        self.ops_since_sweep = 0;
        self.sweep_every = self.map.len().max(MIN_SWEEP_EVERY);
    }
}

impl<S: Send + 'static> Store<S> {
    pub(super) fn new(max_keys: usize) -> Self {
        Store {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        map: HashMap::new(),
                        ops_since_sweep: 0,
                        sweep_every: MIN_SWEEP_EVERY,
                    })
                })
                .collect(),
            max_per_shard: max_keys.div_ceil(SHARDS).max(1),
        }
    }

    /// Decides for `key`, creating its state if needed. `None` when the key
    /// is new and the shard is full of live keys.
    pub(super) fn with_state<A>(&self, key: &str, now: i64, algorithm: &A) -> Option<Decision>
    where
        A: Algorithm<State = S>,
    {
        let mut hasher = DefaultHasher::new();
        key.hash(&mut hasher);
        let shard = &self.shards[hasher.finish() as usize % SHARDS];
        let mut shard = shard.lock().unwrap_or_else(|p| p.into_inner());
        shard.ops_since_sweep += 1;
        if shard.ops_since_sweep >= shard.sweep_every {
            shard.sweep(now);
        }
        if shard.map.len() >= self.max_per_shard && !shard.map.contains_key(key) {
            shard.sweep(now);
            if shard.map.len() >= self.max_per_shard {
                return None;
            }
        }
        let slot = match shard.map.entry(key.to_string()) {
            Entry::Occupied(e) => {
                let slot = e.into_mut();
                if slot.idle_after <= now {
                    slot.state = algorithm.fresh(now);
                }
                slot
            }
            Entry::Vacant(e) => e.insert(Slot {
                state: algorithm.fresh(now),
                idle_after: now,
            }),
        };
        let decision = algorithm.decide(&mut slot.state, now);
        slot.idle_after = algorithm.idle_after(&slot.state);
        Some(decision)
    }

    pub(super) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).map.len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixed_window::FixedWindow;
    use super::*;

    #[test]
    fn idle_keys_expire_so_random_keys_do_not_accumulate() {
        let algo = FixedWindow::new(5, 1_000);
        let store = Store::new(1_000_000);
        let mut now = 0;
        for i in 0..200_000 {
            now = i; // 1 µs apart: a 1 ms window holds ~1000 live keys
            store.with_state(&format!("k{i}"), now, &algo).unwrap();
        }
        // ~1000 keys are live at the end; between sweeps each shard may
        // collect MIN_SWEEP_EVERY more. Without expiry all 200,000 would stay.
        let live = store.len();
        assert!(
            live <= SHARDS * MIN_SWEEP_EVERY + 1_000,
            "{live} live keys after sweeping"
        );
        assert!(now > 0);
    }

    #[test]
    fn a_full_store_rejects_new_keys_but_serves_known_ones() {
        let algo = FixedWindow::new(5, 1_000_000_000);
        let store = Store::new(SHARDS); // one key per shard
        let mut refused = 0;
        for i in 0..100 {
            if store.with_state(&format!("k{i}"), 0, &algo).is_none() {
                refused += 1;
            }
        }
        assert!(refused >= 100 - SHARDS, "{refused}");
        assert!(store.len() <= SHARDS);
        let known = (0..100)
            .map(|i| format!("k{i}"))
            .find(|k| store.with_state(k, 1, &algo).is_some());
        assert!(known.is_some());
    }
}
