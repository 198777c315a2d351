//! One probing phase on the wire: a bounded open-loop load (the same
//! generator as `run` and `attack`, so its times mean the same) whose
//! events are kept in memory, placed on the probe's one clock.

use crate::events::{Event, Outcome};
use crate::interrupt::Interrupt;
use crate::load::pick::{Fanout, KeyDistribution};
use crate::load::request::Template;
use crate::load::schedule::Shape;
use crate::load::{Counters, Plan, Segment};
use crate::verify::{Decided, Obs};
use hyper::Uri;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// What a phase sends: `count` requests at `rate` per second over `keys`
/// keys (picked uniformly) with `template`.
pub(super) struct Phase {
    pub targets: Vec<Uri>,
    pub template: Template,
    pub rate: f64,
    pub count: u64,
    pub keys: u32,
    pub timeout: Duration,
    /// For `https://` targets.
    pub tls: Option<crate::load::tls::Client>,
}

/// A phase's requests, times in µs from the probe's start.
#[derive(Debug, Default)]
pub(super) struct Sent {
    pub events: Vec<Event>,
    pub interrupted: bool,
}

impl Sent {
    pub(super) fn decided(&self) -> u64 {
        self.events
            .iter()
            .filter(|e| matches!(e.outcome, Outcome::Admitted | Outcome::Rejected))
            .count() as u64
    }

    pub(super) fn limited(&self) -> u64 {
        self.events
            .iter()
            .filter(|e| e.outcome == Outcome::Rejected)
            .count() as u64
    }

    /// The share of the decided requests that were limited.
    pub(super) fn limited_share(&self) -> f64 {
        self.limited() as f64 / self.decided().max(1) as f64
    }

    pub(super) fn admitted(&self) -> u64 {
        self.events
            .iter()
            .filter(|e| e.outcome == Outcome::Admitted)
            .count() as u64
    }
}

/// Sends `phase` now and returns its events on the clock that starts at
/// `origin`.
pub(super) async fn send(phase: Phase, origin: Instant, interrupt: &Interrupt) -> Sent {
    let duration = Duration::from_secs_f64(phase.count as f64 / phase.rate);
    let plan = Plan {
        targets: phase.targets,
        template: phase.template,
        shape: Shape::Constant { rate: phase.rate },
        duration,
        keys: phase.keys,
        forged: 0,
        key_distribution: KeyDistribution::Uniform,
        fanout: Fanout::RoundRobin,
        seed: origin.elapsed().as_nanos() as u64 | 1,
        timeout: phase.timeout,
        max_in_flight: 2_000,
        retry: None,
        segment: Segment::WHOLE,
        phase_us: None,
        tls: phase.tls,
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let start = Instant::now();
    let collect = tokio::spawn(async move {
        let mut events = Vec::new();
        while let Some(batch) = rx.recv().await {
            events.extend(batch);
        }
        events
    });
    let report = crate::load::run(
        &plan,
        tx,
        Arc::new(Counters::default()),
        interrupt.wait(),
        start,
    )
    .await;
    let mut events = collect.await.unwrap_or_default();
    let shift = start.duration_since(origin).as_micros() as u64;
    for e in &mut events {
        e.intended_us += shift;
        e.sent_us += shift;
        e.done_us += shift;
    }
    events.sort_by_key(|e| e.sent_us);
    Sent {
        events,
        interrupted: report.interrupted,
    }
}

/// The requests of one key, as the verifier reads them.
pub(super) fn observations(events: &[&Event]) -> Vec<Obs> {
    events
        .iter()
        .map(|e| Obs {
            sent: e.sent_us as i64,
            done: e.done_us as i64,
            decided: match e.outcome {
                Outcome::Admitted => Decided::Admitted,
                Outcome::Rejected => Decided::Rejected,
                Outcome::Error | Outcome::Timeout => Decided::Unknown,
            },
        })
        .collect()
}
