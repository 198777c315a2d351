//! Sliding logs, fixed and segmented windows, and the sliding counter,
//! each deciding from its own state in memory.

use super::*;

/// A log of admit times: admit iff fewer than `limit` in `(t - w, t]`.
#[derive(Clone, Debug)]
pub(crate) struct SlidingLog {
    pub(crate) limit: u64,
    pub(crate) w: i64,
    /// Redis sorted-set style: each decision uses its own clock reading
    /// (`ZREMRANGEBYSCORE -inf now-w; ZCARD; ZADD now`), and entries stamped
    /// later than it still count. Otherwise in memory, time clamped so it
    /// never runs backwards.
    pub(crate) zset: bool,
    pub(crate) log: Vec<i64>,
    pub(crate) last: i64,
}

impl SlidingLog {
    pub(crate) fn new(limit: u64, w: i64, zset: bool) -> Self {
        SlidingLog {
            limit,
            w,
            zset,
            log: Vec::new(),
            last: i64::MIN,
        }
    }

    pub(crate) fn decide(&mut self, now: i64) -> Answer {
        let t = if self.zset { now } else { now.max(self.last) };
        self.last = self.last.max(now);
        let w = self.w;
        self.log.retain(|&a| a > t - w);
        let n = self.log.len() as u64;
        if n < self.limit {
            self.log.push(t);
            Answer::admit(self.limit - n - 1)
        } else {
            Answer::REJECT
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FixedKind {
    /// In memory, epoch-aligned windows, time clamped.
    Epoch,
    /// Redis `INCR` on one key per epoch-aligned window (rejects count too),
    /// each decision in the window of its own clock reading.
    Keyed,
    /// A window opens at the first request after the previous one closed
    /// (`INCR` + `EXPIRE` on first hit): alignment unknown to anyone.
    Anchored,
}

#[derive(Clone, Debug)]
pub(crate) struct FixedWindow {
    pub(crate) limit: u64,
    pub(crate) w: i64,
    pub(crate) kind: FixedKind,
    /// Current window (index, or start time when anchored), its count.
    pub(crate) win: i64,
    pub(crate) count: u64,
    pub(crate) last: i64,
    pub(crate) keys: Vec<(i64, u64)>,
}

impl FixedWindow {
    pub(crate) fn new(limit: u64, w: i64, kind: FixedKind) -> Self {
        FixedWindow {
            limit,
            w,
            kind,
            win: i64::MIN,
            count: 0,
            last: i64::MIN,
            keys: Vec::new(),
        }
    }

    pub(crate) fn decide(&mut self, now: i64) -> Answer {
        let t = now.max(self.last);
        self.last = t;
        match self.kind {
            FixedKind::Epoch => {
                let k = t.div_euclid(self.w);
                if k != self.win {
                    (self.win, self.count) = (k, 0);
                }
            }
            FixedKind::Anchored => {
                if self.win == i64::MIN || t >= self.win + self.w {
                    (self.win, self.count) = (t, 0);
                }
            }
            FixedKind::Keyed => {
                let k = now.div_euclid(self.w);
                let c = match self.keys.iter_mut().find(|(key, _)| *key == k) {
                    Some((_, c)) => {
                        *c += 1;
                        *c
                    }
                    None => {
                        self.keys.push((k, 1));
                        1
                    }
                };
                return if c <= self.limit {
                    Answer::admit(self.limit - c)
                } else {
                    Answer::REJECT
                };
            }
        }
        if self.count < self.limit {
            self.count += 1;
            Answer::admit(self.limit - self.count)
        } else {
            Answer::REJECT
        }
    }
}

/// ASP.NET-style segmented window on epoch-aligned segments: admit iff the
/// last `s` segments, the current one included, hold fewer than `limit`.
#[derive(Clone, Debug)]
pub(crate) struct Segmented {
    pub(crate) limit: u64,
    pub(crate) seg: i64,
    pub(crate) s: i64,
    pub(crate) ring: VecDeque<(i64, u64)>,
    pub(crate) last: i64,
}

impl Segmented {
    pub(crate) fn new(limit: u64, seg: i64, s: i64) -> Self {
        Segmented {
            limit,
            seg,
            s,
            ring: VecDeque::new(),
            last: i64::MIN,
        }
    }

    pub(crate) fn decide(&mut self, now: i64) -> Answer {
        let t = now.max(self.last);
        self.last = t;
        let j = t.div_euclid(self.seg);
        while self.ring.front().is_some_and(|&(i, _)| i <= j - self.s) {
            self.ring.pop_front();
        }
        let total: u64 = self.ring.iter().map(|&(_, c)| c).sum();
        if total >= self.limit {
            return Answer::REJECT;
        }
        match self.ring.back_mut() {
            Some((i, c)) if *i == j => *c += 1,
            _ => self.ring.push_back((j, 1)),
        }
        Answer::admit(self.limit - total - 1)
    }
}

/// Cloudflare's sliding counter on epoch-aligned windows, in exact integer
/// arithmetic: estimate = prev·(W − elapsed)/W + cur.
#[derive(Clone, Debug)]
pub(crate) struct SlidingCounter {
    pub(crate) limit: u64,
    pub(crate) w: i64,
    /// Variant B, `estimate + 1 <= limit`; otherwise A, `estimate < limit`.
    pub(crate) plus_one: bool,
    /// The estimate in f64 (rounding), not exact integers.
    pub(crate) float: bool,
    pub(crate) win: i64,
    pub(crate) prev: u64,
    pub(crate) cur: u64,
    pub(crate) last: i64,
}

impl SlidingCounter {
    pub(crate) fn new(limit: u64, w: i64, plus_one: bool) -> Self {
        SlidingCounter {
            limit,
            w,
            plus_one,
            float: false,
            win: i64::MIN,
            prev: 0,
            cur: 0,
            last: i64::MIN,
        }
    }

    pub(crate) fn allows(&self, cur: u64, elapsed: i64) -> bool {
        if self.float {
            // Cloudflare's formula as written, in f64 seconds.
            let w = self.w as f64 / 1e6;
            let estimate = self.prev as f64 * ((w - elapsed as f64 / 1e6) / w) + cur as f64;
            return if self.plus_one {
                estimate + 1.0 <= self.limit as f64
            } else {
                estimate < self.limit as f64
            };
        }
        let w = self.w as i128;
        let used = self.prev as i128 * (w - elapsed as i128) + cur as i128 * w;
        let cap = self.limit as i128 * w;
        if self.plus_one {
            used + w <= cap
        } else {
            used < cap
        }
    }

    pub(crate) fn decide(&mut self, now: i64) -> Answer {
        let t = now.max(self.last);
        self.last = t;
        let k = t.div_euclid(self.w);
        if k != self.win {
            self.prev = if self.win != i64::MIN && k == self.win + 1 {
                self.cur
            } else {
                0
            };
            (self.win, self.cur) = (k, 0);
        }
        let elapsed = t - k * self.w;
        if !self.allows(self.cur, elapsed) {
            return Answer::REJECT;
        }
        self.cur += 1;
        let mut more = 0;
        while self.allows(self.cur + more, elapsed) {
            more += 1;
        }
        Answer::admit(more)
    }
}
