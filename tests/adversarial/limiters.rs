//! Simulated correct limiters, written from the algorithms' textbook semantics,
//! apart from the verifier and from `reference_api` (a shared bug would
//! cancel itself out); `now` is the deciding replica's wall clock in µs.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) admitted: bool,
    pub(crate) remaining: u64,
}

impl Answer {
    pub(crate) const REJECT: Answer = Answer {
        admitted: false,
        remaining: 0,
    };
    pub(crate) fn admit(remaining: u64) -> Answer {
        Answer {
            admitted: true,
            remaining,
        }
    }
}

// Sliding log.

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

// Fixed window.

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

// Segmented sliding window.

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

// Windows on Redis keys (segmented window and sliding counter).

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

// Sliding counter.

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

// Token bucket and GCRA.

/// A bucket of `cap` tokens refilled continuously at `count` per `per` µs,
/// full at the start; tokens kept exactly, scaled by `per`.
#[derive(Clone, Debug)]
pub(crate) struct TokenBucket {
    pub(crate) cap: u64,
    pub(crate) count: u64,
    pub(crate) per: i64,
    pub(crate) tokens: i128,
    pub(crate) last: Option<i64>,
}

impl TokenBucket {
    pub(crate) fn new(cap: u64, count: u64, per: i64) -> Self {
        TokenBucket {
            cap,
            count,
            per,
            tokens: cap as i128 * per as i128,
            last: None,
        }
    }

    pub(crate) fn decide(&mut self, now: i64) -> Answer {
        let full = self.cap as i128 * self.per as i128;
        let last = self.last.unwrap_or(now);
        let t = now.max(last);
        self.tokens = (self.tokens + (t - last) as i128 * self.count as i128).min(full);
        self.last = Some(t);
        let per = self.per as i128;
        if self.tokens >= per {
            self.tokens -= per;
            Answer::admit((self.tokens / per) as u64)
        } else {
            Answer::REJECT
        }
    }
}

/// The same bucket as most code writes it: f64 tokens, f64 seconds since
/// the epoch (about 0.24 µs resolution today), rounding wherever it falls.
#[derive(Clone, Debug)]
pub(crate) struct FloatBucket {
    pub(crate) cap: f64,
    pub(crate) rate: f64,
    pub(crate) tokens: f64,
    pub(crate) last: Option<f64>,
}

impl FloatBucket {
    pub(crate) fn new(cap: u64, count: u64, per: i64) -> Self {
        FloatBucket {
            cap: cap as f64,
            rate: count as f64 / (per as f64 / 1e6),
            tokens: cap as f64,
            last: None,
        }
    }

    pub(crate) fn decide(&mut self, now: i64) -> Answer {
        let t = now as f64 / 1e6;
        let last = self.last.unwrap_or(t);
        let t = t.max(last);
        self.tokens = (self.tokens + (t - last) * self.rate).min(self.cap);
        self.last = Some(t);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Answer::admit(self.tokens.floor() as u64)
        } else {
            Answer::REJECT
        }
    }
}

/// GCRA: `burst` at once, then one per emission interval `per/count`; the
/// only state is the theoretical arrival time (scaled by `count`), so a
/// clock reading that runs backwards only makes it stricter.
#[derive(Clone, Debug)]
pub(crate) struct Gcra {
    pub(crate) burst: u64,
    pub(crate) count: u64,
    pub(crate) per: i64,
    pub(crate) tat: i128,
}

impl Gcra {
    pub(crate) fn new(burst: u64, count: u64, per: i64) -> Self {
        Gcra {
            burst,
            count,
            per,
            tat: i128::MIN / 4,
        }
    }

    pub(crate) fn decide(&mut self, now: i64) -> Answer {
        let n = now as i128 * self.count as i128;
        let per = self.per as i128;
        if self.tat - n > (self.burst as i128 - 1) * per {
            return Answer::REJECT;
        }
        self.tat = self.tat.max(n) + per;
        Answer::admit(((self.burst as i128 * per - (self.tat - n)) / per).max(0) as u64)
    }
}

// ASP.NET Core's limiters, replenished from a heartbeat.

