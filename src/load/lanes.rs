//! The open loop on lanes, one per core. Each lane is a thread with a
//! single-threaded runtime of its own that owns a share of the schedule —
//! the requests whose index `i` has `i % lanes == lane` (of this machine's
//! segment, when load agents split the schedule: `Segment`), like k6's
//! execution segments: every lane walks the same deterministic schedule and
//! key picks, so the split changes who sends a request, never which key or
//! target it has or its `seq` (its index) — and its own connections.
//!
//! Within a lane nothing crosses threads per request: a precise timer
//! (`timer`) wakes the lane's pacer at each due time, which hands the
//! request to a parked long-lived connection task of its target, or queues
//! it for the next one free (its lag, and so its latency, counting from
//! its intended time). A lane opens connections as its queue needs them
//! (see `Lane::grow`), never more than its share of `max_in_flight`, and
//! past that many pending requests the schedule waits and the lag shows.
//! Events are gathered per lane and sent to the writer in batches.

use super::connection::Dedicated;
use super::pick::Picker;
use super::plan::{Counters, Segment};
use super::request::Template;
use super::retry::{pause, Attempts, Retry};
use super::schedule::{Schedule, Shape};
use super::timer::Timer;
use crate::events::{Batch, Event, RetryOf, BATCH};
use crate::load::pick::{Fanout, KeyDistribution};
use hyper::Uri;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::Duration;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

/// Longest single wait of the pacer: how quickly it sees a stop.
const TICK: Duration = Duration::from_millis(5);
/// Connections per target a lane opens as soon as requests queue.
const FLOOR: usize = 16;
/// Past the floor: how long the oldest queued request must have waited,
/// and how long since the last connection was added, before another.
const GROW_AFTER: Duration = Duration::from_millis(1);
/// Before a wait at least this long the pacer sends what its lane gathered
/// (so slow schedules still show progress).
const FLUSH_BEFORE_WAIT: Duration = Duration::from_millis(2);
/// How far ahead the scout looks: a lane holds a connection open, per
/// target, for each of its requests due this soon (up to [`MAX_READY`]).
const LOOKAHEAD: Duration = Duration::from_millis(50);
/// Connections per target a lane opens ahead of what is due.
const MAX_READY: usize = 256;

/// What every lane of one load shares (read-only but for the counters).
pub(super) struct Shared {
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
    pub(super) fn routes(&self) -> usize {
        self.targets.len() * self.binds.len().max(1)
    }

    pub(super) fn route(&self, target: usize, key: usize) -> usize {
        match self.binds.len() {
            0 => target,
            per => target * per + key,
        }
    }

    /// A connection for `route`, from its key's address when it has one.
    fn connection(&self, route: usize) -> Dedicated {
        let per = self.binds.len().max(1);
        Dedicated::new(self.targets[route / per].clone(), self.tls.as_ref())
            .from(self.binds.get(route % per).copied())
    }

    /// `route`'s HTTP/2 connection, for a lane's tasks to share.
    fn link(&self, route: usize) -> super::h2::Link {
        let per = self.binds.len().max(1);
        super::h2::Link::new(
            self.targets[route / per].clone(),
            self.tls.as_ref(),
            self.binds.get(route % per).copied(),
        )
    }
}

pub(super) struct Outcome {
    /// The lane's share of the schedule, sent or not.
    pub scheduled: u64,
    /// Of that share, what was never handed out, by why.
    pub not_sent: crate::store::records::NotSent,
    pub interrupted: bool,
    /// When the lane's pacer finished, from trace time 0.
    pub paced: Duration,
}

