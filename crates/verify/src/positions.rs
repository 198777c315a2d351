//! A set of positions `0..n` as a hierarchy of bit words (each bit of a
//! level says whether a word of the level below has any bit): insert,
//! remove, the last position and the next one from a place in
//! O(log₆₄ n), and counts over a range by popcount. The removal engine
//! keeps its kept items here: at 100,000 items the whole set is 12.5 kB
//! and three levels, where a Fenwick tree of counts is 800 kB and 17
//! scattered steps an operation. (Crates with such a set either cap its
//! size — hibitset at 2²⁴ — or find the last element by a linear scan.)

pub(crate) struct Positions {
    /// `levels[0]`: one bit per position; `levels[k + 1]`: one bit per
    /// word of `levels[k]`, set when that word is not 0. The last level
    /// is one word.
    levels: Vec<Vec<u64>>,
    len: usize,
}

impl Positions {
    /// An empty set of positions below `n`.
    pub(crate) fn new(n: usize) -> Self {
        let mut levels = Vec::new();
        let mut words = n.div_ceil(64).max(1);
        loop {
            levels.push(vec![0u64; words]);
            if words == 1 {
                break;
            }
            words = words.div_ceil(64);
        }
        Positions { levels, len: 0 }
    }

    /// How many positions are in the set.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn insert(&mut self, p: usize) {
        let mut i = p;
        for (k, level) in self.levels.iter_mut().enumerate() {
            let word = &mut level[i / 64];
            let was = *word;
            *word |= 1 << (i % 64);
            if k == 0 && was != *word {
                self.len += 1;
            }
            if was != 0 {
                break;
            }
            i /= 64;
        }
    }

    pub(crate) fn remove(&mut self, p: usize) {
        let mut i = p;
        for (k, level) in self.levels.iter_mut().enumerate() {
            let word = &mut level[i / 64];
            let was = *word;
            *word &= !(1 << (i % 64));
            if k == 0 && was != *word {
                self.len -= 1;
            }
            if *word != 0 || was == 0 {
                break;
            }
            i /= 64;
        }
    }

    /// The largest position in the set.
    pub(crate) fn last(&self) -> Option<usize> {
        let mut i = 0usize;
        for level in self.levels.iter().rev() {
            let word = level[i];
            if word == 0 {
                return None;
            }
            i = i * 64 + 63 - word.leading_zeros() as usize;
        }
        Some(i)
    }

    /// The smallest position in the set at or after `p`.
    pub(crate) fn next_from(&self, p: usize) -> Option<usize> {
        // Up: the first level whose word holds a set bit at or after the
        // place `p` falls in.
        let mut i = p;
        let mut k = 0;
        let found = loop {
            let level = self.levels.get(k)?;
            let word = *level.get(i / 64)?;
            let rest = word & (u64::MAX << (i % 64));
            if rest != 0 {
                break (i / 64) * 64 + rest.trailing_zeros() as usize;
            }
            // Nothing more in this word: the next word of this level.
            i = i / 64 + 1;
            k += 1;
        };
        // Down: the lowest set bit of each word below.
        let mut i = found;
        for level in self.levels[..k].iter().rev() {
            i = i * 64 + level[i].trailing_zeros() as usize;
        }
        Some(i)
    }

    /// How many positions in `from..to` are in the set.
    pub(crate) fn count(&self, from: usize, to: usize) -> usize {
        let bits = &self.levels[0];
        let to = to.min(bits.len() * 64);
        if from >= to {
            return 0;
        }
        let (first, last) = (from / 64, (to - 1) / 64);
        let low = u64::MAX << (from % 64);
        let high = u64::MAX >> (63 - (to - 1) % 64);
        if first == last {
            return (bits[first] & low & high).count_ones() as usize;
        }
        let middle: u32 = bits[first + 1..last].iter().map(|w| w.count_ones()).sum();
        ((bits[first] & low).count_ones() + middle + (bits[last] & high).count_ones()) as usize
    }
}

/// How many positions of a set lie below a place that only moves right:
/// kept up to date as positions come and go, so a count from the place
/// on costs O(1) amortized.
#[derive(Default)]
pub(crate) struct Below {
    at: usize,
    count: usize,
}

impl Below {
    /// Moves the place to `to` (never left) and gives the count of the
    /// set's positions from there on.
    pub(crate) fn from(&mut self, set: &Positions, to: usize) -> usize {
        if to > self.at {
            self.count += set.count(self.at, to);
            self.at = to;
        }
        set.len() - self.count
    }

    /// Call after `p` was put into the set.
    pub(crate) fn inserted(&mut self, p: usize) {
        if p < self.at {
            self.count += 1;
        }
    }

    /// Call after `p` was taken out of the set.
    pub(crate) fn removed(&mut self, p: usize) {
        if p < self.at {
            self.count -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn agrees_with_a_plain_array() {
        let mut rng = SmallRng::seed_from_u64(3);
        // Sizes on both sides of one, two and three levels.
        for n in [1usize, 2, 63, 64, 65, 4_095, 4_096, 4_097, 300_000] {
            let mut set = Positions::new(n);
            let mut plain = vec![false; n];
            let mut below = Below::default();
            for step in 0..3_000 {
                let p = rng.random_range(0..n);
                // Mostly inserts early, mostly removals of the last later.
                if step < 1_500 || rng.random_bool(0.3) {
                    set.insert(p);
                    if !plain[p] {
                        below.inserted(p);
                    }
                    plain[p] = true;
                } else if let Some(last) = set.last() {
                    set.remove(last);
                    below.removed(last);
                    plain[last] = false;
                }
                let want_last = plain.iter().rposition(|&b| b);
                assert_eq!(set.last(), want_last, "n {n} step {step}");
                assert_eq!(set.len(), plain.iter().filter(|&&b| b).count());
                let q = rng.random_range(0..=n);
                let want_next = (q..n).find(|&i| plain[i]);
                assert_eq!(set.next_from(q), want_next, "n {n} next from {q}");
                let (a, b) = (rng.random_range(0..=n), rng.random_range(0..=n));
                let want = (a..b.max(a)).filter(|&i| plain[i]).count();
                assert_eq!(set.count(a, b), want, "n {n} count {a}..{b}");
                // A place that only moves right.
                let to = (below.at + rng.random_range(0..=n / 50 + 1)).min(n);
                let want_from = plain[to..].iter().filter(|&&b| b).count();
                assert_eq!(below.from(&set, to), want_from, "n {n} from {to}");
            }
        }
    }

    #[test]
    fn removing_what_is_not_there_changes_nothing() {
        let mut set = Positions::new(10_000);
        set.insert(5_000);
        set.remove(4_999);
        set.remove(9_999);
        assert_eq!((set.len(), set.last()), (1, Some(5_000)));
        set.insert(5_000);
        assert_eq!(set.len(), 1);
        set.remove(5_000);
        assert_eq!((set.len(), set.last(), set.next_from(0)), (0, None, None));
    }
}
