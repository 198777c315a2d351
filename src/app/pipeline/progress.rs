//! Progress while an arm runs: on a terminal, a bar with elapsed/remaining
//! time, the live rate and the admitted/rejected counts (indicatif); when
//! stderr is not a terminal (CI logs), a plain line every two seconds.
//! `--quiet` shows neither.

use crate::load::Counters;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tracing::info;

pub(crate) struct Progress {
    task: JoinHandle<()>,
    bar: Option<ProgressBar>,
}

impl Progress {
    pub(crate) fn start(arm: &str, duration: Duration, counters: Arc<Counters>) -> Self {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(
                Some(duration.as_millis() as u64),
                ProgressDrawTarget::stderr_with_hz(5),
            );
            // The run's own length, not indicatif's estimate from the rate
            // of progress (which said 14s for a 3 s attack at its start).
            let template = format!(
                "{{prefix:>14}} [{{bar:28}}] {{elapsed:>3}}/{} {{msg}}",
                total(duration)
            );
            let style = ProgressStyle::with_template(&template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            bar.set_style(style);
            bar.set_prefix(arm.to_string());
            let task = tokio::spawn(bar_loop(bar.clone(), counters));
            Progress {
                task,
                bar: Some(bar),
            }
        } else {
            let task = tokio::spawn(line_loop(arm.to_string(), duration, counters));
            Progress { task, bar: None }
        }
    }

    pub(crate) fn finish(self) {
        self.task.abort();
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

/// `3s`, `1m30s`, as indicatif writes the elapsed time beside it.
fn total(d: Duration) -> String {
    let s = d.as_secs_f64().ceil() as u64;
    match (s / 60, s % 60) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s}s"),
    }
}

fn load(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

async fn bar_loop(bar: ProgressBar, c: Arc<Counters>) {
    let start = tokio::time::Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    let (mut last_done, mut last_at) = (0u64, start);
    loop {
        tick.tick().await;
        let done = load(&c.done);
        let now = tokio::time::Instant::now();
        let rate = (done - last_done) as f64 / (now - last_at).as_secs_f64().max(1e-3);
        (last_done, last_at) = (done, now);
        bar.set_position(start.elapsed().as_millis() as u64);
        bar.set_message(format!(
            "{rate:>6.0}/s  admitted {}  rejected {}  failed {}",
            load(&c.admitted),
            load(&c.rejected),
            load(&c.failed)
        ));
    }
}

async fn line_loop(arm: String, duration: Duration, c: Arc<Counters>) {
    let start = tokio::time::Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs(2));
    tick.tick().await;
    loop {
        tick.tick().await;
        info!(
            "arm {arm}: {:.0}s/{:.0}s  done {}  admitted {}  rejected {}  failed {}",
            start.elapsed().as_secs_f64(),
            duration.as_secs_f64(),
            load(&c.done),
            load(&c.admitted),
            load(&c.rejected),
            load(&c.failed),
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_total_is_the_runs_length() {
        use std::time::Duration;
        assert_eq!(super::total(Duration::from_secs(3)), "3s");
        assert_eq!(super::total(Duration::from_millis(2_500)), "3s");
        assert_eq!(super::total(Duration::from_secs(90)), "1m30s");
        assert_eq!(super::total(Duration::from_secs(120)), "2m");
    }
}
