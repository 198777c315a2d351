//! Counts kept in per-window or per-segment keys, as limiters on Redis
//! keep them: nothing clamps, nothing is shared across keys.

use super::*;

/// Counts per epoch-aligned window or segment, each decision in the one of
/// its own clock reading (Redis keys per segment, `INCR` on admit, a
/// `GET` of the others): nothing clamps, nothing is shared across keys.
#[derive(Clone, Debug, Default)]
pub(crate) struct Keys(pub(crate) Vec<(i64, u64)>);

impl Keys {
    pub(crate) fn get(&self, k: i64) -> u64 {
        self.0
            .iter()
            .find(|(key, _)| *key == k)
            .map_or(0, |&(_, c)| c)
    }

    pub(crate) fn incr(&mut self, k: i64) {
        match self.0.iter_mut().find(|(key, _)| *key == k) {
            Some((_, c)) => *c += 1,
            None => self.0.push((k, 1)),
        }
    }
}

/// A segmented window on Redis keys, one per segment.
#[derive(Clone, Debug)]
pub(crate) struct SegmentedKeys {
    pub(crate) limit: u64,
    pub(crate) seg: i64,
    pub(crate) s: i64,
    pub(crate) keys: Keys,
}

impl SegmentedKeys {
    pub(crate) fn decide(&mut self, now: i64) -> Answer {
        let j = now.div_euclid(self.seg);
        let total: u64 = (j - self.s + 1..=j).map(|i| self.keys.get(i)).sum();
        if total >= self.limit {
            return Answer::REJECT;
        }
        self.keys.incr(j);
        Answer::admit(self.limit - total - 1)
    }
}

/// A sliding counter on Redis keys, one per window (both variants).
#[derive(Clone, Debug)]
pub(crate) struct CounterKeys {
    pub(crate) limit: u64,
    pub(crate) w: i64,
    pub(crate) plus_one: bool,
    pub(crate) keys: Keys,
}

impl CounterKeys {
    pub(crate) fn allows(&self, prev: u64, cur: u64, elapsed: i64) -> bool {
        let w = self.w as i128;
        let used = prev as i128 * (w - elapsed as i128) + cur as i128 * w;
        let cap = self.limit as i128 * w;
        if self.plus_one {
            used + w <= cap
        } else {
            used < cap
        }
    }

    pub(crate) fn decide(&mut self, now: i64) -> Answer {
        let k = now.div_euclid(self.w);
        let elapsed = now - k * self.w;
        let (prev, cur) = (self.keys.get(k - 1), self.keys.get(k));
        if !self.allows(prev, cur, elapsed) {
            return Answer::REJECT;
        }
        self.keys.incr(k);
        let mut more = 0;
        while self.allows(prev, cur + 1 + more, elapsed) {
            more += 1;
        }
        Answer::admit(more)
    }
}
