//! An arm's reading of the limiter's own counters (`[target] metrics`):
//! once before the load (after anything rlbench sent before it), every
//! second during it for the chart, and once after it (before the
//! Retry-After probes, whose requests are not the load's), each
//! after-the-fact reading taken from a scrape that began after the moment
//! it must follow. What the series rose by goes in the arm's record.

use crate::interrupt::Interrupt;
use crate::metrics::error::{ReadError, TallyError};
use crate::metrics::held::Tally;
use crate::metrics::read::{Reader, Reading};
use crate::scenario::spec::MetricsSpec;
use crate::store::records::{MetricsRecord, MetricsSample, MAX_METRICS_SAMPLES};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The sampler's stop signal and its task, which returns the readings
/// it took (seconds into the load, reading).
type Sampler = (oneshot::Sender<()>, JoinHandle<Vec<(f64, Reading)>>);

/// Why a reading before or after the load was not taken.
#[derive(Debug, thiserror::Error)]
enum Unread {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("interrupted before the counters were read")]
    InterruptedBefore,
    #[error("interrupted before the counters were read after the load")]
    InterruptedAfter,
}

/// The counters read before the load, and the reader sampling them.
pub(crate) struct Watching {
    reader: Option<Arc<Reader>>,
    before: Result<Reading, Unread>,
    sampler: Option<Sampler>,
}

/// Reads the counters before the load; `None` when the scenario reads none.
/// `replicas`: the base URLs of the replicas rlbench started.
pub(crate) async fn before(
    spec: Option<&MetricsSpec>,
    replicas: &[String],
    interrupt: &Interrupt,
) -> Option<Watching> {
    let spec = spec?;
    let reader = match Reader::new(spec, replicas) {
        Ok(r) => Arc::new(r),
        Err(e) => {
            return Some(Watching {
                reader: None,
                before: Err(e.into()),
                sampler: None,
            })
        }
    };
    let before = tokio::select! {
        biased;
        () = interrupt.wait() => Err(Unread::InterruptedBefore),
        r = reader.read_fresh() => r.map_err(Unread::from),
    };
    Some(Watching {
        reader: Some(reader),
        before,
        sampler: None,
    })
}

impl Watching {
    /// Samples the counters every second from `start` until [`Watching::after`].
    pub(crate) fn sample_from(&mut self, start: Instant) {
        let (Ok(_), Some(reader)) = (&self.before, &self.reader) else {
            return;
        };
        let reader = reader.clone();
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut out = Vec::new();
            let mut tick =
                tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            while out.len() < MAX_METRICS_SAMPLES {
                tokio::select! {
                    biased;
                    _ = &mut stopped => break,
                    at = tick.tick() => {
                        let read = tokio::select! {
                            biased;
                            _ = &mut stopped => break,
                            r = reader.read() => r,
                        };
                        // A sample that fails only leaves a gap in the chart.
                        if let Ok(r) = read {
                            out.push(((at - start).as_secs_f64(), r));
                        }
                    }
                }
            }
            out
        });
        self.sampler = Some((stop, task));
    }

    /// Reads the counters after the load and adds up what they rose by.
    pub(crate) async fn after(self, interrupt: &Interrupt) -> MetricsRecord {
        let samples = match self.sampler {
            Some((stop, task)) => {
                let _ = stop.send(());
                task.await.unwrap_or_default()
            }
            None => Vec::new(),
        };
        let (reader, before) = match (self.reader, self.before) {
            (Some(reader), Ok(b)) => (reader, b),
            (reader, before) => {
                // The error goes into the record as its words.
                let e = before.err().map_or_else(
                    || "the counters' reader could not be made".into(),
                    |e| e.to_string(),
                );
                let (admitted_selector, rejected_selector) =
                    reader.as_ref().map(|r| r.selectors()).unwrap_or_default();
                return MetricsRecord {
                    source: reader.map(|r| r.source()).unwrap_or_default(),
                    admitted_selector,
                    rejected_selector,
                    error: Some(e),
                    ..Default::default()
                };
            }
        };
        let (admitted_selector, rejected_selector) = reader.selectors();
        let mut record = MetricsRecord {
            source: reader.source(),
            admitted_selector,
            rejected_selector,
            ..Default::default()
        };
        let after = tokio::select! {
            biased;
            () = interrupt.wait() => Err(Unread::InterruptedAfter),
            r = reader.read_fresh() => r.map_err(Unread::from),
        };
        let after = match after {
            Ok(a) => a,
            Err(e) => {
                record.error = Some(e.to_string());
                return record;
            }
        };
        let (mut admitted, mut rejected) = (Tally::default(), Tally::default());
        let add = |a: &mut Tally, rj: &mut Tally, r: &Reading| -> Result<(), TallyError> {
            a.add(&r.admitted)?;
            rj.add(&r.rejected)
        };
        let mut tallied = add(&mut admitted, &mut rejected, &before);
        for (t_s, r) in &samples {
            tallied = tallied.and_then(|()| add(&mut admitted, &mut rejected, r));
            if tallied.is_ok() {
                record.samples.push(MetricsSample {
                    t_s: *t_s,
                    admitted: record.admitted_selector.as_ref().map(|_| admitted.increase),
                    rejected: record.rejected_selector.as_ref().map(|_| rejected.increase),
                });
            }
        }
        tallied = tallied.and_then(|()| add(&mut admitted, &mut rejected, &after));
        if let Err(e) = tallied {
            record.error = Some(format!("{}: {e}", record.source));
            record.samples.clear();
            return record;
        }
        record.admitted = record.admitted_selector.as_ref().map(|_| admitted.increase);
        record.rejected = record.rejected_selector.as_ref().map(|_| rejected.increase);
        record.resets = admitted.resets + rejected.resets;
        record
    }
}
