//! Closed-loop mode: `concurrency` workers, each sending one request,
//! waiting for its answer (and an optional think time), then the next —
//! like wrk or a pool of real clients. The offered load then depends on the
//! server's speed, so it is an option, never the default; each request's
//! intended time is when its worker was ready to send it. A retrying
//! worker (`[load] retry`) waits and retries in place, as a caller would.

use super::connection::Dedicated;
use super::pick::Picker;
use super::plan::{Counters, Plan};
use super::retry::{pause, Attempts, Retry};
use crate::events::{Batch, Event, BATCH};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

pub(super) struct Loop<'a> {
    pub plan: &'a Plan,
    pub concurrency: u32,
    pub think: Duration,
    pub start: Instant,
    pub events: mpsc::Sender<Batch>,
    pub counters: Arc<Counters>,
    pub stopping: Arc<AtomicBool>,
}

pub(super) struct Outcome {
    pub sent: u64,
    pub interrupted: bool,
}

/// One closed-loop worker: its own picker and one connection per target.
struct Worker {
    picker: Picker,
    connections: Vec<Dedicated>,
    template: super::request::Template,
    seq: Arc<AtomicU64>,
    stopping: Arc<AtomicBool>,
    events: mpsc::Sender<Batch>,
    counters: Arc<Counters>,
    start: Instant,
    deadline: Instant,
    timeout: Duration,
    think: Duration,
    retry: Option<Retry>,
    seed: u64,
}

impl Worker {
    /// Sends until the deadline or a stop; returns how many it sent
    /// (first attempts; a retry is part of its request).
    async fn run(mut self) -> u64 {
        let mut batch = Vec::with_capacity(BATCH);
        let mut sent = 0;
        // Sequence numbers are taken from the shared counter a block at a time.
        let (mut next, mut end) = (0, 0);
        let mut take = || {
            if next == end {
                next = self.seq.fetch_add(BATCH as u64, Ordering::Relaxed);
                end = next + BATCH as u64;
            }
            next += 1;
            next - 1
        };
        while Instant::now() < self.deadline && !self.stopping.load(Ordering::Relaxed) {
            let first = take();
            sent += 1;
            let (key, target) = self.picker.pick(first);
            let mut attempts = self.retry.as_ref().map(|_| Attempts::new(self.seed, first));
            let (mut seq, mut retry_of) = (first, None);
            loop {
                let sent_us = self.start.elapsed().as_micros() as u64;
                let answer = self.connections[target]
                    .send(&self.template, key, self.timeout)
                    .await;
                let wait = match (&self.retry, attempts.as_mut()) {
                    (Some(r), Some(a)) => a.after(
                        r,
                        &self.template.limited,
                        answer.status,
                        answer.advertised.as_ref(),
                    ),
                    _ => None,
                };
                batch.push(Event {
                    seq,
                    key: key.to_string(),
                    replica: target as u32,
                    intended_us: sent_us,
                    sent_us,
                    done_us: self.start.elapsed().as_micros() as u64,
                    status: answer.status,
                    outcome: answer.outcome,
                    error: answer.error,
                    advertised: answer.advertised,
                    retry_of,
                    agent: 0,
                });
                if batch.len() == BATCH {
                    self.counters.count_all(&batch);
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                    let _ = self.events.send(full).await;
                }
                let (Some(wait), Some(a)) = (wait, attempts.as_ref()) else {
                    break;
                };
                if !pause(Instant::now() + wait, self.deadline, &self.stopping).await {
                    break;
                }
                retry_of = Some(a.link());
                seq = super::retry::seq_of(a.link());
            }
            if !self.think.is_zero() {
                tokio::time::sleep(self.think).await;
            }
        }
        if !batch.is_empty() {
            self.counters.count_all(&batch);
            let _ = self.events.send(batch).await;
        }
        sent
    }
}

/// Runs the workers on one thread per core, each with a single-threaded
/// runtime of its own (as wrk runs one event loop per thread): a worker's
/// connection is never handed between threads.
pub(super) async fn run(l: Loop<'_>, stop: impl Future<Output = ()>) -> Outcome {
    let seq = Arc::new(AtomicU64::new(0));
    let deadline = l.start + l.plan.duration;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(l.concurrency.max(1) as usize);
    let mut groups: Vec<Vec<Worker>> = (0..threads).map(|_| Vec::new()).collect();
    for w in 0..l.concurrency {
        let picker = Picker::new(
            l.plan.keys,
            l.plan.key_distribution,
            l.plan.targets.len(),
            l.plan.fanout,
            l.plan
                .seed
                .wrapping_add(u64::from(w).wrapping_mul(0x9E37_79B9)),
        )
        .forging(l.plan.forged);
        groups[w as usize % threads].push(Worker {
            picker,
            connections: l
                .plan
                .targets
                .iter()
                .map(|t| Dedicated::new(t.clone(), l.plan.tls.as_ref()))
                .collect(),
            template: l.plan.template.clone(),
            seq: seq.clone(),
            stopping: l.stopping.clone(),
            events: l.events.clone(),
            counters: l.counters.clone(),
            start: l.start,
            deadline,
            timeout: l.plan.timeout,
            think: l.think,
            retry: l.plan.retry.clone(),
            seed: l.plan.seed,
        });
    }
    let (done_tx, mut done_rx) = mpsc::channel::<u64>(threads);
    for group in groups {
        let done = done_tx.clone();
        std::thread::spawn(move || {
            let sent = match tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .enable_time()
                .build()
            {
                Ok(rt) => rt.block_on(async {
                    let mut workers = JoinSet::new();
                    for w in group {
                        workers.spawn(w.run());
                    }
                    let mut sent = 0;
                    while let Some(n) = workers.join_next().await {
                        sent += n.unwrap_or(0);
                    }
                    sent
                }),
                Err(e) => {
                    tracing::warn!("closed loop: cannot start a worker thread's runtime: {e}");
                    0
                }
            };
            let _ = done.blocking_send(sent);
        });
    }
    drop(done_tx);
    // Resolves when every thread has reported (or dropped its sender).
    let all_done = async {
        let mut sent = 0;
        while let Some(n) = done_rx.recv().await {
            sent += n;
        }
        sent
    };
    tokio::pin!(stop);
    tokio::pin!(all_done);
    let (sent, interrupted) = tokio::select! {
        sent = &mut all_done => (sent, false),
        () = &mut stop => {
            l.stopping.store(true, Ordering::Relaxed);
            // Each worker finishes its request in flight (bounded by its timeout).
            (all_done.await, true)
        }
    };
    Outcome { sent, interrupted }
}
