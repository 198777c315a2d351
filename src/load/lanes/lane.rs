//! A lane: its runtime, its state, and its pacer — walking the schedule,
//! handing each request out at its due time (or queueing it), retrying
//! limited answers, sending what it gathered. Its connection tasks are in
//! lane/connections.rs.

mod connections;

use super::job::{Job, Slot};
use super::pool::Pool;
use super::scout::Scout;
use super::shared::{Outcome, Shared};
use super::tuning::{FLUSH_BEFORE_WAIT, GRAIN, IDLE, TICK};
use crate::events::{Event, BATCH};
use crate::load::pick::Picker;
use crate::load::retry::{pause, Attempts};
use crate::load::schedule::Schedule;
use crate::load::timer::Timer;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Runs lane `lane` on the calling thread until the schedule is walked and
/// the requests it claimed are answered (or a stop).
pub(crate) fn run(shared: Arc<Shared>, lane: usize) -> Outcome {
    // I/O and timers only: no process or signal driver to poll.
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::warn!("open loop: cannot start lane {lane}'s runtime: {e}");
            return Outcome {
                scheduled: 0,
                not_sent: Default::default(),
                interrupted: true,
                paced: Duration::ZERO,
            };
        }
    };
    let local = tokio::task::LocalSet::new();
    let targets = shared.routes();
    let lane = Rc::new(Lane {
        idle: RefCell::new(vec![Vec::new(); targets]),
        queued: RefCell::new((0..targets).map(|_| VecDeque::new()).collect()),
        open: RefCell::new(vec![Pool::new(); targets]),
        shared,
        index: lane,
        connections: Cell::new(0),
        pending: Cell::new(0),
        retrying: Cell::new(0),
        freed: Notify::new(),
        links: RefCell::new(vec![None; targets]),
        batch: RefCell::new(Vec::with_capacity(BATCH)),
    });
    local.block_on(&rt, lane.pace())
}

struct Lane {
    shared: Arc<Shared>,
    index: usize,
    /// Parked connection tasks, per target (the last parked is used first).
    idle: RefCell<Vec<Vec<Rc<Slot>>>>,
    /// Requests waiting for a connection, per target, oldest first.
    queued: RefCell<Vec<VecDeque<Job>>>,
    /// Per target: its connection tasks and how its answers take.
    open: RefCell<Vec<Pool>>,
    connections: Cell<usize>,
    /// Requests taken (queued or in flight) and not yet answered.
    pending: Cell<usize>,
    /// Retries waiting for their due time.
    retrying: Cell<usize>,
    /// A request was answered: room for the next.
    freed: Notify,
    /// With HTTP/2, each route's connection, shared by its tasks.
    links: RefCell<Vec<Option<Arc<crate::load::h2::Link>>>>,
    batch: RefCell<Vec<Event>>,
}

