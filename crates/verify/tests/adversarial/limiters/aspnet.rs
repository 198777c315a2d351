//! ASP.NET Core's limiters as its heartbeat replenishes them: fixed
//! window, segmented window and token bucket (chunked, as before the
//! runtime's continuous fill, and as released).

use super::*;

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

/// Released ASP.NET Core's partitioned `TokenBucketRateLimiter`
/// (dotnet/runtime#74360, read from the public source): each heartbeat
/// tick adds `rate·(tick − last)` tokens, capped at `cap`, and moves
/// `last` — except while the bucket is full, when it returns early and
/// `last` stays, so what accrued while it was full comes at once at the
/// first tick after it empties. Tokens are a double; a permit takes one.
#[derive(Clone, Debug)]
pub(crate) struct AspFill {
    pub(crate) cap: f64,
    /// µs per token.
    pub(crate) per_token: f64,
    /// Ticks every `hb.tick` (its `period` is the tick: every tick counts).
    pub(crate) hb: Heartbeat,
    pub(crate) last: i64,
    pub(crate) tokens: f64,
}

impl AspFill {
    pub(crate) fn decide(&mut self, now: i64) -> Answer {
        loop {
            let at = self.hb.next();
            if at > now || (self.hb.ties_late && at == now) {
                break;
            }
            self.hb.last = at;
            if self.tokens < self.cap {
                let add = (at - self.last) as f64 / self.per_token;
                self.tokens = (self.tokens + add).min(self.cap);
                self.last = at;
            }
        }
        if self.tokens < 1.0 {
            return Answer::REJECT;
        }
        self.tokens -= 1.0;
        Answer::admit(self.tokens.floor() as u64)
    }
}
