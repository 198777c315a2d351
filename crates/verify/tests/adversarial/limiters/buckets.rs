//! Token buckets (exact and in floating point) and GCRA.

use super::*;

/// A bucket of `cap` tokens refilled continuously at `count` per `per` µs,
/// full at the start; tokens kept exactly, scaled by `per`.
#[derive(Clone, Debug)]
pub(crate) struct TokenBucket {
    pub(crate) cap: u64,
    pub(crate) count: u64,
    pub(crate) per: i64,
    pub(crate) tokens: i128,
    pub(crate) last: Option<i64>,
    /// Time never runs backwards (`last = max(last, now)`); unclamped, a
    /// reading behind `last` refills negatively, as a GCRA's TAT does (a
    /// script given the caller's time, `tokens += (now − last)·rate`).
    pub(crate) clamped: bool,
}

impl TokenBucket {
    pub(crate) fn new(cap: u64, count: u64, per: i64) -> Self {
        TokenBucket {
            cap,
            count,
            per,
            tokens: cap as i128 * per as i128,
            last: None,
            clamped: true,
        }
    }

    pub(crate) fn unclamped(cap: u64, count: u64, per: i64) -> Self {
        TokenBucket {
            clamped: false,
            ..TokenBucket::new(cap, count, per)
        }
    }

    pub(crate) fn decide(&mut self, now: i64) -> Answer {
        let full = self.cap as i128 * self.per as i128;
        let last = self.last.unwrap_or(now);
        let t = if self.clamped { now.max(last) } else { now };
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

/// A bucket that adds `chunk` tokens at once per `period` of its clock,
/// full at the start. `epoch`: on the wall clock's multiples of the period
/// (Stripe's Redis bucket, as Spring Cloud Gateway runs it, reading whole
/// seconds); otherwise counted from its first hit, whole periods at a time
/// (bucket4j's `Refill.intervally`). Either way its last refill never
/// runs back, so a chunk is counted once whatever the order of readings.
#[derive(Clone, Debug)]
pub(crate) struct ChunkBucket {
    pub(crate) cap: u64,
    pub(crate) chunk: u64,
    pub(crate) period: i64,
    pub(crate) epoch: bool,
    pub(crate) tokens: u64,
    /// The last refill: a period's index (epoch) or a time (first hit).
    pub(crate) last: Option<i64>,
}

impl ChunkBucket {
    pub(crate) fn new(cap: u64, chunk: u64, period: i64, epoch: bool) -> Self {
        ChunkBucket {
            cap,
            chunk,
            period,
            epoch,
            tokens: cap,
            last: None,
        }
    }

    pub(crate) fn decide(&mut self, now: i64) -> Answer {
        let (mark, step) = if self.epoch {
            (now.div_euclid(self.period), 1)
        } else {
            (now, self.period)
        };
        let last = *self.last.get_or_insert(mark);
        let periods = (mark - last).div_euclid(step);
        if periods > 0 {
            self.tokens = (self.tokens + self.chunk.saturating_mul(periods as u64)).min(self.cap);
            self.last = Some(last + periods * step);
        }
        if self.tokens == 0 {
            return Answer::REJECT;
        }
        self.tokens -= 1;
        Answer::admit(self.tokens)
    }
}