/// Runs lane `lane` on the calling thread until its share of the schedule
/// is sent and answered (or a stop).
pub(super) fn run(shared: Arc<Shared>, lane: usize) -> Outcome {
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

/// One target's connections in a lane, and how long its exchanges take.
#[derive(Clone)]
struct Pool {
    open: usize,
    /// Opened ahead of their requests and still connecting.
    opening: usize,
    /// When the last connection was added.
    grown: Instant,
    /// Exchanges' service time (µs): a moving mean, and the least seen.
    mean_us: f64,
    least_us: f64,
}

impl Pool {
    fn new() -> Self {
        Pool {
            open: 0,
            opening: 0,
            grown: Instant::now(),
            mean_us: 0.0,
            least_us: f64::INFINITY,
        }
    }

    fn took(&mut self, us: u64) {
        let us = us as f64;
        self.least_us = self.least_us.min(us);
        self.mean_us = if self.mean_us == 0.0 {
            us
        } else {
            self.mean_us + (us - self.mean_us) / 64.0
        };
    }

    /// Answers take about as long as they ever did: nothing queues behind
    /// them, on the target or in this lane.
    fn unhurried(&self) -> bool {
        self.mean_us <= 2.0 * self.least_us + 50.0
    }
}

/// The schedule walked ahead of the pacer: this lane's requests due
/// within [`LOOKAHEAD`], counted per target.
struct Scout {
    schedule: Schedule,
    picker: Picker,
    /// The next index of the whole schedule to look at, and its offset.
    next: Option<(usize, Duration)>,
    index: usize,
    /// This lane's requests seen and not yet sent: (index, target).
    due: VecDeque<(usize, usize)>,
    per_target: Vec<usize>,
    /// Keys with addresses of their own (0: none): routes per target.
    per_key: usize,
    /// What a [`LOOKAHEAD`] of the average rate brings a target of this
    /// lane, twice over, and the floor: more than that is a burst.
    calm: usize,
}

impl Scout {
    fn route(&self, target: usize, key: usize) -> usize {
        match self.per_key {
            0 => target,
            per => target * per + key,
        }
    }
    fn new(s: &Shared) -> Self {
        let mut schedule = Schedule::new(&s.shape, s.duration, s.seed, s.epoch_offset_us);
        let next = schedule.next().map(|d| (0, d));
        Scout {
            schedule,
            picker: Picker::new(
                s.keys,
                s.key_distribution,
                s.targets.len(),
                s.fanout,
                s.seed,
            )
            .forging(s.forged),
            next,
            index: 0,
            due: VecDeque::new(),
            per_target: vec![0; s.routes()],
            per_key: s.binds.len(),
            calm: {
                let per_target = s.shape.target_rate(s.duration) * LOOKAHEAD.as_secs_f64()
                    / (s.lanes * s.routes().max(1)) as f64;
                (2.0 * per_target).ceil() as usize + FLOOR
            },
        }
    }

    /// Connections a target of this lane should have ready: one per request
    /// due soon in a burst; the floor otherwise (the growth rule serves a
    /// steady rate, which needs far fewer connections than it has requests
    /// due within the lookahead).
    fn ready(&self, target: usize) -> usize {
        match self.per_target[target] {
            due if due > self.calm => due.min(MAX_READY),
            due => due.min(FLOOR),
        }
    }

    /// Takes in every request due by `until` (trace offset).
    fn advance(&mut self, until: Duration, segment: Segment, lanes: usize, lane: usize) {
        while let Some((index, offset)) = self.next {
            if offset > until {
                return;
            }
            // Every pick drawn, in order, as the pacer draws them.
            let (key, target) = self.picker.pick_index(index as u64);
            if segment.sends(index, offset, lane, lanes) {
                let route = self.route(target, key);
                self.due.push_back((index, route));
                self.per_target[route] += 1;
            }
            self.index += 1;
            self.next = self.schedule.next().map(|d| (self.index, d));
        }
    }

    /// The pacer has sent (or given up) every request up to `index`.
    fn passed(&mut self, index: usize) {
        while let Some(&(i, target)) = self.due.front() {
            if i > index {
                return;
            }
            self.due.pop_front();
            self.per_target[target] -= 1;
        }
    }
}

/// One request as a connection task gets it.
struct Job {
    seq: u64,
    key: String,
    target: usize,
    /// Its target, or with per-key addresses its (target, key): which
    /// connections may carry it.
    route: usize,
    intended_us: u64,
    retry_of: Option<RetryOf>,
    attempts: Option<Attempts>,
}

/// A parked connection task: where its next job is put, and how it is woken.
#[derive(Default)]
struct Slot {
    job: Cell<Option<Job>>,
    waker: Cell<Option<Waker>>,
}

impl Slot {
    fn give(&self, job: Job) {
        self.job.set(Some(job));
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    async fn next(&self) -> Job {
        poll_fn(|cx| match self.job.take() {
            Some(job) => Poll::Ready(job),
            None => {
                self.waker.set(Some(cx.waker().clone()));
                Poll::Pending
            }
        })
        .await
    }
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
    links: RefCell<Vec<Option<Arc<super::h2::Link>>>>,
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
        let (mut scheduled, mut interrupted) = (0, false);
        let mut not_sent = crate::store::records::NotSent::default();
        let mut schedule = schedule.enumerate();
        'schedule: for (index, intended) in schedule.by_ref() {
            // Every lane draws every pick, so each request's key and target
            // are the same however the schedule is split.
            let (key_index, target) = picker.pick_index(index as u64);
            let key = picker.key(key_index);
            let route = s.route(target, key_index);
            if !s.segment.sends(index, intended, self.index, s.lanes) {
                continue;
            }
            scheduled += 1;
            let due = start + intended;
            loop {
                if s.stop.load(Ordering::Relaxed) {
                    interrupted = true;
                    not_sent.stopped += 1;
                    break 'schedule;
                }
                let now = std::time::Instant::now();
                scout.advance(
                    now.saturating_duration_since(start) + LOOKAHEAD,
                    s.segment,
                    s.lanes,
                    self.index,
                );
                self.prepare(&scout);
                if now >= due {
                    break;
                }
                if due - now >= FLUSH_BEFORE_WAIT {
                    self.flush().await;
                }
                timer.sleep_until(due, TICK).await;
            }
            if !self.room().await {
                interrupted = s.stop.load(Ordering::Relaxed);
                if interrupted {
                    not_sent.stopped += 1;
                } else {
                    not_sent.behind += 1;
                }
                break;
            }
            scout.passed(index);
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
        // The rest of the lane's share was never handed out: counted, so
        // that the schedule is always the scenario's.
        let rest = schedule
            .filter(|&(index, at)| s.segment.sends(index, at, self.index, s.lanes))
            .count() as u64;
        scheduled += rest;
        if interrupted {
            not_sent.stopped += rest;
        } else {
            not_sent.behind += rest;
        }
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

    /// Opens a connection to `target` when its queue needs one: freely up
    /// to [`FLOOR`]; past it at most one per [`GROW_AFTER`], and only while
    /// the oldest queued request has waited that long *and* the target's
    /// answers take about as long as they ever did. Answers that slow down
    /// mean requests queue somewhere — in a saturated target or in this
    /// lane short of CPU — and more connections would only deepen that
    /// queue (a few hundred of them cost a lane a third of its rate); a
    /// target that is just slow (the same 50 ms every time) gets as many as
    /// its rate needs.
    fn grow(self: &Rc<Self>, target: usize) {
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
                && pool.unhurried()
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
    fn prepare(self: &Rc<Self>, scout: &Scout) {
        for target in 0..scout.per_target.len() {
            let want = scout.ready(target);
            loop {
                let idle = self.idle.borrow()[target].len();
                let opening = self.open.borrow()[target].opening;
                if idle + opening >= want || self.connections.get() >= self.shared.connections {
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

    /// A connection task's connection for `route`: with HTTP/2 a stream
    /// slot on the route's one connection.
    fn dedicated(&self, route: usize) -> Dedicated {
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
    async fn connection_ready(self: Rc<Self>, target: usize) {
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
    async fn connection(self: Rc<Self>, target: usize) {
        let connection = self.dedicated(target);
        self.serve(target, connection).await;
    }

    async fn serve(self: Rc<Self>, target: usize, mut connection: Dedicated) {
        let slot = Rc::new(Slot::default());
        loop {
            let next = self.queued.borrow_mut()[target].pop_front();
            let job = match next {
                Some(job) => job,
                None => {
                    self.idle.borrow_mut()[target].push(slot.clone());
                    slot.next().await
                }
            };
            self.exchange(&mut connection, job).await;
            self.pending.set(self.pending.get() - 1);
            self.freed.notify_one();
        }
    }

    async fn exchange(self: &Rc<Self>, connection: &mut Dedicated, mut job: Job) {
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
            job.seq = super::retry::seq_of(link);
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