/// ASP.NET Core's replenishment: a heartbeat ticks every `tick` µs (from
/// `origin`) and replenishes only once a full `period` passed since the
/// last replenishment, so periods last between `period` and `period + tick`
/// and drift. `tick == 0`: an exact timer, one replenishment per period.
#[derive(Clone, Debug)]
pub(crate) struct Heartbeat {
    pub(crate) period: i64,
    pub(crate) tick: i64,
    pub(crate) origin: i64,
    pub(crate) last: i64,
    /// A tick at the very µs of a decision comes after it (else before).
    pub(crate) ties_late: bool,
}

impl Heartbeat {
    /// The next replenishment (it does not depend on the traffic).
    pub(crate) fn next(&self) -> i64 {
        let earliest = self.last + self.period;
        if self.tick == 0 {
            earliest
        } else {
            let ticks = (earliest - self.origin + self.tick - 1).div_euclid(self.tick);
            self.origin + ticks * self.tick
        }
    }

    /// How many replenishments happened up to `now`.
    pub(crate) fn due(&mut self, now: i64) -> u64 {
        let mut n = 0;
        loop {
            let at = self.next();
            if at > now || (self.ties_late && at == now) {
                return n;
            }
            self.last = at;
            n += 1;
        }
    }

    /// The first thousand replenishments in trace time.
    pub(crate) fn times(&self, epoch: i64) -> Vec<i64> {
        let mut hb = self.clone();
        let mut out = Vec::new();
        while out.len() < 1_000 {
            hb.last = hb.next();
            out.push(hb.last - epoch);
        }
        out
    }
}

/// ASP.NET FixedWindowRateLimiter: the count resets on a replenishment.
#[derive(Clone, Debug)]
pub(crate) struct AspFixed {
    pub(crate) limit: u64,
    pub(crate) hb: Heartbeat,
    pub(crate) count: u64,
}

impl AspFixed {
    pub(crate) fn decide(&mut self, now: i64) -> Answer {
        if self.hb.due(now) > 0 {
            self.count = 0;
        }
        if self.count < self.limit {
            self.count += 1;
            Answer::admit(self.limit - self.count)
        } else {
            Answer::REJECT
        }
    }
}

/// ASP.NET SlidingWindowRateLimiter: a ring of `s` segment counts; each
/// replenishment drops the oldest and opens a new current segment.
#[derive(Clone, Debug)]
pub(crate) struct AspSegmented {
    pub(crate) limit: u64,
    pub(crate) hb: Heartbeat,
    pub(crate) ring: VecDeque<u64>,
}

impl AspSegmented {
    pub(crate) fn decide(&mut self, now: i64) -> Answer {
        for _ in 0..self.hb.due(now).min(self.ring.len() as u64) {
            self.ring.pop_front();
            self.ring.push_back(0);
        }
        let total: u64 = self.ring.iter().sum();
        if total >= self.limit {
            return Answer::REJECT;
        }
        *self.ring.back_mut().unwrap() += 1;
        Answer::admit(self.limit - total - 1)
    }
}

/// ASP.NET TokenBucketRateLimiter: `count` tokens in one chunk per
/// replenishment, at most `cap`, full at the start.
#[derive(Clone, Debug)]
pub(crate) struct AspBucket {
    pub(crate) cap: u64,
    pub(crate) count: u64,
    pub(crate) hb: Heartbeat,
    pub(crate) tokens: u64,
}

impl AspBucket {
    pub(crate) fn decide(&mut self, now: i64) -> Answer {
        let due = self.hb.due(now);
        self.tokens = (self.tokens + due.saturating_mul(self.count)).min(self.cap);
        if self.tokens == 0 {
            return Answer::REJECT;
        }
        self.tokens -= 1;
        Answer::admit(self.tokens)
    }
}

// Any of the above, replicas of them, and a liar.

#[derive(Clone, Debug)]
pub(crate) enum Sim {
    Log(SlidingLog),
    Fixed(FixedWindow),
    Seg(Segmented),
    SegKeys(SegmentedKeys),
    Counter(SlidingCounter),
    CounterKeys(CounterKeys),
    Bucket(TokenBucket),
    FloatBucket(FloatBucket),
    Gcra(Gcra),
    AspFixed(AspFixed),
    AspSeg(AspSegmented),
    AspBucket(AspBucket),
    /// Independent replicas behind a balancer (the fake global limiter).
    Replicas(Vec<Sim>),
    /// Decides as the inner one but advertises one more than it has left.
    Liar(Box<Sim>),
}

