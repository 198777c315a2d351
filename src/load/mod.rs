//! The open-loop load generator: every request has an intended send time
//! from the schedule and leaves then, whether or not earlier ones have
//! answered; latency is measured from the intended time (no coordinated
//! omission). Each request becomes one event on the trace, and so does
//! each retry of it (`retry`).

pub mod answer;
mod closed;
pub mod connection;
mod pacer;
pub(crate) mod pick;
mod plan;
pub mod request;
pub mod retry;
pub mod schedule;

use crate::events::{Batch, Event, Outcome};
use pick::Picker;
pub use plan::{Counters, Plan};
use reference_api::clock::wall_now_us;
use schedule::{Schedule, Shape};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::time::Instant;

#[derive(Clone, Copy, Debug)]
pub struct LoadReport {
    pub scheduled: u64,
    pub sent: u64,
    /// From the first intended send to the last actual one.
    pub send_window: Duration,
    pub interrupted: bool,
    /// Wall-clock µs at trace time 0.
    pub epoch_offset_us: i64,
    /// How far that mapping may be off (the two clocks were read apart).
    pub epoch_uncertainty_us: i64,
}

/// Wall-clock µs at `start`, from the tightest of a few paired readings of
/// both clocks, and how far off it may be (half the tightest gap).
fn wall_clock_at(start: Instant) -> (i64, i64) {
    (0..8)
        .map(|_| {
            let before = start.elapsed().as_micros() as i64;
            let wall = wall_now_us();
            let after = start.elapsed().as_micros() as i64;
            (wall - (before + after) / 2, (after - before) / 2 + 1)
        })
        .min_by_key(|&(_, uncertainty)| uncertainty)
        .unwrap_or((wall_now_us(), 1_000))
}

