//! Closed-loop mode: `concurrency` workers, each sending one request,
//! waiting for its answer (and an optional think time), then the next —
//! like wrk or a pool of real clients. The offered load then depends on the
//! server's speed, so it is an option, never the default; each request's
//! intended time is when its worker was ready to send it.

use super::client::Dedicated;
use super::pick::Picker;
use super::{Counters, Plan};
use crate::events::Event;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

pub struct Loop<'a> {
    pub plan: &'a Plan,
    pub concurrency: u32,
    pub think: Duration,
    pub start: Instant,
    pub events: mpsc::Sender<Event>,
    pub counters: Arc<Counters>,
    pub stopping: Arc<AtomicBool>,
}

pub struct Outcome {
    pub sent: u64,
    pub interrupted: bool,
}

pub async fn run(l: Loop<'_>, stop: impl Future<Output = ()>) -> Outcome {
    let seq = Arc::new(AtomicU64::new(0));
    let deadline = l.start + l.plan.duration;
    let mut workers = JoinSet::new();
    for w in 0..l.concurrency {
        let mut picker = Picker::new(
            l.plan.keys,
            l.plan.key_distribution,
            l.plan.targets.len(),
            l.plan.fanout,
            l.plan
                .seed
                .wrapping_add(u64::from(w).wrapping_mul(0x9E37_79B9)),
        );
        let (seq, stopping) = (seq.clone(), l.stopping.clone());
        let (events, counters, start) = (l.events.clone(), l.counters.clone(), l.start);
        let template = l.plan.template.clone();
        let (timeout, think) = (l.plan.timeout, l.think);
        // Each worker owns one connection per target, as wrk's do.
        let mut connections: Vec<Dedicated> =
            l.plan.targets.iter().cloned().map(Dedicated::new).collect();
        workers.spawn(async move {
            while Instant::now() < deadline && !stopping.load(Ordering::Relaxed) {
                let n = seq.fetch_add(1, Ordering::Relaxed);
                let (key, target) = picker.pick(n);
                let sent_us = start.elapsed().as_micros() as u64;
                let answer = connections[target].send(&template, key, timeout).await;
                let event = Event {
                    seq: n,
                    key: key.to_string(),
                    replica: target as u32,
                    intended_us: sent_us,
                    sent_us,
                    done_us: start.elapsed().as_micros() as u64,
                    status: answer.status,
                    outcome: answer.outcome,
                    error: answer.error,
                };
                counters.count(&event);
                let _ = events.send(event).await;
                if !think.is_zero() {
                    tokio::time::sleep(think).await;
                }
            }
        });
    }
    tokio::pin!(stop);
    let interrupted = tokio::select! {
        () = async { while workers.join_next().await.is_some() {} } => false,
        () = &mut stop => {
            l.stopping.store(true, Ordering::Relaxed);
            // Each worker finishes its request in flight (bounded by its timeout).
            while workers.join_next().await.is_some() {}
            true
        }
    };
    Outcome {
        sent: seq.load(Ordering::Relaxed),
        interrupted,
    }
}
