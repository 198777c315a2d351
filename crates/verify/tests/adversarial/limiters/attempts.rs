//! Limiters that count every attempt, denied ones too (HAProxy's stick
//! tables, rate-limiter-flexible's `consume`): each decision reads its own
//! clock (no clamping, as a shared table does) and counts itself whatever
//! the answer.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counting {
    /// A log of every attempt's reading: admit while fewer than the limit
    /// lie within the window.
    Log,
    /// A key per segment, counting every attempt.
    Segments { s: i64 },
    /// HAProxy's `http_req_rate`: the current period's count plus the
    /// previous one's, weighted by what is left of the period, rounded down;
    /// admit while that is below the limit.
    Counter,
}

#[derive(Clone, Debug)]
pub(crate) struct Attempts {
    pub(crate) kind: Counting,
    pub(crate) limit: u64,
    /// The window (log, counter) or a segment's length.
    pub(crate) w: i64,
    pub(crate) log: Vec<i64>,
    pub(crate) keys: Keys,
}

impl Attempts {
    pub(crate) fn new(kind: Counting, limit: u64, w: i64) -> Self {
        Attempts {
            kind,
            limit,
            w,
            log: Vec::new(),
            keys: Keys::default(),
        }
    }

    pub(crate) fn decide(&mut self, now: i64) -> Answer {
        let counted = match self.kind {
            Counting::Log => {
                let w = self.w;
                self.log.retain(|&a| a > now - w);
                self.log.push(now);
                self.log.len() as u64 - 1
            }
            Counting::Segments { s } => {
                let j = now.div_euclid(self.w);
                let total: u64 = (j - s + 1..=j).map(|i| self.keys.get(i)).sum();
                self.keys.incr(j);
                total
            }
            Counting::Counter => {
                let k = now.div_euclid(self.w);
                let elapsed = now - k * self.w;
                let prev = self.keys.get(k - 1) as i128;
                let weighted = (prev * (self.w - elapsed) as i128 / self.w as i128) as u64;
                let total = weighted + self.keys.get(k);
                self.keys.incr(k);
                total
            }
        };
        if counted < self.limit {
            Answer::admit(self.limit - counted - 1)
        } else {
            Answer::REJECT
        }
    }
}
