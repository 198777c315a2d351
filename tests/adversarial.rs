//! Adversarial property tests for the verifier, from the outside.
//!
//! The verifier promises that a *correct* limiter scores exactly zero
//! definite violations, zero false rejects and zero `remaining`
//! contradictions, whatever the load, the jitter, the history before the
//! trace, late replenishment or clocks within the stated slack. This file
//! tries hard to break that promise, and checks the other direction: a
//! limiter that really admits too much is caught, for a stated share of its
//! excess.
//!
//! The simulated limiters are written here from the algorithms' textbook
//! semantics, independently of the verifier and of `reference_api`'s
//! limiters (a shared bug would cancel itself out). They run on an event
//! clock: every request has an interval `[sent, done]` on the client clock
//! and the limiter decides it at one instant chosen adversarially (at the
//! start, at the end, or — probing a copy of the limiter first — admits late
//! and rejects early, or the reverse). The deciding replica reads its own
//! clock, possibly offset from the others by less than the slack, possibly
//! truncated to whole milliseconds, possibly some time *before* it takes the
//! lock (stamp-then-lock: the limiter then sees time go backwards and does
//! what real implementations do). Errors and timeouts are recorded as
//! `Unknown`; the server may still decide them after the client gave up, or
//! never.
//!
//! Sections: simulated limiters; the event simulation; the case generator;
//! the judge and the minimiser (a failure is shrunk to a small trace that
//! can be checked by hand and printed as code); correct limiters, one test
//! per limiter; hand-minimised regressions; mutants.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use reference_api::{Policy, Rate};
use rlbench::header_checks::{remaining_against_admits, RemainingCheck};
use rlbench::verify::{verify_key, Decided, Obs, Options, Verdict};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt::Write as _;

// ---------------------------------------------------------------------------
// Simulated limiters. `now` is the deciding replica's wall clock in µs
// (epoch-aligned: window boundaries sit on multiples of the window).
// ---------------------------------------------------------------------------

/// A limiter's answer: admitted or not, and its true remaining capacity
/// after the decision (what a correct `remaining` header says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Answer {
    admitted: bool,
    remaining: u64,
}

impl Answer {
    const REJECT: Answer = Answer {
        admitted: false,
        remaining: 0,
    };
    fn admit(remaining: u64) -> Answer {
        Answer {
            admitted: true,
            remaining,
        }
    }
}

// Sliding log.

/// A log of admit times: admit iff fewer than `limit` in `(t - w, t]`.
#[derive(Clone, Debug)]
struct SlidingLog {
    limit: u64,
    w: i64,
    /// Redis sorted-set style: each decision uses its own clock reading
    /// (`ZREMRANGEBYSCORE -inf now-w; ZCARD; ZADD now`), and entries stamped
    /// later than it still count. Otherwise in memory, time clamped so it
    /// never runs backwards.
    zset: bool,
    log: Vec<i64>,
    last: i64,
}

impl SlidingLog {
    fn new(limit: u64, w: i64, zset: bool) -> Self {
        SlidingLog {
            limit,
            w,
            zset,
            log: Vec::new(),
            last: i64::MIN,
        }
    }