impl Sim {
    pub(crate) fn decide(&mut self, now: i64, id: usize) -> Answer {
        match self {
            Sim::Log(l) => l.decide(now),
            Sim::Fixed(l) => l.decide(now),
            Sim::Seg(l) => l.decide(now),
            Sim::SegKeys(l) => l.decide(now),
            Sim::Counter(l) => l.decide(now),
            Sim::CounterKeys(l) => l.decide(now),
            Sim::Bucket(l) => l.decide(now),
            Sim::FloatBucket(l) => l.decide(now),
            Sim::Gcra(l) => l.decide(now),
            Sim::AspFixed(l) => l.decide(now),
            Sim::AspSeg(l) => l.decide(now),
            Sim::AspBucket(l) => l.decide(now),
            Sim::Replicas(rs) => {
                let n = rs.len();
                rs[mix(id as u64) as usize % n].decide(now, id)
            }
            Sim::Liar(inner) => {
                let a = inner.decide(now, id);
                Answer {
                    remaining: a.remaining + 1,
                    ..a
                }
            }
        }
    }
}

impl Sim {
    /// The same limiter allowing `delta` more (or fewer) per window or
    /// bucket; `None` when that leaves nothing to admit.
    pub(crate) fn with_limit(&self, delta: i64) -> Option<Sim> {
        let f = |l: u64| (l as i64 + delta >= 1).then(|| (l as i64 + delta) as u64);
        Some(match self {
            Sim::Log(l) => Sim::Log(SlidingLog::new(f(l.limit)?, l.w, l.zset)),
            Sim::Fixed(l) => Sim::Fixed(FixedWindow::new(f(l.limit)?, l.w, l.kind)),
            Sim::Seg(l) => Sim::Seg(Segmented::new(f(l.limit)?, l.seg, l.s)),
            Sim::SegKeys(l) => Sim::SegKeys(SegmentedKeys {
                limit: f(l.limit)?,
                ..l.clone()
            }),
            Sim::Counter(l) => Sim::Counter(SlidingCounter {
                float: l.float,
                ..SlidingCounter::new(f(l.limit)?, l.w, l.plus_one)
            }),
            Sim::CounterKeys(l) => Sim::CounterKeys(CounterKeys {
                limit: f(l.limit)?,
                ..l.clone()
            }),
            Sim::Bucket(l) => Sim::Bucket(TokenBucket::new(f(l.cap)?, l.count, l.per)),
            Sim::FloatBucket(l) => Sim::FloatBucket(FloatBucket {
                cap: f(l.cap as u64)? as f64,
                tokens: f(l.cap as u64)? as f64,
                last: None,
                ..l.clone()
            }),
            Sim::Gcra(l) => Sim::Gcra(Gcra::new(f(l.burst)?, l.count, l.per)),
            Sim::AspFixed(l) => Sim::AspFixed(AspFixed {
                limit: f(l.limit)?,
                ..l.clone()
            }),
            Sim::AspSeg(l) => Sim::AspSeg(AspSegmented {
                limit: f(l.limit)?,
                ..l.clone()
            }),
            // A chunked bucket's bound gives up a whole chunk (late periods),
            // so one token less is never provably wrong: fewer is half the
            // refill instead.
            Sim::AspBucket(l) if delta < 0 => Sim::AspBucket(AspBucket {
                hb: Heartbeat {
                    period: 2 * l.hb.period,
                    ..l.hb.clone()
                },
                ..l.clone()
            }),
            Sim::AspBucket(l) => Sim::AspBucket(AspBucket {
                cap: f(l.cap)?,
                tokens: f(l.cap)?,
                ..l.clone()
            }),
            Sim::Replicas(_) | Sim::Liar(_) => return None,
        })
    }
}

/// A fixed pseudo-random balancer choice per request.
pub(crate) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}