impl Lane {
    /// Walks the schedule, sending this lane's share at its due times.
    async fn pace(self: Rc<Self>) -> Outcome {
        let s = self.shared.clone();
        let timer = Timer::new();
        let start = s.start.into_std();
        let mut picker = Picker::new(
            s.keys,
            s.key_distribution,
            s.targets.len(),
            s.fanout,
            s.seed,
        )
        .forging(s.forged);
        let schedule = Schedule::new(&s.shape, s.duration, s.seed, s.epoch_offset_us);
        let mut scout = Scout::new(&s);
        let mut sent = 0;
        let mut schedule = schedule.enumerate();
        // When the pacer last woke: it sleeps at least a grain past it.
        let mut woke = std::time::Instant::now();
        // When idle connections were last closed.
        let mut swept = woke;
        // Where the lane stopped walking, when it did before the end: the
        // request it held and why.
        let mut cut: Option<(usize, Duration, bool)> = None;
        'schedule: for (index, intended) in schedule.by_ref() {
            // Every lane draws every pick, so each request's key and target
            // are the same whichever lane sends it.
            let (key_index, target) = picker.pick_index(index as u64);
            if !s.segment.holds(index, intended) || s.claims.taken(index) {
                if s.claims.closed() {
                    // Another lane stopped and counted the rest.
                    break;
                }
                scout.passed(index);
                continue;
            }
            let key = picker.key(key_index);
            let route = s.route(target, key_index);
            let due = start + intended;
            loop {
                if s.stop.load(Ordering::Relaxed) {
                    cut = Some((index, intended, true));
                    break 'schedule;
                }
                let now = std::time::Instant::now();
                scout.advance(
                    now.saturating_duration_since(start),
                    s.segment,
                    s.lanes,
                    self.index,
                );
                self.prepare(&scout);
                if now >= swept + IDLE / 4 {
                    self.retire_idle(now);
                    swept = now;
                }
                if s.claims.taken(index) {
                    // Another lane was there first.
                    scout.passed(index);
                    continue 'schedule;
                }
                if now >= due {
                    break;
                }
                if due - now >= FLUSH_BEFORE_WAIT {
                    self.flush().await;
                }
                timer.sleep_until(due.max(woke + GRAIN), TICK).await;
                woke = std::time::Instant::now();
            }
            if !self.room().await {
                cut = Some((index, intended, s.stop.load(Ordering::Relaxed)));
                break;
            }
            scout.passed(index);
            if !s.claims.claim(index) {
                continue;
            }
            sent += 1;
            self.submit(Job {
                seq: index as u64,
                key: key.to_string(),
                target,
                route,
                intended_us: intended.as_micros() as u64,
                retry_of: None,
                attempts: s
                    .retry
                    .as_ref()
                    .map(|_| Attempts::new(s.seed, index as u64)),
            });
        }
        let paced = s.start.elapsed();
        // The rest of the schedule was never handed out: counted by the
        // lane that stopped first, so that the schedule is always the
        // scenario's.
        let mut not_sent = crate::store::records::NotSent::default();
        let mut interrupted = false;
        if let Some((index, intended, stopped)) = cut {
            let from = s.claims.close();
            let rest = std::iter::once((index, intended))
                .chain(schedule)
                .filter(|&(i, at)| i >= from && s.segment.holds(i, at))
                .count() as u64;
            interrupted = stopped;
            if stopped {
                not_sent.stopped = rest;
            } else {
                not_sent.behind = rest;
            }
        }
        let scheduled = sent + not_sent.stopped + not_sent.behind;
        // Every request ends by its own timeout, and retries are due
        // before the run's end (or given up).
        let until = Instant::now() + s.timeout + Duration::from_secs(1);
        while (self.pending.get() > 0 || self.retrying.get() > 0) && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        self.flush().await;
        tracing::debug!(
            "lane {}: {} connections for {} targets",
            self.index,
            self.connections.get(),
            s.targets.len()
        );
        Outcome {
            scheduled,
            not_sent,
            interrupted,
            paced,
        }
    }

    /// Waits until fewer than the lane's share of `max_in_flight` requests
    /// are pending; false at the deadline or a stop.
    async fn room(&self) -> bool {
        loop {
            if self.pending.get() < self.shared.connections {
                return true;
            }
            if self.shared.stop.load(Ordering::Relaxed) || Instant::now() >= self.shared.deadline {
                return false;
            }
            let _ = tokio::time::timeout(TICK, self.freed.notified()).await;
        }
    }

    /// Hands `job` to a parked connection of its target, or queues it
    /// (and opens another connection when the queue calls for one).
    fn submit(self: &Rc<Self>, job: Job) {
        self.pending.set(self.pending.get() + 1);
        let target = job.route;
        let parked = self.idle.borrow_mut()[target].pop();
        match parked {
            Some(slot) => slot.give(job),
            None => {
                self.queued.borrow_mut()[target].push_back(job);
                self.grow(target);
            }
        }
    }

    /// Sends `job` again after `wait` (a task of its own meanwhile).
    fn retry_later(self: &Rc<Self>, mut job: Job, wait: Duration) {
        self.retrying.set(self.retrying.get() + 1);
        let lane = self.clone();
        tokio::task::spawn_local(async move {
            let s = &lane.shared;
            let go = pause(Instant::now() + wait, s.deadline, &s.stop).await && lane.room().await;
            lane.retrying.set(lane.retrying.get() - 1);
            let Some(link) = job.attempts.as_ref().map(Attempts::link).filter(|_| go) else {
                return;
            };
            job.seq = crate::load::retry::seq_of(link);
            job.retry_of = Some(link);
            // A retry leaves when its caller's wait ends.
            job.intended_us = s.start.elapsed().as_micros() as u64;
            lane.submit(job);
        });
    }

    /// Counts and sends what the lane gathered.
    async fn flush(&self) {
        let full = std::mem::replace(&mut *self.batch.borrow_mut(), Vec::with_capacity(BATCH));
        if full.is_empty() {
            return;
        }
        self.shared.counters.count_all(&full);
        let _ = self.shared.events.send(full).await;
    }
}