    fn decide(&mut self, now: i64) -> Answer {
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
enum FixedKind {
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
struct FixedWindow {
    limit: u64,
    w: i64,
    kind: FixedKind,
    /// Current window (index, or start time when anchored), its count.
    win: i64,
    count: u64,
    last: i64,
    keys: Vec<(i64, u64)>,
}

impl FixedWindow {
    fn new(limit: u64, w: i64, kind: FixedKind) -> Self {
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

    fn decide(&mut self, now: i64) -> Answer {
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
struct Segmented {
    limit: u64,
    seg: i64,
    s: i64,
    ring: VecDeque<(i64, u64)>,
    last: i64,
}

impl Segmented {
    fn new(limit: u64, seg: i64, s: i64) -> Self {
        Segmented {
            limit,
            seg,
            s,
            ring: VecDeque::new(),
            last: i64::MIN,
        }
    }

    fn decide(&mut self, now: i64) -> Answer {
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
struct Keys(Vec<(i64, u64)>);

impl Keys {
    fn get(&self, k: i64) -> u64 {
        self.0
            .iter()
            .find(|(key, _)| *key == k)
            .map_or(0, |&(_, c)| c)
    }

    fn incr(&mut self, k: i64) {
        match self.0.iter_mut().find(|(key, _)| *key == k) {
            Some((_, c)) => *c += 1,
            None => self.0.push((k, 1)),
        }
    }
}

/// A segmented window on Redis keys, one per segment.
#[derive(Clone, Debug)]
struct SegmentedKeys {
    limit: u64,
    seg: i64,
    s: i64,
    keys: Keys,
}

impl SegmentedKeys {
    fn decide(&mut self, now: i64) -> Answer {
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
struct CounterKeys {
    limit: u64,
    w: i64,
    plus_one: bool,
    keys: Keys,
}

impl CounterKeys {
    fn allows(&self, prev: u64, cur: u64, elapsed: i64) -> bool {
        let w = self.w as i128;
        let used = prev as i128 * (w - elapsed as i128) + cur as i128 * w;
        let cap = self.limit as i128 * w;
        if self.plus_one {
            used + w <= cap
        } else {
            used < cap
        }
    }

    fn decide(&mut self, now: i64) -> Answer {
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
struct SlidingCounter {
    limit: u64,
    w: i64,
    /// Variant B, `estimate + 1 <= limit`; otherwise A, `estimate < limit`.
    plus_one: bool,
    /// The estimate in f64 (rounding), not exact integers.
    float: bool,
    win: i64,
    prev: u64,
    cur: u64,
    last: i64,
}

impl SlidingCounter {
    fn new(limit: u64, w: i64, plus_one: bool) -> Self {
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

    fn allows(&self, cur: u64, elapsed: i64) -> bool {
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

    fn decide(&mut self, now: i64) -> Answer {
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
struct TokenBucket {
    cap: u64,
    count: u64,
    per: i64,
    tokens: i128,
    last: Option<i64>,
}

impl TokenBucket {
    fn new(cap: u64, count: u64, per: i64) -> Self {
        TokenBucket {
            cap,
            count,
            per,
            tokens: cap as i128 * per as i128,
            last: None,
        }
    }

    fn decide(&mut self, now: i64) -> Answer {
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
struct FloatBucket {
    cap: f64,
    rate: f64,
    tokens: f64,
    last: Option<f64>,
}

impl FloatBucket {
    fn new(cap: u64, count: u64, per: i64) -> Self {
        FloatBucket {
            cap: cap as f64,
            rate: count as f64 / (per as f64 / 1e6),
            tokens: cap as f64,
            last: None,
        }
    }

    fn decide(&mut self, now: i64) -> Answer {
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
struct Gcra {
    burst: u64,
    count: u64,
    per: i64,
    tat: i128,
}

impl Gcra {
    fn new(burst: u64, count: u64, per: i64) -> Self {
        Gcra {
            burst,
            count,
            per,
            tat: i128::MIN / 4,
        }
    }

    fn decide(&mut self, now: i64) -> Answer {
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
struct Heartbeat {
    period: i64,
    tick: i64,
    origin: i64,
    last: i64,
    /// A tick at the very µs of a decision comes after it (else before).
    ties_late: bool,
}

impl Heartbeat {
    /// The next replenishment (it does not depend on the traffic).
    fn next(&self) -> i64 {
        let earliest = self.last + self.period;
        if self.tick == 0 {
            earliest
        } else {
            let ticks = (earliest - self.origin + self.tick - 1).div_euclid(self.tick);
            self.origin + ticks * self.tick
        }
    }

    /// How many replenishments happened up to `now`.
    fn due(&mut self, now: i64) -> u64 {
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
    fn times(&self, epoch: i64) -> Vec<i64> {
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
struct AspFixed {
    limit: u64,
    hb: Heartbeat,
    count: u64,
}

impl AspFixed {
    fn decide(&mut self, now: i64) -> Answer {
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
struct AspSegmented {
    limit: u64,
    hb: Heartbeat,
    ring: VecDeque<u64>,
}

impl AspSegmented {
    fn decide(&mut self, now: i64) -> Answer {
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
struct AspBucket {
    cap: u64,
    count: u64,
    hb: Heartbeat,
    tokens: u64,
}

impl AspBucket {
    fn decide(&mut self, now: i64) -> Answer {
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
enum Sim {
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
    fn decide(&mut self, now: i64, id: usize) -> Answer {
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
    fn with_limit(&self, delta: i64) -> Option<Sim> {
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
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

// ---------------------------------------------------------------------------
// The event simulation.
// ---------------------------------------------------------------------------

/// When the limiter decides a request (true time, µs on the client clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    At(i64),
    /// The adversary asks a copy of the limiter at `sent`: an answer it
    /// wants early is decided there, any other at `done` (admits late and
    /// rejects early when `admits_late`, the reverse otherwise).
    Probe {
        admits_late: bool,
    },
    /// Never decided (lost before the limiter).
    Never,
}

#[derive(Clone, Copy, Debug)]
struct Req {
    sent: i64,
    done: i64,
    /// The client got the answer; otherwise the trace says `Unknown` (an
    /// error or a timeout, `done` the moment the client gave up).
    answered: bool,
    plan: Plan,
    decider: usize,
    /// Stamp-then-lock: the replica read its clock this many ‰ of the way
    /// back from the decision towards `sent`...
    lag: i64,
    /// ...but at most this many µs before it.
    max_stale: i64,
}

/// The replicas' clocks.
#[derive(Clone, Debug)]
struct Clock {
    /// Wall µs at trace time 0 (what epoch-aligned windows are aligned to).
    epoch: i64,
    /// The limiter reads whole milliseconds (truncated).
    ms: bool,
    /// Each replica's offset from the true wall clock.
    offsets: Vec<i64>,
}

impl Clock {
    fn exact(epoch: i64) -> Clock {
        Clock {
            epoch,
            ms: false,
            offsets: vec![0],
        }
    }

    fn read(&self, t: i64, decider: usize) -> i64 {
        let wall = t + self.epoch + self.offsets[decider];
        if self.ms {
            wall.div_euclid(1_000) * 1_000
        } else {
            wall
        }
    }
}

/// One decision: true instant, the clock reading it used, the answer.
#[derive(Clone, Copy, Debug)]
struct Decision {
    at: i64,
    reading: i64,
    answer: Answer,
}

struct Run {
    obs: Vec<Obs>,
    witnesses: Vec<(u32, u32)>,
    /// Per request, warm-up ones first.
    decisions: Vec<Option<Decision>>,
}

impl Run {
    fn admitted(&self) -> u64 {
        self.obs
            .iter()
            .filter(|o| o.decided == Decided::Admitted)
            .count() as u64
    }
}

/// Runs `warm` (before trace time 0, not recorded) and `reqs` through a
/// copy of `lim`, each decision at its planned instant, in time order.
fn simulate(lim: &Sim, clock: &Clock, warm: &[Req], reqs: &[Req]) -> Run {
    let mut lim = lim.clone();
    let all: Vec<&Req> = warm.iter().chain(reqs).collect();
    let mut queue = BinaryHeap::new();
    for (i, r) in all.iter().enumerate() {
        match r.plan {
            Plan::At(d) => queue.push(Reverse((d, i, false))),
            Plan::Probe { .. } => queue.push(Reverse((r.sent, i, true))),
            Plan::Never => {}
        }
    }
    let mut decisions = vec![None; all.len()];
    while let Some(Reverse((at, i, probe))) = queue.pop() {
        let r = all[i];
        let stale = ((at - r.sent) * r.lag / 1_000).min(r.max_stale);
        let reading = clock.read(at - stale, r.decider);
        if let (true, Plan::Probe { admits_late }) = (probe, r.plan) {
            let a = lim.clone().decide(reading, i);
            if a.admitted == admits_late && r.done > r.sent {
                queue.push(Reverse((r.done, i, false)));
                continue;
            }
        }
        let answer = lim.decide(reading, i);
        decisions[i] = Some(Decision {
            at,
            reading,
            answer,
        });
    }
    let mut obs = Vec::with_capacity(reqs.len());
    let mut witnesses = Vec::new();
    for (j, r) in reqs.iter().enumerate() {
        let d = decisions[warm.len() + j];
        let decided = match (r.answered, d) {
            (true, Some(d)) if d.answer.admitted => Decided::Admitted,
            (true, Some(_)) => Decided::Rejected,
            _ => Decided::Unknown,
        };
        if let (true, Some(d)) = (r.answered, d) {
            if d.answer.remaining > 0 {
                witnesses.push((j as u32, d.answer.remaining.min(u32::MAX as u64) as u32));
            }
        }
        obs.push(Obs {
            sent: r.sent,
            done: r.done,
            decided,
        });
    }
    Run {
        obs,
        witnesses,
        decisions,
    }
}

// ---------------------------------------------------------------------------
// The case generator.
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Algo {
    LogMemory,
    LogZset,
    FixedEpoch,
    FixedKeyed,
    FixedAnchored,
    SegEpoch,
    /// Redis keys per segment / per window, no clamping.
    SegKeyed,
    CounterLt,
    CounterLe,
    CounterKeyed,
    /// f64 arithmetic on f64 seconds.
    CounterFloat,
    Bucket,
    BucketFloat,
    Gcra,
    /// ASP.NET limiters replenished from a heartbeat (late, drifting).
    AspFixed,
    AspSeg,
    AspBucket,
    /// ASP.NET token bucket on an exact timer: chunked, never late.
    ChunkedTimer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A fresh limiter; errors decided inside their interval or never.
    Plain,
    /// Requests before trace time 0 left state behind (`unknown_history`).
    History,
    /// Timeouts: the server decides after the client gave up, or never.
    Timeouts,
    /// History and timeouts together.
    Both,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::Plain, Kind::History, Kind::Timeouts, Kind::Both];

    fn history(self) -> bool {
        matches!(self, Kind::History | Kind::Both)
    }

    fn timeouts(self) -> bool {
        matches!(self, Kind::Timeouts | Kind::Both)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Strategy {
    Early,
    Late,
    Uniform,
    Mixed,
    AdmitsLate,
    RejectsLate,
}

impl Strategy {
    const ALL: [Strategy; 6] = [
        Strategy::Early,
        Strategy::Late,
        Strategy::Uniform,
        Strategy::Mixed,
        Strategy::AdmitsLate,
        Strategy::RejectsLate,
    ];

    fn plan(self, rng: &mut SmallRng, sent: i64, done: i64) -> Plan {
        match self {
            Strategy::Early => Plan::At(sent),
            Strategy::Late => Plan::At(done),
            Strategy::Uniform => Plan::At(rng.random_range(sent..=done)),
            Strategy::Mixed => {
                let s =
                    [Strategy::Early, Strategy::Late, Strategy::Uniform][rng.random_range(0..3)];
                s.plan(rng, sent, done)
            }
            Strategy::AdmitsLate => Plan::Probe { admits_late: true },
            Strategy::RejectsLate => Plan::Probe { admits_late: false },
        }
    }
}

#[derive(Clone, Debug)]
struct Case {
    /// What was drawn, for the failure message.
    label: String,
    policy: Policy,
    lim: Sim,
    clock: Clock,
    warm: Vec<Req>,
    reqs: Vec<Req>,
    opts: Options,
}

fn pick<T: Copy>(rng: &mut SmallRng, xs: &[T]) -> T {
    xs[rng.random_range(0..xs.len())]
}

fn exp_gap(rng: &mut SmallRng, mean: f64) -> i64 {
    (-(1.0 - rng.random::<f64>()).ln() * mean) as i64
}

/// Send times: single arrivals, bursts (often straddling the next window
/// edge), long gaps, dense runs; with `snap`, many moved onto an edge
/// exactly or one µs either side of it. `quota`: what the policy admits per
/// `scale`; `next_edge(t)`: the first window edge (trace time) after `t`.
fn arrivals(
    rng: &mut SmallRng,
    n: usize,
    scale: i64,
    quota: u64,
    next_edge: &dyn Fn(i64) -> i64,
    snap: f64,
) -> Vec<i64> {
    let rho = rng.random_range(0.3..4.0);
    let mean = (scale as f64 / quota as f64 / rho).max(1.0);
    let mut t = rng.random_range(0..=scale);
    let mut out = Vec::with_capacity(n + 32);
    while out.len() < n {
        match rng.random_range(0..100) {
            0..=39 => {
                t += exp_gap(rng, mean);
                out.push(t);
            }
            40..=69 => {
                let m = rng.random_range(1..=3 * quota as usize + 2);
                let sigma = rng.random_range(0..=scale / 8);
                let center = if rng.random_bool(0.7) {
                    next_edge(t)
                } else {
                    t + exp_gap(rng, mean)
                };
                for _ in 0..m {
                    out.push((center - sigma / 2 + rng.random_range(0..=sigma)).max(0));
                }
                t = t.max(center + sigma / 2);
            }
            70..=79 => {
                t += rng.random_range(scale..=4 * scale);
                out.push(t);
            }
            _ => {
                let k = rng.random_range(2..=2 * quota as usize + 2);
                let g = rng.random_range(0..=(scale / (4 * quota as i64)).max(1));
                for _ in 0..k {
                    t += g;
                    out.push(t);
                }
            }
        }
    }
    out.truncate(n);
    for t in &mut out {
        if rng.random_bool(snap) {
            *t = (next_edge(*t - 1) + rng.random_range(-1..=1)).max(0);
        }
    }
    out.sort_unstable();
    out
}

fn gen_case(algo: Algo, kind: Kind, seed: u64) -> Case {
    let mut rng = SmallRng::seed_from_u64(
        seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((algo as u64) << 48) ^ ((kind as u64) << 56),
    );
    let asp = matches!(
        algo,
        Algo::AspFixed | Algo::AspSeg | Algo::AspBucket | Algo::ChunkedTimer
    );
    // Clocks. An ASP.NET limiter is one process on one monotonic clock.
    let ms = !asp && rng.random_bool(0.4);
    let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000_000i64);
    let deciders = if asp { 1 } else { rng.random_range(1..=3usize) };
    let spread = if deciders == 1 {
        0
    } else {
        pick(&mut rng, &[0, 40, 300, 1_000])
    };
    // Within [base, base + spread]: pairwise within the spread, and each
    // within the spread of the true wall clock.
    let base = -rng.random_range(0..=spread);
    let offsets: Vec<i64> = (0..deciders)
        .map(|_| base + rng.random_range(0..=spread))
        .collect();
    let reorder = if asp {
        0.0
    } else {
        pick(&mut rng, &[0.0, 0.3, 1.0])
    };
    // The slack the clocks need: the replicas' spread, a millisecond clock's
    // resolution, and the client clock's own microsecond.
    let slack = spread
        + if ms { 1_000 } else { 1 }
        + if rng.random_bool(0.3) {
            rng.random_range(0..=1_000)
        } else {
            0
        };
    // How stale a reading may be. The clamping limiters decide as if at
    // their effective time, which lies inside the request's interval however
    // stale the reading. A GCRA does not clamp (its only state is the
    // theoretical arrival time): a stale reading makes it stricter, by at
    // most the reject's own interval, which the verifier allows for. Keys
    // per window do not clamp either, and a reading behind another one
    // across an edge lets both admit: within the promise only while every
    // reading's error stays within the slack.
    let max_stale = if matches!(algo, Algo::SegKeyed | Algo::CounterKeyed) {
        slack - spread - if ms { 1_000 } else { 1 }
    } else {
        i64::MAX
    };
    let ties_late = rng.random_bool(0.5);
    let limit = rng.random_range(1..=8u64);
    let tick_for = |rng: &mut SmallRng, period: i64| match rng.random_range(0..3) {
        0 => (period / rng.random_range(1..=10)).max(1),
        1 => rng.random_range(1..=period),
        _ => rng.random_range(1..=period / 10 + 1),
    };
    // Created before anything happens, heartbeat at a random phase.
    let created = epoch - 5_000_000 - rng.random_range(0..=100_000);
    let heartbeat = |rng: &mut SmallRng, period: i64, tick: i64| Heartbeat {
        period,
        tick,
        origin: created
            + if tick > 0 {
                rng.random_range(0..tick)
            } else {
                0
            },
        last: created,
        ties_late,
    };
    // (policy, limiter, scale: its window or a drained bucket's refill time,
    // the epoch-aligned edge period for bursts, may be judged aligned,
    // lateness, chunked, quota: what it admits per scale)
    let (policy, lim, scale, edge, aligned_ok, lateness, chunked, quota) = match algo {
        Algo::LogMemory | Algo::LogZset => {
            let w = rng.random_range(1_000..=40_000);
            (
                Policy::SlidingLog {
                    limit,
                    window_us: w as u64,
                },
                Sim::Log(SlidingLog::new(limit, w, algo == Algo::LogZset)),
                w,
                None,
                false,
                0,
                false,
                limit,
            )
        }
        Algo::FixedEpoch | Algo::FixedKeyed | Algo::FixedAnchored => {
            let w = rng.random_range(1_000..=40_000);
            let kind = match algo {
                Algo::FixedEpoch => FixedKind::Epoch,
                Algo::FixedKeyed => FixedKind::Keyed,
                _ => FixedKind::Anchored,
            };
            (
                Policy::FixedWindow {
                    limit,
                    window_us: w as u64,
                },
                Sim::Fixed(FixedWindow::new(limit, w, kind)),
                w,
                (kind != FixedKind::Anchored).then_some(w),
                kind != FixedKind::Anchored,
                0,
                false,
                limit,
            )
        }
        Algo::SegEpoch | Algo::SegKeyed => {
            let s = rng.random_range(1..=5i64);
            let seg = rng.random_range(300..=10_000);
            (
                Policy::SlidingWindow {
                    limit,
                    window_us: (s * seg) as u64,
                    segments: s as u64,
                },
                if algo == Algo::SegEpoch {
                    Sim::Seg(Segmented::new(limit, seg, s))
                } else {
                    Sim::SegKeys(SegmentedKeys {
                        limit,
                        seg,
                        s,
                        keys: Keys::default(),
                    })
                },
                s * seg,
                Some(seg),
                true,
                0,
                false,
                limit,
            )
        }
        Algo::CounterLt | Algo::CounterLe | Algo::CounterKeyed | Algo::CounterFloat => {
            let w = rng.random_range(1_000..=40_000);
            (
                Policy::SlidingCounter {
                    limit,
                    window_us: w as u64,
                },
                if algo == Algo::CounterKeyed {
                    Sim::CounterKeys(CounterKeys {
                        limit,
                        w,
                        plus_one: rng.random_bool(0.5),
                        keys: Keys::default(),
                    })
                } else {
                    Sim::Counter(SlidingCounter {
                        float: algo == Algo::CounterFloat,
                        ..SlidingCounter::new(
                            limit,
                            w,
                            algo == Algo::CounterLe
                                || (algo == Algo::CounterFloat && rng.random_bool(0.5)),
                        )
                    })
                },
                w,
                Some(w),
                true,
                0,
                false,
                limit,
            )
        }
        Algo::Bucket | Algo::BucketFloat | Algo::Gcra => {
            let count = rng.random_range(1..=3u64);
            let per = rng.random_range(1_000..=20_000i64);
            let rate = Rate {
                count,
                per_us: per as u64,
            };
            let scale = (per * limit as i64 / count as i64).max(per);
            if algo != Algo::Gcra {
                (
                    Policy::TokenBucket {
                        capacity: limit,
                        refill: rate,
                    },
                    if algo == Algo::Bucket {
                        Sim::Bucket(TokenBucket::new(limit, count, per))
                    } else {
                        Sim::FloatBucket(FloatBucket::new(limit, count, per))
                    },
                    scale,
                    None,
                    false,
                    0,
                    false,
                    limit,
                )
            } else {
                (
                    Policy::Gcra { rate, burst: limit },
                    Sim::Gcra(Gcra::new(limit, count, per)),
                    scale,
                    None,
                    false,
                    0,
                    false,
                    limit,
                )
            }
        }
        Algo::AspFixed => {
            let p = rng.random_range(1_000..=20_000);
            let tick = tick_for(&mut rng, p);
            (
                Policy::FixedWindow {
                    limit,
                    window_us: p as u64,
                },
                Sim::AspFixed(AspFixed {
                    limit,
                    hb: heartbeat(&mut rng, p, tick),
                    count: 0,
                }),
                p,
                None,
                false,
                tick,
                false,
                limit,
            )
        }
        Algo::AspSeg => {
            let s = rng.random_range(1..=5i64);
            let seg = rng.random_range(300..=10_000);
            let tick = tick_for(&mut rng, seg);
            (
                Policy::SlidingWindow {
                    limit,
                    window_us: (s * seg) as u64,
                    segments: s as u64,
                },
                Sim::AspSeg(AspSegmented {
                    limit,
                    hb: heartbeat(&mut rng, seg, tick),
                    ring: vec![0; s as usize].into(),
                }),
                s * seg,
                None,
                false,
                tick,
                false,
                limit,
            )
        }
        Algo::AspBucket | Algo::ChunkedTimer => {
            let count = rng.random_range(1..=3u64);
            let per = rng.random_range(1_000..=20_000i64);
            let tick = if algo == Algo::AspBucket {
                tick_for(&mut rng, per)
            } else {
                0
            };
            (
                Policy::TokenBucket {
                    capacity: limit,
                    refill: Rate {
                        count,
                        per_us: per as u64,
                    },
                },
                Sim::AspBucket(AspBucket {
                    cap: limit,
                    count,
                    hb: heartbeat(&mut rng, per, tick),
                    tokens: limit,
                }),
                (per * limit as i64 / count as i64).max(per),
                None,
                false,
                tick,
                true,
                limit,
            )
        }
    };
    // Where the adversary aims its bursts: epoch-aligned window edges, a
    // heartbeat's replenishments (known here, hidden from the verifier), or
    // a bucket's token period.
    let beats = match &lim {
        Sim::AspFixed(l) => l.hb.times(epoch),
        Sim::AspSeg(l) => l.hb.times(epoch),
        Sim::AspBucket(l) => l.hb.times(epoch),
        _ => Vec::new(),
    };
    let period = edge.unwrap_or(match policy {
        Policy::TokenBucket { refill, .. } | Policy::Gcra { rate: refill, .. } => {
            (refill.per_us / refill.count).max(1) as i64
        }
        _ => scale,
    });
    let next_edge = |t: i64| match beats.get(beats.partition_point(|&b| b <= t)) {
        Some(&b) => b,
        None => ((t + epoch).div_euclid(period) + 1) * period - epoch,
    };
    let n = rng.random_range(30..=250);
    let snap = pick(&mut rng, &[0.0, 0.0, 0.3, 0.9]);
    let sends = arrivals(&mut rng, n, scale, quota, &next_edge, snap);
    let strategy = pick(&mut rng, &Strategy::ALL);
    let dmax = match rng.random_range(0..4) {
        0 => 0,
        1 => rng.random_range(1..=50),
        2 => rng.random_range(1..=500),
        _ => rng.random_range(1..=(scale / 4).max(1)),
    };
    let long = rng.random_bool(0.3);
    // Lengths right at the rules' thresholds, for some requests.
    let critical = [
        0,
        1,
        slack,
        scale - slack - 1,
        scale - slack,
        scale / 2,
        scale,
    ];
    let p_critical = pick(&mut rng, &[0.0, 0.0, 0.1, 0.5]);
    let p_unknown = if kind.timeouts() {
        pick(&mut rng, &[0.05, 0.2, 0.5])
    } else {
        pick(&mut rng, &[0.0, 0.0, 0.05, 0.2])
    };
    let late_max = pick(&mut rng, &[scale / 10, scale, 5 * scale, 2_000_000]);
    let mut reqs = Vec::with_capacity(n);
    for &sent in &sends {
        let len = if long && rng.random_bool(0.03) {
            2_000_000
        } else if rng.random_bool(p_critical) {
            pick(&mut rng, &critical).max(0)
        } else {
            rng.random_range(0..=dmax)
        };
        let done = sent + len;
        let (answered, plan) = if !rng.random_bool(p_unknown) {
            (true, strategy.plan(&mut rng, sent, done))
        } else {
            let plan = match rng.random_range(0..10) {
                0..=1 => Plan::Never,
                4.. if kind.timeouts() => Plan::At(done + rng.random_range(0..=late_max)),
                _ => Plan::At(rng.random_range(sent..=done)),
            };
            (false, plan)
        };
        reqs.push(Req {
            sent,
            done,
            answered,
            plan,
            decider: rng.random_range(0..deciders),
            lag: if rng.random_bool(reorder) {
                rng.random_range(0..=1_000)
            } else {
                0
            },
            max_stale,
        });
    }
    let mut warm = Vec::new();
    if kind.history() {
        let warm_span = pick(&mut rng, &[(scale / 10).max(1), scale, 3 * scale]);
        for _ in 0..rng.random_range(quota as usize..=4 * quota as usize + 2) {
            let sent = -1 - rng.random_range(0..=warm_span);
            warm.push(Req {
                sent,
                done: sent,
                answered: true,
                plan: Plan::At(sent),
                decider: rng.random_range(0..deciders),
                lag: 0,
                max_stale: 0,
            });
        }
    }
    let aligned = aligned_ok && rng.random_bool(0.6);
    let uncertainty = if aligned && rng.random_bool(0.3) {
        rng.random_range(1..=2_000)
    } else {
        0
    };
    let epoch_offset_us = if aligned {
        epoch + rng.random_range(-uncertainty..=uncertainty)
    } else if rng.random_bool(0.5) {
        0
    } else {
        epoch + rng.random_range(-scale..=scale)
    };
    // Overstating the lateness or the server's time must be harmless.
    let lateness_us = lateness
        + if rng.random_bool(0.1) {
            rng.random_range(0..=scale / 4)
        } else {
            0
        };
    let max_server_time_us = if !kind.timeouts() {
        pick(&mut rng, &[None, None, Some(0), Some(scale)])
    } else if rng.random_bool(0.3) {
        Some(late_max)
    } else {
        None
    };
    let mut opts = Options {
        slack_us: slack,
        epoch_offset_us,
        aligned,
        unknown_history: kind.history() || rng.random_bool(0.2),
        lateness_us,
        chunked_refill: chunked,
        max_server_time_us,
        // One clock read in the atomic step: ASP.NET's heartbeat (the
        // decision does not read the time at all), or one decider reading
        // its clock as it takes the state. Several deciders or stale
        // readings: the order of readings is not the order of decisions.
        one_clock: asp || (deciders == 1 && reorder == 0.0),
        ..Options::default()
    };
    opts.epoch_uncertainty_us = uncertainty;
    let label = format!(
        "{algo:?} {kind:?} ms={ms} deciders={deciders} offsets={offsets:?} reorder={reorder} \
         strategy={strategy:?} dmax={dmax} long={long} p_critical={p_critical} snap={snap} \
         p_unknown={p_unknown} late_max={late_max} ties_late={ties_late}"
    );
    Case {
        label,
        policy,
        lim,
        clock: Clock { epoch, ms, offsets },
        warm,
        reqs,
        opts,
    }
}

// ---------------------------------------------------------------------------
// The judge and the minimiser.
// ---------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Judged {
    v: Verdict,
    header: RemainingCheck,
}

impl Judged {
    /// Which promises broke: definite, false rejects, contradictions.
    fn broken(&self) -> [bool; 3] {
        [
            self.v.definite_violations > 0,
            self.v.false_rejects > 0,
            self.header.contradicted > 0,
        ]
    }
}

fn judge_run(run: &Run, policy: &Policy, opts: &Options) -> Judged {
    let v = verify_key(policy, &run.obs, opts);
    let mut header = RemainingCheck::default();
    remaining_against_admits("k", &run.obs, &run.witnesses, opts, &mut header);
    Judged { v, header }
}

fn judge(c: &Case) -> (Run, Judged) {
    let run = simulate(&c.lim, &c.clock, &c.warm, &c.reqs);
    let j = judge_run(&run, &c.policy, &c.opts);
    (run, j)
}

/// Drops requests (trace and warm-up; the limiter re-runs every time, so
/// the trace stays one a correct limiter produced) while a promise that
/// broke before still breaks.
fn minimize(case: &Case) -> Case {
    let before = judge(case).1.broken();
    let still = |c: &Case| {
        let now = judge(c).1.broken();
        (0..3).any(|i| before[i] && now[i])
    };
    let mut c = case.clone();
    let mut chunk = (c.reqs.len() + c.warm.len()).max(2) / 2;
    loop {
        let mut progress = false;
        for warm in [true, false] {
            let mut i = 0;
            while i < if warm { c.warm.len() } else { c.reqs.len() } {
                let mut t = c.clone();
                let list = if warm { &mut t.warm } else { &mut t.reqs };
                let end = (i + chunk).min(list.len());
                list.drain(i..end);
                if still(&t) {
                    c = t;
                    progress = true;
                } else {
                    i += chunk;
                }
            }
        }
        if !progress {
            if chunk == 1 {
                return c;
            }
            chunk = (chunk / 2).max(1);
        }
    }
}

/// A case as a hand-checkable listing, and the trace as code.
fn show(c: &Case) -> String {
    let (run, j) = judge(c);
    let mut s = String::new();
    let _ = writeln!(s, "{}", c.label);
    let _ = writeln!(s, "policy: {:?}", c.policy);
    let _ = writeln!(s, "opts: {:?}", c.opts);
    let _ = writeln!(
        s,
        "clock: epoch {} (wall ≡ {} mod 1e9), ms {}, offsets {:?}",
        c.clock.epoch,
        c.clock.epoch.rem_euclid(1_000_000_000),
        c.clock.ms,
        c.clock.offsets
    );
    let _ = writeln!(s, "limiter: {:?}", c.lim);
    let _ = writeln!(
        s,
        "verdict: {:?}\nheader: {:?}\nwitnesses: {:?}",
        j.v, j.header, run.witnesses
    );
    let line = |s: &mut String, tag: &str, r: &Req, d: Option<Decision>| {
        let _ = write!(
            s,
            "  {tag} sent {} done {} answered {} plan {:?} decider {} lag {}‰ (≤ {} µs)",
            r.sent, r.done, r.answered, r.plan, r.decider, r.lag, r.max_stale
        );
        match d {
            Some(d) => {
                let _ = writeln!(
                    s,
                    " -> at {} reading epoch{:+} {} remaining {}",
                    d.at,
                    d.reading - c.clock.epoch,
                    if d.answer.admitted { "ADMIT" } else { "reject" },
                    d.answer.remaining
                );
            }
            None => {
                let _ = writeln!(s, " -> never decided");
            }
        }
    };
    for (i, r) in c.warm.iter().enumerate() {
        line(&mut s, "warm", r, run.decisions[i]);
    }
    for (i, r) in c.reqs.iter().enumerate() {
        line(&mut s, &format!("#{i}"), r, run.decisions[c.warm.len() + i]);
    }
    let _ = writeln!(s, "as code:");
    for o in &run.obs {
        let _ = writeln!(
            s,
            "    obs({}, {}, Decided::{:?}),",
            o.sent, o.done, o.decided
        );
    }
    s
}

/// Per kind, `cases` seeds of `algo`: a correct limiter must never be
/// flagged, and the load must press it. Every failing kind is reported
/// with its first seed, minimised.
fn correct_limiter(algo: Algo, cases: u64) {
    let mut failures = Vec::new();
    for kind in Kind::ALL {
        let (mut pressed, mut rejects, mut checked) = (0u64, 0u64, 0u64);
        let (mut flagged, mut cases_flagged) = ([0u64; 3], 0u64);
        let mut first: Option<(u64, Case)> = None;
        // On every 8th case: (tried, caught) for one more, one fewer.
        let mut more = (0u64, 0u64);
        let mut fewer = (0u64, 0u64);
        for seed in 0..cases {
            let case = gen_case(algo, kind, seed);
            if seed % 8 == 0 {
                for (delta, tally) in [(1, &mut more), (-1, &mut fewer)] {
                    let Some(lim) = case.lim.with_limit(delta) else {
                        continue;
                    };
                    let (_, m) = judge(&Case {
                        lim,
                        ..case.clone()
                    });
                    tally.0 += 1;
                    tally.1 += u64::from(if delta > 0 {
                        m.v.definite_violations > 0
                    } else {
                        m.v.false_rejects > 0
                    });
                }
            }
            let (_, j) = judge(&case);
            pressed += u64::from(j.v.rejected > 0);
            rejects += j.v.rejected;
            checked += j.header.checked;
            let broken = j.broken();
            for (f, b) in flagged.iter_mut().zip(broken) {
                *f += u64::from(b);
            }
            if broken.iter().any(|&b| b) {
                cases_flagged += 1;
                if first.is_none() {
                    first = Some((seed, case));
                }
            }
        }
        // Not vacuous: most cases hit the limit, the header check ran, and
        // the same loads tell a limiter one off from the correct one.
        if pressed * 10 < cases * 7 || checked < cases {
            failures.push(format!(
                "{algo:?} {kind:?}: the load pressed only {pressed} of {cases} cases \
                 ({rejects} rejects, {checked} header checks)"
            ));
        }
        if std::env::var_os("ADVERSARIAL_RATES").is_some() {
            eprintln!("{algo:?} {kind:?}: one more caught {more:?}, one fewer caught {fewer:?}");
        }
        // Requests that may be decided any time later leave a bucket's
        // rejects mostly unjudgeable: there one fewer may go unseen.
        if more.1 * 10 < more.0 || (fewer.1 == 0 && !kind.timeouts()) {
            failures.push(format!(
                "{algo:?} {kind:?}: a limiter allowing one more was caught in {} of {}, one \
                 allowing one fewer in {} of {}",
                more.1, more.0, fewer.1, fewer.0
            ));
        }
        if let Some((seed, case)) = first {
            failures.push(format!(
                "{algo:?} {kind:?}: a correct limiter was flagged in {} of {cases} cases \
                 (definite, false rejects, contradicted: {flagged:?}); first seed {seed}, \
                 minimised:\n{}",
                cases_flagged,
                show(&minimize(&case))
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---------------------------------------------------------------------------
// Correct limiters: one test per limiter, each over the four kinds of case
// (`CASES` seeds each), plus on every 8th case a limiter one off from it.
// ---------------------------------------------------------------------------

const CASES: u64 = 600;

#[test]
fn correct_sliding_log_in_memory() {
    correct_limiter(Algo::LogMemory, CASES);
}

#[test]
fn correct_sliding_log_redis_sorted_set() {
    correct_limiter(Algo::LogZset, CASES);
}

#[test]
fn correct_fixed_window_epoch_aligned() {
    correct_limiter(Algo::FixedEpoch, CASES);
}

#[test]
fn correct_fixed_window_redis_key_per_window() {
    correct_limiter(Algo::FixedKeyed, CASES);
}

#[test]
fn correct_fixed_window_anchored_at_first_hit() {
    correct_limiter(Algo::FixedAnchored, CASES);
}

#[test]
fn correct_segmented_window_epoch_aligned() {
    correct_limiter(Algo::SegEpoch, CASES);
}

#[test]
fn correct_segmented_window_redis_key_per_segment() {
    correct_limiter(Algo::SegKeyed, CASES);
}

#[test]
fn correct_sliding_counter_redis_key_per_window() {
    correct_limiter(Algo::CounterKeyed, CASES);
}

#[test]
fn correct_sliding_counter_estimate_below_limit() {
    correct_limiter(Algo::CounterLt, CASES);
}

#[test]
fn correct_sliding_counter_estimate_plus_one_within_limit() {
    correct_limiter(Algo::CounterLe, CASES);
}

#[test]
fn correct_token_bucket() {
    correct_limiter(Algo::Bucket, CASES);
}

#[test]
fn correct_token_bucket_in_floating_point() {
    correct_limiter(Algo::BucketFloat, CASES);
}

#[test]
fn correct_sliding_counter_in_floating_point() {
    correct_limiter(Algo::CounterFloat, CASES);
}

#[test]
fn correct_gcra() {
    correct_limiter(Algo::Gcra, CASES);
}

#[test]
fn correct_aspnet_fixed_window_late_heartbeat() {
    correct_limiter(Algo::AspFixed, CASES);
}

#[test]
fn correct_aspnet_segmented_window_late_heartbeat() {
    correct_limiter(Algo::AspSeg, CASES);
}

#[test]
fn correct_aspnet_token_bucket_late_heartbeat() {
    correct_limiter(Algo::AspBucket, CASES);
}

#[test]
fn correct_aspnet_token_bucket_exact_timer() {
    correct_limiter(Algo::ChunkedTimer, CASES);
}

// ---------------------------------------------------------------------------
// Hand-minimised regressions: correct limiters the verifier flagged. Each
// comment says what the limiter did and why it is correct.
// ---------------------------------------------------------------------------

fn obs(sent: i64, done: i64, decided: Decided) -> Obs {
    Obs {
        sent,
        done,
        decided,
    }
}

/// GCRA, burst 2, one per 10 ms; two replicas whose clocks are 500 µs apart
/// (within the default 1 ms slack). Replica B (clock +500) admits the first
/// request at true 10.000 ms, reading 10.500: TAT = 20.500. Replica A
/// (exact) decides the second at true 10.100, reading 10.100: TAT − now =
/// 10.400 ms > (burst − 1)·T = 10 ms, so it rejects. A GCRA keeps only its
/// TAT, so a clock that is behind an earlier decision's clock refills
/// "negatively": 0.04 of a token short. Nothing clamps that in a real GCRA
/// (governor's CAS loop with a stale `now`, Redis scripts fed the caller's
/// time). Within the slack this reject is correct. At commit 420e315 the
/// bucket bound took the bucket as full at `sent − slack` and subtracted
/// each later admit whole, with no allowance for the missing refill, and
/// called it false.
#[test]
fn gcra_with_replica_clocks_within_the_slack_is_not_a_false_reject() {
    let policy = Policy::Gcra {
        rate: Rate {
            count: 1,
            per_us: 10_000,
        },
        burst: 2,
    };
    // The simulation agrees with the story above.
    let mut g = Gcra::new(2, 1, 10_000);
    assert!(g.decide(10_500).admitted);
    assert!(!g.decide(10_100).admitted);
    let trace = [
        obs(10_000, 10_000, Decided::Admitted),
        obs(10_100, 10_100, Decided::Rejected),
    ];
    for unknown_history in [false, true] {
        let opts = Options {
            unknown_history,
            ..Options::default()
        };
        let v = verify_key(&policy, &trace, &opts);
        assert_eq!(
            v.false_rejects, 0,
            "unknown_history {unknown_history}: {v:?}"
        );
    }
}

/// The same on one replica that reads its clock, then waits for the lock
/// (stamp-then-lock). The reject reads `read` at its send; the admit, sent
/// at 10.200 ms, takes the lock first and is admitted at 10.250 (reading
/// 10.250, TAT 20.250); then the reject applies its stale reading: TAT −
/// now > 10 ms, rejected. An exact GCRA at true 10.300 would have had a
/// token left. Stale by 150 µs (within the slack) and by 2.3 ms (beyond
/// the slack, but inside the reject's own interval, which bounds how far
/// ahead any admit it sees can be). Failed at commit 420e315.
#[test]
fn gcra_with_a_stale_reading_is_not_a_false_reject() {
    let policy = Policy::Gcra {
        rate: Rate {
            count: 1,
            per_us: 10_000,
        },
        burst: 2,
    };
    for read in [10_100, 8_000] {
        let mut g = Gcra::new(2, 1, 10_000);
        assert!(g.decide(10_250).admitted);
        assert!(!g.decide(read).admitted);
        let trace = [
            obs(10_200, 10_260, Decided::Admitted),
            obs(read, 10_300, Decided::Rejected),
        ];
        let v = verify_key(&policy, &trace, &Options::default());
        assert_eq!(v.false_rejects, 0, "stale reading {read}: {v:?}");
    }
}

/// A segmented window kept in Redis, one key per segment (limit 1, three
/// segments of 1 ms, epoch 0 so trace time is wall time), two replicas
/// whose clocks are 400 µs apart (within the default 1 ms slack). At true
/// 2.800 ms replica A (clock +400) reads 3.200 — segment 3 — finds
/// segments 1..3 empty and admits. At true 2.810 replica B (exact) reads
/// 2.810 — segment 2 — finds segments 0..2 empty (A's admit is in segment
/// 3) and admits. Each decision applied the algorithm to the shared state
/// at its own clock; the two clocks straddle an edge in opposite order to
/// the decisions. Two admits 10 µs apart: the rule "more than N within
/// W·(S−1)/S" calls one a definite violation.
#[test]
fn segments_on_redis_keys_with_replica_clocks_within_the_slack_are_not_violations() {
    let policy = Policy::SlidingWindow {
        limit: 1,
        window_us: 3_000,
        segments: 3,
    };
    let mut l = SegmentedKeys {
        limit: 1,
        seg: 1_000,
        s: 3,
        keys: Keys::default(),
    };
    assert!(l.decide(3_200).admitted);
    assert!(l.decide(2_810).admitted);
    let trace = [
        obs(2_800, 2_800, Decided::Admitted),
        obs(2_810, 2_810, Decided::Admitted),
    ];
    let v = verify_key(&policy, &trace, &Options::default());
    assert_eq!(v.definite_violations, 0, "{v:?}");
}

/// A sliding counter kept in Redis, one key per window (limit 2, W = 10
/// ms, epoch 0), replicas 400 µs apart. At true 9.800 ms replica A (clock
/// +400) reads 10.200: window 1, previous window empty, admits two. At true
/// 9.810 replica B reads 9.810: window 0, whose key is still empty (A's two
/// went to window 1), admits two. Four admits within 10 µs; the rule allows
/// N + 1 + N·L/W = 3.2: one definite violation (N − 1 in general).
#[test]
fn sliding_counter_on_redis_keys_with_replica_clocks_within_the_slack_is_not_a_violation() {
    let policy = Policy::SlidingCounter {
        limit: 2,
        window_us: 10_000,
    };
    for plus_one in [false, true] {
        let mut l = CounterKeys {
            limit: 2,
            w: 10_000,
            plus_one,
            keys: Keys::default(),
        };
        for reading in [10_200, 10_200, 9_810, 9_810] {
            assert!(l.decide(reading).admitted);
        }
    }
    let trace = [
        obs(9_800, 9_800, Decided::Admitted),
        obs(9_800, 9_800, Decided::Admitted),
        obs(9_810, 9_810, Decided::Admitted),
        obs(9_810, 9_810, Decided::Admitted),
    ];
    let v = verify_key(&policy, &trace, &Options::default());
    assert_eq!(v.definite_violations, 0, "{v:?}");
}

// ---------------------------------------------------------------------------
// Mutants: limiters that admit too much must be caught, for a stated share
// of their excess (admitted by the mutant − admitted by the correct limiter
// on the same schedule, every request decided at the same instant).
// ---------------------------------------------------------------------------

fn req_at(sent: i64, done: i64, at: i64) -> Req {
    Req {
        sent,
        done,
        answered: true,
        plan: Plan::At(at),
        decider: 0,
        lag: 0,
        max_stale: 0,
    }
}

/// A request sent at `sent`, lasting up to `dmax`, decided anywhere in it.
fn random_req(rng: &mut SmallRng, sent: i64, dmax: i64) -> Req {
    let done = sent + rng.random_range(0..=dmax);
    req_at(sent, done, rng.random_range(sent..=done))
}

struct Mutation {
    excess: i64,
    mutant: Judged,
}

/// Judges the correct limiter (must be clean) and the mutant on `reqs`.
fn mutate(
    what: &str,
    policy: &Policy,
    correct: &Sim,
    mutant: &Sim,
    clock: &Clock,
    reqs: &[Req],
    opts: &Options,
) -> Mutation {
    let good = simulate(correct, clock, &[], reqs);
    let j = judge_run(&good, policy, opts);
    assert!(
        j.broken() == [false; 3],
        "{what}: the correct limiter must be clean: {:?} {:?}",
        j.v,
        j.header
    );
    let bad = simulate(mutant, clock, &[], reqs);
    Mutation {
        excess: bad.admitted() as i64 - good.admitted() as i64,
        mutant: judge_run(&bad, policy, opts),
    }
}

fn assert_caught(what: &str, m: &Mutation, at_least: i64) {
    let definite = m.mutant.v.definite_violations as i64;
    assert!(
        definite >= at_least,
        "{what}: excess {} but only {definite} definite (want ≥ {at_least}): {:?}",
        m.excess,
        m.mutant.v
    );
}

fn pair(sim: Sim) -> Sim {
    Sim::Replicas(vec![sim.clone(), sim])
}

/// Isolated bursts: `bursts` of `size(rng)` requests each, sent within
/// `sigma`, starts at least `gap` apart.
fn bursts(
    rng: &mut SmallRng,
    bursts: usize,
    size: impl Fn(&mut SmallRng) -> usize,
    sigma: i64,
    dmax: i64,
    gap: i64,
) -> Vec<Req> {
    let mut t = rng.random_range(0..=gap);
    let mut out = Vec::new();
    for _ in 0..bursts {
        for _ in 0..size(rng) {
            let sent = t + rng.random_range(0..=sigma);
            out.push(random_req(rng, sent, dmax));
        }
        t += gap + rng.random_range(0..=gap / 2);
    }
    out
}

/// Sliding log with N + k, and two independent replicas of N. Isolated
/// bursts, each within less than W (spread + interval + slack ≤ W/5) and W
/// apart: the correct log admits exactly N per burst, every burst is one set
/// the rule bounds by N, so definite ≥ Σ (admits − N) = the excess: share
/// 100 %.
#[test]
fn mutant_sliding_logs_are_caught() {
    for seed in 0..400 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let n = rng.random_range(1..=6u64);
        let k = rng.random_range(1..=3u64);
        let w = rng.random_range(2_000..=40_000i64);
        let slack = rng.random_range(1..=w / 20);
        let dmax = rng.random_range(0..=w / 20);
        let sigma = rng.random_range(0..=w / 10);
        let count_bursts = rng.random_range(2..=8);
        let reqs = bursts(
            &mut rng,
            count_bursts,
            |r| r.random_range((n + k) as usize..=(2 * n + k + 3) as usize),
            sigma,
            dmax,
            w + sigma + dmax + slack + 1,
        );
        let policy = Policy::SlidingLog {
            limit: n,
            window_us: w as u64,
        };
        let opts = Options {
            slack_us: slack,
            ..Options::default()
        };
        let clock = Clock::exact(1_790_000_000_000_000 + seed as i64 * 7_919);
        let correct = Sim::Log(SlidingLog::new(n, w, false));
        for (name, mutant) in [
            ("log N+k", Sim::Log(SlidingLog::new(n + k, w, false))),
            ("zset N+k", Sim::Log(SlidingLog::new(n + k, w, true))),
            ("two replicas", pair(correct.clone())),
        ] {
            let what = format!("seed {seed} {name}: N {n} k {k} W {w} slack {slack}");
            let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
            assert!(
                m.excess > 0,
                "{what}: the schedule must let the mutant over-admit"
            );
            assert_caught(&what, &m, m.excess);
        }
    }
}

/// Load only inside aligned windows' interiors (every interval, widened by
/// slack and twice the epoch uncertainty, inside one window): every admit is a sure
/// admit of its window. The correct limiter is the greedy "admit while the
/// window allows", which keeps the most any feasible set can; the mutant's
/// admits are a subset of the requests, so at least (mutant − correct) of
/// them must go: definite ≥ excess, share 100 %. Fixed windows (S = 1) and
/// segmented ones, mutants with N + k and two independent replicas.
#[test]
fn mutant_windows_on_a_known_grid_are_caught() {
    for seed in 0..400 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let n = rng.random_range(1..=6u64);
        let k = rng.random_range(1..=3u64);
        let s = if seed % 2 == 0 {
            1
        } else {
            rng.random_range(2..=5i64)
        };
        let seg = rng.random_range(2_000..=20_000i64);
        let slack = rng.random_range(1..=seg / 20);
        let uncertainty = if rng.random_bool(0.5) {
            rng.random_range(1..=seg / 20)
        } else {
            0
        };
        let dmax = rng.random_range(0..=seg / 20);
        let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000i64);
        // The verifier widens each interval by slack + uncertainty around
        // its own idea of the edges, which is itself off by the uncertainty.
        let margin = slack + 2 * uncertainty + 1;
        let first = (epoch.div_euclid(seg) + 1) * seg - epoch;
        let mut reqs = Vec::new();
        for j in 0..rng.random_range(3..=16i64) {
            let b = first + j * seg;
            for _ in 0..rng.random_range(0..=2 * (n + k) as usize) {
                let sent = rng.random_range(b + margin..=b + seg - margin - dmax);
                reqs.push(random_req(&mut rng, sent, dmax));
            }
        }
        let (policy, correct, plus_k) = if s == 1 {
            (
                Policy::FixedWindow {
                    limit: n,
                    window_us: seg as u64,
                },
                Sim::Fixed(FixedWindow::new(n, seg, FixedKind::Epoch)),
                Sim::Fixed(FixedWindow::new(n + k, seg, FixedKind::Keyed)),
            )
        } else {
            (
                Policy::SlidingWindow {
                    limit: n,
                    window_us: (s * seg) as u64,
                    segments: s as u64,
                },
                Sim::Seg(Segmented::new(n, seg, s)),
                Sim::Seg(Segmented::new(n + k, seg, s)),
            )
        };
        let mut opts = Options {
            slack_us: slack,
            epoch_offset_us: epoch + rng.random_range(-uncertainty..=uncertainty),
            aligned: true,
            ..Options::default()
        };
        opts.epoch_uncertainty_us = uncertainty;
        let clock = Clock::exact(epoch);
        for (name, mutant) in [("N+k", plus_k), ("two replicas", pair(correct.clone()))] {
            let what = format!("seed {seed} {name}: N {n} k {k} S {s} seg {seg} slack {slack}");
            let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
            assert_caught(&what, &m, m.excess);
        }
    }
}

/// Alignment unknown to the verifier (the phase is hidden): the attack puts
/// a burst on every other window edge, at least N + k just before it and as
/// many just after, within 2σ + interval + slack < W. The correct limiter
/// admits exactly 2N per pair (both windows fresh), and a span shorter than
/// W may hold 2N: definite ≥ Σ (admits − 2N) = the excess, share 100 %.
#[test]
fn mutant_fixed_windows_of_unknown_alignment_are_caught_at_the_edges() {
    for seed in 0..400 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let n = rng.random_range(1..=6u64);
        let k = rng.random_range(1..=3u64);
        let w = rng.random_range(2_000..=40_000i64);
        let slack = rng.random_range(1..=w / 20);
        let dmax = rng.random_range(0..=w / 20);
        let sigma = rng.random_range(dmax + 1..=w / 8);
        let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000i64);
        let first = (epoch.div_euclid(w) + 1) * w - epoch;
        let size = |r: &mut SmallRng| r.random_range((n + k) as usize..=(2 * n + k + 3) as usize);
        let mut reqs = Vec::new();
        for j in 0..rng.random_range(1..=6i64) {
            let b = first + (2 * j + 1) * w;
            for _ in 0..size(&mut rng) {
                let sent = rng.random_range(b - sigma..b - dmax);
                reqs.push(random_req(&mut rng, sent, dmax));
            }
            for _ in 0..size(&mut rng) {
                let sent = rng.random_range(b..=b + sigma);
                reqs.push(random_req(&mut rng, sent, dmax));
            }
        }
        let policy = Policy::FixedWindow {
            limit: n,
            window_us: w as u64,
        };
        let opts = Options {
            slack_us: slack,
            ..Options::default()
        };
        let clock = Clock::exact(epoch);
        let correct = Sim::Fixed(FixedWindow::new(n, w, FixedKind::Epoch));
        for (name, mutant) in [
            (
                "N+k",
                Sim::Fixed(FixedWindow::new(n + k, w, FixedKind::Epoch)),
            ),
            ("two replicas", pair(correct.clone())),
        ] {
            let what = format!("seed {seed} {name}: N {n} k {k} W {w} slack {slack}");
            let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
            assert!(
                m.excess > 0,
                "{what}: the schedule must let the mutant over-admit"
            );
            assert_caught(&what, &m, m.excess);
        }
    }
}

/// Alignment unknown, steady saturating load for T windows (from one edge
/// to another, every window offered more than the mutant admits): the
/// correct limiter admits N·T, the mutant (N + k)·T. A span L meets at most
/// L/W + 2 windows, so the verifier may allow 2N + N·L/W; over the whole
/// trace L ≤ T·W + interval + slack (< T·W + W/N), so definite ≥ k·T − 2N −
/// 1, a share of at least (kT − 2N − 1)/(kT) (T ≥ 10). The best sound bound
/// would be N·(T + 1) for a span shorter than T·W: (kT − N)/(kT).
#[test]
fn mutant_fixed_windows_of_unknown_alignment_are_caught_over_time() {
    for seed in 0..200 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let n = rng.random_range(1..=6u64);
        let k = rng.random_range(1..=n);
        let w = rng.random_range(2_000..=40_000i64);
        let slack = rng.random_range(1..=w / (20 * n as i64));
        let dmax = rng.random_range(0..=w / (20 * n as i64));
        let t = rng.random_range(10..=30i64);
        let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000i64);
        let first = (epoch.div_euclid(w) + 1) * w - epoch;
        // Sent every g, decided before the window ends: 3(N + k) per window.
        let g = w / (3 * (n + k) as i64);
        let mut reqs = Vec::new();
        let mut sent = first;
        while sent + dmax < first + t * w {
            reqs.push(random_req(&mut rng, sent, dmax));
            sent += g;
        }
        let policy = Policy::FixedWindow {
            limit: n,
            window_us: w as u64,
        };
        let opts = Options {
            slack_us: slack,
            ..Options::default()
        };
        let clock = Clock::exact(epoch);
        let correct = Sim::Fixed(FixedWindow::new(n, w, FixedKind::Epoch));
        let mutant = Sim::Fixed(FixedWindow::new(n + k, w, FixedKind::Epoch));
        let what = format!("seed {seed}: N {n} k {k} W {w} T {t} slack {slack}");
        let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
        assert_eq!(m.excess, (k as i64) * t, "{what}");
        assert_caught(&what, &m, m.excess - 2 * n as i64 - 1);
    }
}

/// Segmented windows (S ≥ 2), alignment unknown: isolated bursts within
/// one segment's length (so within W·(S−1)/S), W + a segment apart: the
/// correct limiter admits exactly N per burst and the rule bounds each
/// burst by N: definite ≥ the excess, share 100 %. Mutants: N + k on the
/// epoch grid, N + k on a late ASP.NET heartbeat, two replicas.
#[test]
fn mutant_segmented_windows_of_unknown_alignment_are_caught() {
    for seed in 0..400 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let n = rng.random_range(1..=6u64);
        let k = rng.random_range(1..=3u64);
        let s = rng.random_range(2..=5i64);
        let seg = rng.random_range(1_000..=10_000i64);
        let slack = rng.random_range(1..=seg / 4);
        let dmax = rng.random_range(0..=seg / 4);
        let sigma = rng.random_range(0..=seg / 4);
        let tick = rng.random_range(1..=seg);
        let count_bursts = rng.random_range(2..=8);
        let reqs = bursts(
            &mut rng,
            count_bursts,
            |r| r.random_range((n + k) as usize..=(2 * n + k + 3) as usize),
            sigma,
            dmax,
            (s + 1) * (seg + tick) + sigma + dmax + slack,
        );
        let policy = Policy::SlidingWindow {
            limit: n,
            window_us: (s * seg) as u64,
            segments: s as u64,
        };
        let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000i64);
        let opts = Options {
            slack_us: slack,
            lateness_us: tick,
            one_clock: true,
            ..Options::default()
        };
        let clock = Clock::exact(epoch);
        let asp = |limit| {
            Sim::AspSeg(AspSegmented {
                limit,
                hb: Heartbeat {
                    period: seg,
                    tick,
                    origin: epoch - 1_000_000,
                    last: epoch - 1_000_000,
                    ties_late: false,
                },
                ring: vec![0; s as usize].into(),
            })
        };
        let correct = Sim::Seg(Segmented::new(n, seg, s));
        for (name, correct, mutant) in [
            (
                "N+k",
                correct.clone(),
                Sim::Seg(Segmented::new(n + k, seg, s)),
            ),
            ("aspnet N+k", asp(n), asp(n + k)),
            ("two replicas", correct.clone(), pair(correct.clone())),
        ] {
            let what = format!("seed {seed} {name}: N {n} k {k} S {s} seg {seg} slack {slack}");
            let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
            assert!(
                m.excess > 0,
                "{what}: the schedule must let the mutant over-admit"
            );
            assert_caught(&what, &m, m.excess);
        }
    }
}

/// Sliding counters (both variants, judged with and without the grid):
/// isolated bursts within L < W/N (so N·L/W < 1) and 2W apart (both
/// windows empty at each burst). The rule allows N + 1 within such a span
/// (the estimate < N variant may admit N + 1 across an edge), the correct
/// limiter admits N or N + 1, so definite ≥ excess − 1 per burst: with the
/// N + k mutant (k ≥ 2) a share of at least (k − 1)/k.
#[test]
fn mutant_sliding_counters_are_caught() {
    for seed in 0..400 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let n = rng.random_range(1..=6u64);
        let k = rng.random_range(2..=4u64);
        let w = rng.random_range(5_000..=40_000i64);
        let third = w / (3 * n as i64 + 3);
        let slack = rng.random_range(1..=third);
        let dmax = rng.random_range(0..=third);
        let sigma = rng.random_range(0..=third);
        let count = rng.random_range(2..=8);
        let reqs = bursts(
            &mut rng,
            count,
            |r| r.random_range((n + k) as usize..=(2 * n + k + 3) as usize),
            sigma,
            dmax,
            2 * w + sigma + dmax + 1,
        );
        let policy = Policy::SlidingCounter {
            limit: n,
            window_us: w as u64,
        };
        let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000i64);
        let opts = Options {
            slack_us: slack,
            epoch_offset_us: epoch,
            aligned: rng.random_bool(0.5),
            one_clock: true,
            ..Options::default()
        };
        let clock = Clock::exact(epoch);
        for plus_one in [false, true] {
            let correct = Sim::Counter(SlidingCounter::new(n, w, plus_one));
            for (name, mutant) in [
                ("N+k", Sim::Counter(SlidingCounter::new(n + k, w, plus_one))),
                ("two replicas", pair(correct.clone())),
            ] {
                let what = format!(
                    "seed {seed} {name} plus_one {plus_one}: N {n} k {k} W {w} slack {slack} \
                     aligned {}",
                    opts.aligned
                );
                let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
                assert!(
                    m.excess > 0,
                    "{what}: the schedule must let the mutant over-admit"
                );
                assert_caught(&what, &m, m.excess - count as i64);
            }
        }
    }
}

fn bucket_policy(gcra: bool, cap: u64, count: u64, per: i64) -> Policy {
    let rate = Rate {
        count,
        per_us: per as u64,
    };
    if gcra {
        Policy::Gcra { rate, burst: cap }
    } else {
        Policy::TokenBucket {
            capacity: cap,
            refill: rate,
        }
    }
}

fn bucket_sim(gcra: bool, cap: u64, count: u64, per: i64) -> Sim {
    if gcra {
        Sim::Gcra(Gcra::new(cap, count, per))
    } else {
        Sim::Bucket(TokenBucket::new(cap, count, per))
    }
}

/// Token buckets and GCRA with capacity B + k, and two replicas: isolated
/// bursts within L with L·rate < 1, each after both have refilled
/// completely. The correct one admits exactly B per burst (the refill
/// during it is under a token) and the rule allows ⌊B + L·rate⌋ = B:
/// definite ≥ the excess, share 100 %.
#[test]
fn mutant_bucket_capacities_are_caught() {
    for seed in 0..400 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let gcra = seed % 2 == 1;
        let cap = rng.random_range(1..=6u64);
        let k = rng.random_range(1..=3u64);
        let count = rng.random_range(1..=3u64);
        let per = rng.random_range(2_000..=20_000i64);
        let interval = per / count as i64;
        let slack = rng.random_range(1..=interval / 4);
        let dmax = rng.random_range(0..=interval / 4);
        let sigma = rng.random_range(0..=interval / 4);
        let count_bursts = rng.random_range(2..=8);
        let reqs = bursts(
            &mut rng,
            count_bursts,
            |r| r.random_range((cap + k) as usize..=(2 * cap + k + 3) as usize),
            sigma,
            dmax,
            2 * (cap + k) as i64 * interval + sigma + dmax + slack,
        );
        let policy = bucket_policy(gcra, cap, count, per);
        let opts = Options {
            slack_us: slack,
            ..Options::default()
        };
        let clock = Clock::exact(1_790_000_000_000_000 + seed as i64);
        let correct = bucket_sim(gcra, cap, count, per);
        for (name, mutant) in [
            ("B+k", bucket_sim(gcra, cap + k, count, per)),
            ("two replicas", pair(correct.clone())),
        ] {
            let what = format!("seed {seed} gcra {gcra} {name}: B {cap} k {k} rate {count}/{per}");
            let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
            assert!(
                m.excess > 0,
                "{what}: the schedule must let the mutant over-admit"
            );
            assert_caught(&what, &m, m.excess);
        }
    }
}

/// Token buckets and GCRA refilled twice too fast, and two replicas, under
/// steady saturating load (a request every g ≤ a quarter token interval)
/// for D ≥ 20 token intervals. With B ≥ 2 the correct bucket never
/// overflows, so over its decisions' span D' it admits at least
/// B + D'·rate − 1. The whole trace is one set the rule bounds by
/// B + (D' + 2·dmax + slack)·rate, with dmax and slack at most a quarter
/// token interval, so (2·dmax + slack)·rate < 1: definite ≥ excess − 1, a
/// share of at least 1 − 1/excess (≥ 95 % here, excess ≥ 20).
#[test]
fn mutant_bucket_rates_are_caught() {
    for seed in 0..300 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let gcra = seed % 2 == 1;
        let cap = rng.random_range(2..=6u64);
        let count = rng.random_range(1..=3u64);
        let per = rng.random_range(2_000..=20_000i64);
        let interval = per / count as i64;
        let slack = rng.random_range(1..=interval / 4);
        let dmax = rng.random_range(0..=interval / 4);
        let g = rng.random_range(interval / 16..=interval / 4);
        let d = rng.random_range(20..=60) * interval;
        let mut reqs = Vec::new();
        let mut sent = rng.random_range(0..=interval);
        let end = sent + d;
        while sent < end {
            reqs.push(random_req(&mut rng, sent, dmax));
            sent += g;
        }
        let policy = bucket_policy(gcra, cap, count, per);
        let opts = Options {
            slack_us: slack,
            ..Options::default()
        };
        let clock = Clock::exact(1_790_000_000_000_000 + seed as i64);
        let correct = bucket_sim(gcra, cap, count, per);
        for (name, mutant) in [
            ("2x rate", bucket_sim(gcra, cap, 2 * count, per)),
            ("two replicas", pair(correct.clone())),
        ] {
            let what = format!("seed {seed} gcra {gcra} {name}: B {cap} rate {count}/{per}");
            let m = mutate(&what, &policy, &correct, &mutant, &clock, &reqs, &opts);
            assert!(m.excess >= 20, "{what}: excess {}", m.excess);
            assert_caught(&what, &m, m.excess - 1);
        }
    }
}

/// ASP.NET's chunked token bucket with capacity B + k (k > count), on an
/// exact timer or a late heartbeat: isolated bursts within one period,
/// after a complete refill. A closed span of at most one period may see one
/// chunk, so the rule allows B + count per burst; the correct bucket admits
/// B, or B + count when a chunk lands inside the burst (and so does the
/// mutant, plus k): definite ≥ excess − count per burst, a share of at
/// least (k − count)/k.
#[test]
fn mutant_chunked_buckets_are_caught() {
    for seed in 0..400 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let cap = rng.random_range(1..=6u64);
        let count = rng.random_range(1..=3u64);
        let k = rng.random_range(count + 1..=count + 3);
        let per = rng.random_range(2_000..=20_000i64);
        let tick = if rng.random_bool(0.5) {
            0
        } else {
            rng.random_range(1..=per)
        };
        let slack = rng.random_range(1..=per / 4);
        let dmax = rng.random_range(0..=per / 4);
        let sigma = rng.random_range(0..=per / 4);
        let bursts_n = rng.random_range(2..=8);
        let reqs = bursts(
            &mut rng,
            bursts_n,
            |r| r.random_range((cap + k) as usize..=(2 * cap + k + 3) as usize),
            sigma,
            dmax,
            ((cap + k) / count + 2) as i64 * (per + tick) + sigma + dmax + slack,
        );
        let policy = bucket_policy(false, cap, count, per);
        let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000i64);
        let opts = Options {
            slack_us: slack,
            lateness_us: tick,
            chunked_refill: true,
            ..Options::default()
        };
        let clock = Clock::exact(epoch);
        let origin = epoch - rng.random_range(0..=per);
        let asp = |cap| {
            Sim::AspBucket(AspBucket {
                cap,
                count,
                hb: Heartbeat {
                    period: per,
                    tick,
                    origin,
                    last: origin,
                    ties_late: false,
                },
                tokens: cap,
            })
        };
        for (name, mutant) in [("B+k", asp(cap + k)), ("two replicas", pair(asp(cap)))] {
            let what = format!("seed {seed} {name}: B {cap} k {k} rate {count}/{per} tick {tick}");
            let m = mutate(&what, &policy, &asp(cap), &mutant, &clock, &reqs, &opts);
            assert!(
                m.excess > 0,
                "{what}: the schedule must let the mutant over-admit"
            );
            assert_caught(&what, &m, m.excess - (count as i64) * bursts_n as i64);
        }
    }
}

/// A limiter that advertises one more than it has left, under sequential
/// requests more than the slack apart: every reject right after an admit
/// that truly left nothing is a contradiction (nothing else could have
/// used the promised request). Asserted: contradicted ≥ those pairs, share
/// 100 %, for each algorithm.
#[test]
fn overstated_remaining_is_contradicted() {
    for seed in 0..300 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let n = rng.random_range(1..=6u64);
        let w = rng.random_range(5_000..=40_000i64);
        let slack = rng.random_range(1..=w / 50);
        let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000i64);
        let (policy, correct) = match seed % 4 {
            0 => (
                Policy::SlidingLog {
                    limit: n,
                    window_us: w as u64,
                },
                Sim::Log(SlidingLog::new(n, w, false)),
            ),
            1 => (
                Policy::FixedWindow {
                    limit: n,
                    window_us: w as u64,
                },
                Sim::Fixed(FixedWindow::new(n, w, FixedKind::Epoch)),
            ),
            2 => (bucket_policy(false, n, 1, w), bucket_sim(false, n, 1, w)),
            _ => (bucket_policy(true, n, 1, w), bucket_sim(true, n, 1, w)),
        };
        let mut reqs = Vec::new();
        let mut sent = 0;
        for _ in 0..rng.random_range(20..=100) {
            let r = random_req(&mut rng, sent, w / 50);
            sent = r.done + slack + 1 + rng.random_range(0..=w / (4 * n as i64));
            reqs.push(r);
        }
        let opts = Options {
            slack_us: slack,
            ..Options::default()
        };
        let clock = Clock::exact(epoch);
        let truth = simulate(&correct, &clock, &[], &reqs);
        let pairs = (1..reqs.len())
            .filter(|&i| {
                let (a, b) = (truth.decisions[i - 1].unwrap(), truth.decisions[i].unwrap());
                a.answer.admitted && a.answer.remaining == 0 && !b.answer.admitted
            })
            .count() as u64;
        let lied = simulate(&Sim::Liar(Box::new(correct.clone())), &clock, &[], &reqs);
        let j = judge_run(&lied, &policy, &opts);
        assert_eq!(
            judge_run(&truth, &policy, &opts).header.contradicted,
            0,
            "seed {seed}: the honest limiter"
        );
        assert!(
            j.header.contradicted >= pairs,
            "seed {seed} {policy:?}: {pairs} pairs, {:?}",
            j.header
        );
        assert!(
            pairs > 0 || seed % 4 == 3,
            "seed {seed}: the load must press"
        );
    }
}