/// Runs the plan from `start` (trace time 0) until its schedule ends or
/// `stop` resolves, then waits (at most one timeout) for requests in
/// flight, so every request sent is recorded.
pub async fn run(
    plan: &Plan,
    events: mpsc::Sender<Batch>,
    counters: Arc<Counters>,
    stop: impl Future<Output = ()>,
    start: Instant,
) -> LoadReport {
    let picker = Picker::new(
        plan.keys,
        plan.key_distribution,
        plan.targets.len(),
        plan.fanout,
        plan.seed,
    );
    let permits = Arc::new(Semaphore::new(plan.max_in_flight));
    let (epoch_offset_us, epoch_uncertainty_us) = wall_clock_at(start);
    let schedule = Schedule::new(&plan.shape, plan.duration, plan.seed, epoch_offset_us);
    let stopping = Arc::new(AtomicBool::new(false));
    if let Shape::Closed { concurrency, think } = plan.shape {
        let outcome = closed::run(
            closed::Loop {
                plan,
                concurrency,
                think,
                start,
                events,
                counters,
                stopping: stopping.clone(),
            },
            stop,
        )
        .await;
        return LoadReport {
            scheduled: outcome.sent,
            sent: outcome.sent,
            send_window: start.elapsed(),
            interrupted: outcome.interrupted,
            epoch_offset_us,
            epoch_uncertainty_us,
        };
    }
    let (done_tx, done_rx) = oneshot::channel();
    let context = Pacing {
        handle: tokio::runtime::Handle::current(),
        start,
        schedule,
        picker,
        connections: Arc::new(connection::Connections::new(&plan.targets)),
        template: Arc::new(plan.template.clone()),
        timeout: plan.timeout,
        deadline: start.into_std() + plan.duration,
        permits: permits.clone(),
        events,
        counters,
        stop: stopping.clone(),
        seqs: Arc::new(AtomicU64::new(0)),
        retrying: plan.retry.clone().map(|retry| {
            Arc::new(Retrying {
                retry,
                limited: plan.template.limited.clone(),
                seed: plan.seed,
                deadline: start + plan.duration,
                waiting: AtomicUsize::new(0),
            })
        }),
    };
    let retrying = context.retrying.clone();
    std::thread::spawn(move || {
        let _ = done_tx.send(context.pace());
    });
    tokio::pin!(stop);
    tokio::pin!(done_rx);
    let outcome = tokio::select! {
        done = &mut done_rx => done.ok(),
        () = &mut stop => {
            stopping.store(true, Ordering::Relaxed);
            done_rx.await.ok().map(|o| pacer::Outcome { interrupted: true, ..o })
        }
    };
    let outcome = outcome.unwrap_or(pacer::Outcome {
        scheduled: 0,
        sent: 0,
        interrupted: true,
    });
    let send_window = start.elapsed();
    // Retries are due before the run's end (or given up): their chains
    // end within a timeout of it.
    if let Some(r) = &retrying {
        let until = Instant::now() + plan.timeout + Duration::from_secs(1);
        while r.waiting.load(Ordering::Relaxed) > 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    // Every request ends by its own timeout; waiting for all permits waits for them.
    let all = plan.max_in_flight as u32;
    let _ = tokio::time::timeout(
        plan.timeout + Duration::from_secs(1),
        permits.acquire_many(all),
    )
    .await;
    LoadReport {
        scheduled: outcome.scheduled,
        sent: outcome.sent,
        send_window,
        interrupted: outcome.interrupted,
        epoch_offset_us,
        epoch_uncertainty_us,
    }
}

/// What the pacer thread owns.
struct Pacing {
    handle: tokio::runtime::Handle,
    start: Instant,
    schedule: Schedule,
    picker: Picker,
    connections: Arc<connection::Connections>,
    template: Arc<request::Template>,
    timeout: Duration,
    /// The run ends on time: a request still waiting for a free in-flight
    /// slot then is not sent (and the achieved rate shows it).
    deadline: std::time::Instant,
    permits: Arc<Semaphore>,
    events: mpsc::Sender<Batch>,
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    /// The next `seq`: scheduled requests and retries number from one count.
    seqs: Arc<AtomicU64>,
    retrying: Option<Arc<Retrying>>,
}

/// What a retrying caller shares with the others.
struct Retrying {
    retry: retry::Retry,
    limited: Vec<u16>,
    seed: u64,
    /// A retry due after it is given up.
    deadline: Instant,
    /// Chains between two attempts, waited for at the run's end.
    waiting: AtomicUsize,
}

impl Pacing {
    fn pace(mut self) -> pacer::Outcome {
        let (mut scheduled, mut sent, mut interrupted) = (0, 0, false);
        let start = self.start.into_std();
        for intended in self.schedule.by_ref() {
            let index = scheduled;
            scheduled += 1;
            if !pacer::sleep_until(start + intended, &self.stop) {
                interrupted = true;
                break;
            }
            let Some(permit) =
                pacer::permit(&self.permits, &self.handle, self.deadline, &self.stop)
            else {
                interrupted = self.stop.load(Ordering::Relaxed);
                break;
            };
            let (key, target) = self.picker.pick(index);
            let seq = self.seqs.fetch_add(1, Ordering::Relaxed);
            let mut request = Request {
                connections: self.connections.clone(),
                template: self.template.clone(),
                key: key.to_string(),
                seq,
                target: target as u32,
                intended_us: intended.as_micros() as u64,
                timeout: self.timeout,
                retry_of: None,
            };
            let (events, counters, start) =
                (self.events.clone(), self.counters.clone(), self.start);
            let Some(retrying) = self.retrying.clone() else {
                self.handle.spawn(async move {
                    let event = request.send(start).await;
                    counters.count(&event);
                    let _ = events.send(vec![event]).await;
                    drop(permit);
                });
                sent += 1;
                continue;
            };
            let (seqs, permits, stop) =
                (self.seqs.clone(), self.permits.clone(), self.stop.clone());
            self.handle.spawn(async move {
                let r = &*retrying;
                let mut attempts = retry::Attempts::new(&r.retry, &r.limited, r.seed, seq);
                let mut permit = permit;
                loop {
                    let event = request.send(start).await;
                    drop(permit);
                    let wait = attempts.after(event.status, event.advertised.as_ref());
                    counters.count(&event);
                    if wait.is_some() {
                        request.key = event.key.clone();
                    }
                    let _ = events.send(vec![event]).await;
                    let Some(wait) = wait else { break };
                    r.waiting.fetch_add(1, Ordering::Relaxed);
                    let go = retry::pause(Instant::now() + wait, r.deadline, &stop).await;
                    let slot = match go {
                        true => permits.clone().acquire_owned().await.ok(),
                        false => None,
                    };
                    r.waiting.fetch_sub(1, Ordering::Relaxed);
                    let Some(slot) = slot else { break };
                    permit = slot;
                    request.retry_of = Some(crate::events::RetryOf {
                        first: seq,
                        attempt: attempts.attempt(),
                    });
                    request.seq = seqs.fetch_add(1, Ordering::Relaxed);
                    // A retry leaves when its caller's wait ends.
                    request.intended_us = start.elapsed().as_micros() as u64;
                }
            });
            sent += 1;
        }
        pacer::Outcome {
            scheduled,
            sent,
            interrupted,
        }
    }
}

pub(crate) struct Request {
    connections: Arc<connection::Connections>,
    template: Arc<request::Template>,
    key: String,
    seq: u64,
    target: u32,
    intended_us: u64,
    timeout: Duration,
    retry_of: Option<crate::events::RetryOf>,
}

impl Request {
    /// Sends it and gives its event (the key moves into the event).
    async fn send(&mut self, start: Instant) -> Event {
        let sent_us = start.elapsed().as_micros() as u64;
        let answer = self
            .connections
            .send(
                self.target as usize,
                &self.template,
                &self.key,
                self.timeout,
            )
            .await;
        Event {
            seq: self.seq,
            key: std::mem::take(&mut self.key),
            replica: self.target,
            intended_us: self.intended_us,
            sent_us,
            done_us: start.elapsed().as_micros() as u64,
            status: answer.status,
            outcome: answer.outcome,
            error: answer.error,
            advertised: answer.advertised,
            retry_of: self.retry_of,
        }
    }
}

impl Counters {
    /// Counts a batch with one update per counter (fewer shared writes).
    fn count_all(&self, events: &[Event]) {
        let (mut admitted, mut rejected, mut failed) = (0, 0, 0);
        for e in events {
            match e.outcome {
                Outcome::Admitted => admitted += 1,
                Outcome::Rejected => rejected += 1,
                Outcome::Error | Outcome::Timeout => failed += 1,
            }
        }
        self.admitted.fetch_add(admitted, Ordering::Relaxed);
        self.rejected.fetch_add(rejected, Ordering::Relaxed);
        self.failed.fetch_add(failed, Ordering::Relaxed);
        self.done.fetch_add(events.len() as u64, Ordering::Relaxed);
    }

    fn count(&self, event: &Event) {
        self.done.fetch_add(1, Ordering::Relaxed);
        let counter = match event.outcome {
            Outcome::Admitted => &self.admitted,
            Outcome::Rejected => &self.rejected,
            Outcome::Error | Outcome::Timeout => &self.failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}
