//! The open-loop load generator: every request has an intended send time
//! from the schedule and leaves then, whether or not earlier ones have
//! answered; latency is measured from the intended time (no coordinated
//! omission). Each request becomes one event on the trace, and so does
//! each retry of it (`retry`).

pub(crate) mod clock_watch;
mod closed;
pub(crate) mod connection;
mod h2;
mod lanes;
pub(crate) mod latency_counts;
pub(crate) mod outcome;
pub(crate) mod pick;
mod plan;
mod read_answer;
pub(crate) mod request;
pub(crate) mod retry;
mod rls;
pub(crate) mod schedule;
mod socket;
mod timer;
pub(crate) mod tls;

use crate::events::{Batch, Event, Outcome};
pub(crate) use plan::{Counters, Plan, Segment};
use schedule::Shape;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

#[derive(Clone, Copy, Debug)]
pub(crate) struct LoadReport {
    /// The schedule (this machine's share of it), sent or not.
    pub scheduled: u64,
    /// Of it, what was never sent, by why.
    pub not_sent: crate::store::records::NotSent,
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
    let s = clock_watch::sample(start);
    (s.wall_us - s.trace_us, s.uncertainty_us)
}

/// Runs the plan from `start` (trace time 0) until its schedule ends or
/// `stop` resolves, then waits (at most one timeout) for requests in
/// flight, so every request sent is recorded.
pub(crate) async fn run(
    plan: &Plan,
    events: mpsc::Sender<Batch>,
    counters: Arc<Counters>,
    stop: impl Future<Output = ()>,
    start: Instant,
) -> LoadReport {
    let (epoch_offset_us, epoch_uncertainty_us) = wall_clock_at(start);
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
            not_sent: Default::default(),
            send_window: start.elapsed(),
            interrupted: outcome.interrupted,
            epoch_offset_us,
            epoch_uncertainty_us,
        };
    }
    let lanes = std::thread::available_parallelism().map_or(1, |n| n.get());
    let shared = Arc::new(lanes::Shared {
        targets: plan.targets.clone(),
        template: plan.template.clone(),
        shape: plan.shape.clone(),
        duration: plan.duration,
        seed: plan.seed,
        epoch_offset_us: plan.phase_us.unwrap_or(epoch_offset_us),
        keys: plan.keys,
        forged: plan.forged,
        key_distribution: plan.key_distribution,
        fanout: plan.fanout,
        timeout: plan.timeout,
        start,
        deadline: start + plan.duration,
        stop: stopping.clone(),
        events,
        counters,
        retry: plan.retry.clone(),
        lanes,
        segment: plan.segment,
        claims: Default::default(),
        tls: plan.tls.clone(),
        binds: match &plan.template.sources {
            Some(sources) => pick::key_names(plan.keys)
                .iter()
                .map(|k| sources.get(k).copied())
                .collect::<Option<Vec<_>>>()
                .unwrap_or_default(),
            None => Vec::new(),
        },
        connections: plan.max_in_flight.div_ceil(lanes).max(1),
    });
    let (done_tx, mut done_rx) = mpsc::channel::<lanes::Outcome>(lanes);
    for lane in 0..lanes {
        let (shared, done) = (shared.clone(), done_tx.clone());
        std::thread::spawn(move || {
            let _ = done.blocking_send(lanes::run(shared, lane));
        });
    }
    drop(done_tx);
    drop(shared);
    let all_done = async {
        let mut outcomes = Vec::new();
        while let Some(o) = done_rx.recv().await {
            outcomes.push(o);
        }
        outcomes
    };
    tokio::pin!(stop);
    tokio::pin!(all_done);
    let (outcomes, stopped) = tokio::select! {
        o = &mut all_done => (o, false),
        () = &mut stop => {
            stopping.store(true, Ordering::Relaxed);
            (all_done.await, true)
        }
    };
    let mut not_sent = crate::store::records::NotSent::default();
    for o in &outcomes {
        not_sent.add(&o.not_sent);
    }
    LoadReport {
        scheduled: outcomes.iter().map(|o| o.scheduled).sum(),
        not_sent,
        send_window: outcomes
            .iter()
            .map(|o| o.paced)
            .max()
            .unwrap_or_else(|| start.elapsed()),
        // A lane that did not report was cut short too.
        interrupted: stopped || outcomes.len() < lanes || outcomes.iter().any(|o| o.interrupted),
        epoch_offset_us,
        epoch_uncertainty_us,
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
        self.latency.add_all(
            events
                .iter()
                .filter(|e| matches!(e.outcome, Outcome::Admitted | Outcome::Rejected))
                .map(|e| e.done_us.saturating_sub(e.intended_us)),
        );
    }
}
