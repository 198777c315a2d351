//! A lane's connection tasks: opened as its queues need them (the growth
//! rule) or ahead of a burst the scout sees, each taking the oldest queued
//! request of its target, sending it, and going on; closed when they sat
//! idle for `tuning::IDLE`, down to the floor.

use super::Lane;
use crate::events::{Event, BATCH};
use crate::load::connection::Dedicated;
use crate::load::lanes::job::{Job, Slot};
use crate::load::lanes::scout::{Ready, Scout};
use crate::load::lanes::tuning::{FLOOR, FREE_UP_TO, GROW_AFTER, IDLE, LOOKAHEAD};
use std::rc::Rc;
use std::sync::Arc;
use tokio::time::Instant;

impl Lane {
    /// Opens a connection to `target` when its queue needs one: freely up
    /// to [`FLOOR`]; past it at most one per [`GROW_AFTER`], up to the
    /// pool's cap (its coming rate times its service time, with headroom:
    /// `Pool::expect`), and only while the oldest queued request has
    /// waited that long — and, past [`FREE_UP_TO`], while the target's
    /// answers take about as long as they ever did. Answers that slow down
    /// mean requests queue somewhere — in a saturated target or in this
    /// lane short of CPU — and more connections would only deepen that
    /// queue (a few hundred of them cost a lane a third of its rate); a
    /// target that is just slow (the same 50 ms every time) gets as many as
    /// its rate needs.
    pub(super) fn grow(self: &Rc<Self>, target: usize) {
        if self.connections.get() >= self.shared.connections {
            return;
        }
        let now = Instant::now();
        let mut pools = self.open.borrow_mut();
        let pool = &mut pools[target];
        let needed = pool.open < FLOOR || {
            let oldest = self.queued.borrow()[target]
                .front()
                .map_or(0, |j| j.intended_us);
            let waited = (now - self.shared.start).as_micros() as u64;
            waited.saturating_sub(oldest) >= GROW_AFTER.as_micros() as u64
                && now - pool.grown >= GROW_AFTER
                && (pool.open < FREE_UP_TO || pool.unhurried())
                && pool.open < pool.cap
        };
        if needed {
            pool.open += 1;
            pool.grown = now;
            drop(pools);
            self.connections.set(self.connections.get() + 1);
            tokio::task::spawn_local(self.clone().connection(target));
        }
    }

    /// Opens, per target, a connection for each request the scout sees due
    /// soon that no open one is there for (requests queued or in flight
    /// hold theirs), so a burst is handed to parked connections at its due
    /// times instead of waiting for handshakes and for the growth rule.
    pub(super) fn prepare(self: &Rc<Self>, scout: &Scout) {
        for target in 0..scout.per_target.len() {
            self.open.borrow_mut()[target].expect(scout.coming(target), LOOKAHEAD);
            let ready = scout.ready(target);
            loop {
                let (have, want) = match ready {
                    Ready::Parked(want) => {
                        let idle = self.idle.borrow()[target].len();
                        (idle + self.open.borrow()[target].opening, want)
                    }
                    Ready::Open(want) => (self.open.borrow()[target].open, want),
                };
                if have >= want || self.connections.get() >= self.shared.connections {
                    break;
                }
                let mut pools = self.open.borrow_mut();
                pools[target].open += 1;
                pools[target].opening += 1;
                pools[target].grown = Instant::now();
                drop(pools);
                self.connections.set(self.connections.get() + 1);
                tokio::task::spawn_local(self.clone().connection_ready(target));
            }
        }
    }

    /// Closes the connections that sat idle for [`IDLE`], down to the
    /// floor per target: the longest parked first (the idle list is used
    /// from its end).
    pub(super) fn retire_idle(&self, now: std::time::Instant) {
        let Some(before) = now.checked_sub(IDLE) else {
            return;
        };
        let mut idle = self.idle.borrow_mut();
        let mut pools = self.open.borrow_mut();
        for (parked, pool) in idle.iter_mut().zip(pools.iter_mut()) {
            let spare = pool.open.saturating_sub(FLOOR);
            let stale = parked
                .iter()
                .take(spare)
                .take_while(|slot| slot.idle_since(before))
                .count();
            for slot in parked.drain(..stale) {
                slot.retire();
            }
            pool.open -= stale;
            self.connections.set(self.connections.get() - stale);
        }
    }

    /// A connection task's connection for `route`: with HTTP/2 a stream
    /// slot on the route's one connection.
    pub(super) fn dedicated(&self, route: usize) -> Dedicated {
        let c = self.shared.connection(route);
        if self.shared.template.http != crate::load::request::Http::H2 {
            return c;
        }
        let link = self.links.borrow_mut()[route]
            .get_or_insert_with(|| Arc::new(self.shared.link(route)))
            .clone();
        c.on(link)
    }

    /// A connection opened ahead of its requests: connects, then serves.
    pub(super) async fn connection_ready(self: Rc<Self>, target: usize) {
        let mut connection = self.dedicated(target);
        // Without keep-alive each request opens its own, in its latency.
        if self.shared.template.keep_alive {
            connection.open().await;
        }
        self.open.borrow_mut()[target].opening -= 1;
        self.serve(target, connection).await;
    }

    /// A long-lived connection task: takes the oldest queued request of
    /// its target (or parks until handed one), sends it, and goes on.
    pub(super) async fn connection(self: Rc<Self>, target: usize) {
        let connection = self.dedicated(target);
        self.serve(target, connection).await;
    }

    pub(super) async fn serve(self: Rc<Self>, target: usize, mut connection: Dedicated) {
        let slot = Rc::new(Slot::default());
        loop {
            let next = self.queued.borrow_mut()[target].pop_front();
            let job = match next {
                Some(job) => job,
                None => {
                    slot.park(std::time::Instant::now());
                    self.idle.borrow_mut()[target].push(slot.clone());
                    match slot.next().await {
                        Some(job) => job,
                        // Retired (`retire_idle`): counted out there.
                        None => return,
                    }
                }
            };
            self.exchange(&mut connection, job).await;
            self.pending.set(self.pending.get() - 1);
            self.freed.notify_one();
        }
    }

    pub(super) async fn exchange(self: &Rc<Self>, connection: &mut Dedicated, mut job: Job) {
        let s = &self.shared;
        let sent_us = s.start.elapsed().as_micros() as u64;
        let answer = connection.send(&s.template, &job.key, s.timeout).await;
        let done_us = s.start.elapsed().as_micros() as u64;
        self.open.borrow_mut()[job.route].took(done_us.saturating_sub(sent_us));
        let wait = match (&s.retry, job.attempts.as_mut()) {
            (Some(r), Some(a)) => a.after(
                r,
                &s.template.limited,
                answer.status,
                answer.advertised.as_ref(),
            ),
            _ => None,
        };
        let key = match wait {
            Some(_) => job.key.clone(),
            None => std::mem::take(&mut job.key),
        };
        let full = {
            let mut batch = self.batch.borrow_mut();
            batch.push(Event {
                seq: job.seq,
                key,
                replica: job.target as u32,
                intended_us: job.intended_us,
                sent_us,
                done_us,
                status: answer.status,
                outcome: answer.outcome,
                error: answer.error,
                advertised: answer.advertised,
                retry_of: job.retry_of,
                agent: 0,
            });
            batch.len() >= BATCH
        };
        if full {
            self.flush().await;
        }
        if let Some(wait) = wait {
            self.retry_later(job, wait);
        }
    }
}
