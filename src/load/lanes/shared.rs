//! What every lane of one load shares (its targets, template, schedule's
//! shape, counters), and what a lane reports when its share is done.

use crate::events::Batch;
use crate::load::connection::Dedicated;
use crate::load::pick::{Fanout, KeyDistribution};
use crate::load::plan::{Counters, Segment};
use crate::load::request::Template;
use crate::load::retry::Retry;
use crate::load::schedule::Shape;
use hyper::Uri;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// What every lane of one load shares (read-only but for the counters).
pub(crate) struct Shared {
    pub targets: Vec<Uri>,
    pub template: Template,
    pub shape: Shape,
    pub duration: Duration,
    pub seed: u64,
    pub epoch_offset_us: i64,
    pub keys: u32,
    /// Forged keys per principal (`[load] spoof`; 0 or 1: none).
    pub forged: u32,
    pub key_distribution: KeyDistribution,
    pub fanout: Fanout,
    pub timeout: Duration,
    /// Trace time 0.
    pub start: Instant,
    /// The run ends on time: a request still waiting for a free connection
    /// then is not sent, and a retry due after it is given up.
    pub deadline: Instant,
    pub stop: Arc<AtomicBool>,
    pub events: mpsc::Sender<Batch>,
    pub counters: Arc<Counters>,
    pub retry: Option<Retry>,
    pub lanes: usize,
    /// This machine's share of the schedule, which its lanes split.
    pub segment: Segment,
    /// Which of its requests a lane has taken.
    pub claims: Claims,
    /// For `https://` targets.
    pub tls: Option<crate::load::tls::Client>,
    /// Per key index, the address its connections come from
    /// (`[load] key = { source_ip }`); empty: the system picks. Each
    /// (target, key) is then a route with connections of its own.
    pub binds: Vec<std::net::IpAddr>,
    /// Requests pending (queued or in flight) per lane, and connections
    /// per lane, at most.
    pub connections: usize,
}

impl Shared {
    /// Connections are kept apart per route: per target, or per (target,
    /// key) when keys have addresses of their own.
    pub(crate) fn routes(&self) -> usize {
        self.targets.len() * self.binds.len().max(1)
    }

    pub(crate) fn route(&self, target: usize, key: usize) -> usize {
        match self.binds.len() {
            0 => target,
            per => target * per + key,
        }
    }

    /// A connection for `route`, from its key's address when it has one.
    pub(crate) fn connection(&self, route: usize) -> Dedicated {
        let per = self.binds.len().max(1);
        Dedicated::new(self.targets[route / per].clone(), self.tls.as_ref())
            .from(self.binds.get(route % per).copied())
    }

    /// `route`'s HTTP/2 connection, for a lane's tasks to share.
    pub(crate) fn link(&self, route: usize) -> crate::load::h2::Link {
        let per = self.binds.len().max(1);
        crate::load::h2::Link::new(
            self.targets[route / per].clone(),
            self.tls.as_ref(),
            self.binds.get(route % per).copied(),
        )
    }
}

/// Which requests of the schedule the lanes have taken. Every lane walks
/// the whole schedule and sends a request when it is the first to claim
/// it at its due time, so a lane held off its core (another thread on it,
/// a page fault, a long answer to parse) leaves the requests falling due
/// meanwhile to the others instead of sending them late: with a fixed
/// share per lane, one lane's 20 ms off a core was 20 ms of lag for half
/// the requests (BENCHMARKS.md, "The open loop's tail"). Requests are
/// claimed in schedule order: `next` is one past the last claimed.
#[derive(Default)]
pub(crate) struct Claims {
    next: AtomicUsize,
}

impl Claims {
    /// Whether request `index` was claimed (or the claims closed).
    pub(crate) fn taken(&self, index: usize) -> bool {
        self.next.load(Ordering::Acquire) > index
    }

    /// Claims request `index` (with every earlier one not yet taken, which
    /// the caller has passed over: not this machine's); false when another
    /// lane took it or a later one first.
    pub(crate) fn claim(&self, index: usize) -> bool {
        let mut next = self.next.load(Ordering::Acquire);
        loop {
            if next > index {
                return false;
            }
            match self.next.compare_exchange_weak(
                next,
                index + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => next = now,
            }
        }
    }

    /// No request is claimed from now on; the first one not taken (past
    /// the schedule's end when another lane closed the claims first), for
    /// the caller to count the rest as not sent.
    pub(crate) fn close(&self) -> usize {
        self.next.swap(usize::MAX, Ordering::AcqRel)
    }

    pub(crate) fn closed(&self) -> bool {
        self.next.load(Ordering::Acquire) == usize::MAX
    }
}

pub(crate) struct Outcome {
    /// The requests the lane sent, and the rest of the schedule when it
    /// stopped first.
    pub scheduled: u64,
    /// Of those, what was never handed out, by why.
    pub not_sent: crate::store::records::NotSent,
    pub interrupted: bool,
    /// When the lane's pacer finished, from trace time 0.
    pub paced: Duration,
}

#[cfg(test)]
mod tests {
    use super::Claims;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn one_lane_claims_in_order_and_closing_hands_back_the_rest() {
        let c = Claims::default();
        assert!(!c.taken(0));
        assert!(c.claim(0));
        assert!(c.taken(0) && !c.claim(0));
        // 1 and 2 were not this machine's: passed over.
        assert!(c.claim(3));
        assert!(c.taken(2) && !c.claim(2));
        assert!(!c.closed());
        assert_eq!(c.close(), 4);
        assert!(c.closed() && c.taken(4) && !c.claim(10));
        // A second lane closing finds nothing left to count.
        assert_eq!(c.close(), usize::MAX);
    }

    /// Lanes racing over the same schedule (every third request not this
    /// machine's), one of them stopping part way: every request is sent
    /// by exactly one lane or counted once as not sent.
    #[test]
    fn racing_lanes_take_each_request_exactly_once() {
        const N: usize = 200_000;
        for stop_at in [None, Some(N / 3)] {
            let claims = Claims::default();
            let sent: Vec<AtomicU64> = (0..N).map(|_| AtomicU64::new(0)).collect();
            let rest = AtomicU64::new(0);
            std::thread::scope(|scope| {
                for lane in 0..4usize {
                    let (claims, sent, rest) = (&claims, &sent, &rest);
                    scope.spawn(move || {
                        for i in (0..N).filter(|i| i % 3 != 1) {
                            if claims.closed() {
                                return;
                            }
                            if lane == 0 && Some(i) == stop_at {
                                let from = claims.close();
                                let left = (i..N).filter(|&j| j >= from && j % 3 != 1);
                                rest.fetch_add(left.count() as u64, Ordering::Relaxed);
                                return;
                            }
                            if !claims.taken(i) && claims.claim(i) {
                                sent[i].fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    });
                }
            });
            let sent: Vec<u64> = sent.iter().map(|s| s.load(Ordering::Relaxed)).collect();
            assert!(sent.iter().all(|&n| n <= 1));
            assert!(sent.iter().enumerate().all(|(i, &n)| i % 3 != 1 || n == 0));
            let total = sent.iter().sum::<u64>() + rest.load(Ordering::Relaxed);
            assert_eq!(total as usize, (0..N).filter(|i| i % 3 != 1).count());
            if stop_at.is_none() {
                assert_eq!(rest.load(Ordering::Relaxed), 0);
            }
        }
    }
}
