//! Samples this machine's wall clock against the generator's monotonic
//! clock while an arm's load runs: at the start, every second, and at the
//! end (the samples go into the arm's record; `events::clock` says what
//! they mean).

use crate::events::clock::ClockSample;
use reference_api::clock::wall_now_us;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// The tightest of a few paired readings of both clocks at trace time.
pub(crate) fn sample(start: Instant) -> ClockSample {
    (0..8)
        .map(|_| {
            let before = start.elapsed().as_micros() as i64;
            let wall = wall_now_us();
            let after = start.elapsed().as_micros() as i64;
            ClockSample {
                trace_us: (before + after) / 2,
                wall_us: wall,
                uncertainty_us: (after - before) / 2 + 1,
            }
        })
        .min_by_key(|s| s.uncertainty_us)
        .unwrap_or(ClockSample {
            trace_us: start.elapsed().as_micros() as i64,
            wall_us: wall_now_us(),
            uncertainty_us: 1_000,
        })
}

/// A sampler running beside the load.
pub(crate) struct ClockWatch {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Vec<ClockSample>>,
    start: Instant,
}

impl ClockWatch {
    /// Samples now, then every second, until [`ClockWatch::finish`];
    /// `taken` sees the samples so far after each (the arm's record a
    /// kill would leave is kept up to date with them).
    pub(crate) fn start(
        start: Instant,
        mut taken: impl FnMut(&[ClockSample]) + Send + 'static,
    ) -> ClockWatch {
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut samples = vec![sample(start)];
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.tick().await;
            // Bounded however long the load runs: a day of samples at most.
            while samples.len() < 86_400 {
                tokio::select! {
                    _ = tick.tick() => {
                        samples.push(sample(start));
                        taken(&samples);
                    }
                    _ = &mut stopped => break,
                }
            }
            samples
        });
        ClockWatch { stop, task, start }
    }

    /// The samples, the last one taken now.
    pub(crate) async fn finish(self) -> Vec<ClockSample> {
        let _ = self.stop.send(());
        let mut samples = self.task.await.unwrap_or_default();
        samples.push(sample(self.start));
        samples
    }
}
