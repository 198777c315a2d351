//! Simulated correct limiters, written from the algorithms' textbook semantics,
//! apart from the verifier and from `reference_api` (a shared bug would
//! cancel itself out); `now` is the deciding replica's wall clock in µs.

mod aspnet;
mod attempts;
mod buckets;
mod keys;
mod windows;

use super::*;
pub(crate) use aspnet::*;
pub(crate) use attempts::*;
pub(crate) use buckets::*;
pub(crate) use keys::*;
pub(crate) use windows::*;

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

/// Any of the limiters, replicas of them, and a liar.
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
    Chunks(ChunkBucket),
    AspFixed(AspFixed),
    AspSeg(AspSegmented),
    AspBucket(AspBucket),
    AspFill(AspFill),
    /// Counting every attempt, denied ones too.
    Attempts(Attempts),
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
            Sim::Chunks(l) => l.decide(now),
            Sim::AspFixed(l) => l.decide(now),
            Sim::AspSeg(l) => l.decide(now),
            Sim::AspBucket(l) => l.decide(now),
            Sim::AspFill(l) => l.decide(now),
            Sim::Attempts(l) => l.decide(now),
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
            Sim::Bucket(l) => Sim::Bucket(TokenBucket {
                clamped: l.clamped,
                ..TokenBucket::new(f(l.cap)?, l.count, l.per)
            }),
            Sim::FloatBucket(l) => Sim::FloatBucket(FloatBucket {
                cap: f(l.cap as u64)? as f64,
                tokens: f(l.cap as u64)? as f64,
                last: None,
                ..l.clone()
            }),
            Sim::Gcra(l) => Sim::Gcra(Gcra::new(f(l.burst)?, l.count, l.per)),
            // One token less is never provably wrong of a chunked bucket
            // (its bound gives up a chunk): fewer is half the refill.
            Sim::Chunks(l) if delta < 0 => {
                Sim::Chunks(ChunkBucket::new(l.cap, l.chunk, 2 * l.period, l.epoch))
            }
            Sim::Chunks(l) => Sim::Chunks(ChunkBucket::new(f(l.cap)?, l.chunk, l.period, l.epoch)),
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
            Sim::Attempts(l) => Sim::Attempts(Attempts::new(l.kind, f(l.limit)?, l.w)),
            // Its rejects are judged with a tick's refill given away: fewer
            // is half the refill; more is a token more of capacity (and so
            // of what it banks).
            Sim::AspFill(l) if delta < 0 => Sim::AspFill(AspFill {
                per_token: 2.0 * l.per_token,
                ..l.clone()
            }),
            Sim::AspFill(l) => Sim::AspFill(AspFill {
                cap: f(l.cap as u64)? as f64,
                tokens: f(l.cap as u64)? as f64,
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
