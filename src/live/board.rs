//! What the live page shows, kept while a run goes: the arm running and
//! its live counters, one sample per second of outcomes per second and
//! latency, the arms finished so far, and at the end each arm's verdict
//! and the report. The run writes to it (`arm_*`, `run_ended`); the
//! server reads it (`status`) and a sampler ticks it every second.

use crate::load::latency_counts;
use crate::load::Counters;
use crate::store::summary::Summary;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Samples kept for the charts: the last ten minutes of the arm.
const KEPT_SAMPLES: usize = 600;
/// A page that asked within this long is still open.
const WATCHED_WITHIN: Duration = Duration::from_secs(3);

/// The run as the live page sees it.
pub(crate) struct Board {
    state: Mutex<State>,
}

struct State {
    scenario: String,
    arms: Vec<String>,
    /// The arm whose stack is coming up.
    starting: Option<String>,
    current: Option<Current>,
    samples: VecDeque<Sample>,
    finished: Vec<ArmLine>,
    end: Option<End>,
    last_poll: Option<Instant>,
    end_seen: bool,
    report_fetched: bool,
}

struct Current {
    name: String,
    duration: Duration,
    start: Instant,
    counters: Arc<Counters>,
    last: Snapshot,
}

/// The counters at one instant.
struct Snapshot {
    at: Instant,
    counts: [u64; 4],
    latency: Vec<u64>,
}

impl Snapshot {
    fn take(c: &Counters) -> Snapshot {
        Snapshot {
            at: Instant::now(),
            counts: [
                c.done.load(Ordering::Relaxed),
                c.admitted.load(Ordering::Relaxed),
                c.rejected.load(Ordering::Relaxed),
                c.failed.load(Ordering::Relaxed),
            ],
            latency: c.latency.snapshot(),
        }
    }
}

/// One second of an arm: outcomes per second and latency percentiles.
#[derive(Clone, Serialize)]
struct Sample {
    t_s: f64,
    sent: f64,
    admitted: f64,
    rejected: f64,
    errors: f64,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
}

#[derive(Serialize)]
struct ArmLine {
    name: String,
    sent: u64,
    admitted: u64,
    rejected: u64,
    errors: u64,
    /// The verdict sentence, once the run is judged.
    verdict: Option<String>,
}

#[derive(Serialize)]
struct End {
    passed: bool,
    partial: bool,
    failures: Vec<String>,
    /// report.html, when it was written.
    #[serde(skip)]
    report: Option<PathBuf>,
    report_path: Option<String>,
    report_file_url: Option<String>,
}

impl Board {
    pub(crate) fn new(scenario: &str, arms: Vec<String>) -> Board {
        Board {
            state: Mutex::new(State {
                scenario: scenario.to_string(),
                arms,
                starting: None,
                current: None,
                samples: VecDeque::new(),
                finished: Vec::new(),
                end: None,
                last_poll: None,
                end_seen: false,
                report_fetched: false,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere must not take the page down with it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The arm's stack is coming up.
    pub(crate) fn arm_starting(&self, name: &str) {
        self.lock().starting = Some(name.to_string());
    }

    /// The arm's load starts at `start`.
    pub(crate) fn arm_begun(
        &self,
        name: &str,
        duration: Duration,
        counters: Arc<Counters>,
        start: Instant,
    ) {
        let mut s = self.lock();
        s.starting = None;
        s.samples.clear();
        let last = Snapshot::take(&counters);
        s.current = Some(Current {
            name: name.to_string(),
            duration,
            start,
            counters,
            last,
        });
    }

    /// The arm's load is over: its counts join the finished arms.
    pub(crate) fn arm_ended(&self) {
        let mut s = self.lock();
        if let Some(c) = s.current.take() {
            let [sent, admitted, rejected, errors] = Snapshot::take(&c.counters).counts;
            s.finished.push(ArmLine {
                name: c.name,
                sent,
                admitted,
                rejected,
                errors,
                verdict: None,
            });
        }
    }

    /// A sample of the running arm: what its counters did since the last.
    pub(crate) fn tick(&self) {
        let mut s = self.lock();
        let Some(c) = s.current.as_mut() else {
            return;
        };
        let now = Snapshot::take(&c.counters);
        let secs = (now.at - c.last.at).as_secs_f64().max(1e-3);
        let per_s = |i: usize| now.counts[i].saturating_sub(c.last.counts[i]) as f64 / secs;
        let recent: Vec<u64> = now
            .latency
            .iter()
            .zip(&c.last.latency)
            .map(|(n, l)| n.saturating_sub(*l))
            .collect();
        let ms = |q| latency_counts::quantile(&recent, q).map(|us| us as f64 / 1000.0);
        let sample = Sample {
            t_s: (now.at.saturating_duration_since(c.start)).as_secs_f64(),
            sent: per_s(0),
            admitted: per_s(1),
            rejected: per_s(2),
            errors: per_s(3),
            p50_ms: ms(0.5),
            p99_ms: ms(0.99),
        };
        c.last = now;
        if s.samples.len() == KEPT_SAMPLES {
            s.samples.pop_front();
        }
        s.samples.push_back(sample);
    }

    /// The run is judged: each arm's verdict, the gate and the report.
    pub(crate) fn run_ended(&self, summary: &Summary, report: Option<PathBuf>) {
        let mut s = self.lock();
        s.current = None;
        s.starting = None;
        for arm in &summary.arms {
            let verdict = crate::report::html::words::verdict(arm);
            match s.finished.iter_mut().find(|l| l.name == arm.name) {
                Some(line) => line.verdict = Some(verdict),
                None => s.finished.push(ArmLine {
                    name: arm.name.clone(),
                    sent: arm.requests.sent,
                    admitted: arm.requests.admitted,
                    rejected: arm.requests.rejected,
                    errors: arm.requests.errors + arm.requests.timeouts,
                    verdict: Some(verdict),
                }),
            }
        }
        let absolute = report
            .as_ref()
            .map(|p| std::fs::canonicalize(p).unwrap_or(p.clone()));
        let file_url = absolute
            .as_ref()
            .and_then(|abs| url::Url::from_file_path(abs).ok())
            .map(|u| u.to_string());
        s.end = Some(End {
            passed: summary.gate.passed && !summary.partial,
            partial: summary.partial,
            failures: summary.gate.failures.clone(),
            report_path: absolute.map(|p| p.display().to_string()),
            report_file_url: file_url,
            report,
        });
    }

    /// What `/status` answers (and a note that a page is watching).
    pub(crate) fn status(&self) -> Value {
        let mut s = self.lock();
        s.last_poll = Some(Instant::now());
        if s.end.is_some() {
            s.end_seen = true;
        }
        let arm = s.current.as_ref().map(|c| {
            let [sent, admitted, rejected, errors] = Snapshot::take(&c.counters).counts;
            let latest = s.samples.back();
            json!({
                "name": c.name,
                "index": s.arms.iter().position(|a| *a == c.name),
                "elapsed_s": c.start.elapsed().as_secs_f64().min(c.duration.as_secs_f64()),
                "duration_s": c.duration.as_secs_f64(),
                "sent": sent,
                "admitted": admitted,
                "rejected": rejected,
                "errors": errors,
                "p50_ms": latest.and_then(|l| l.p50_ms),
                "p99_ms": latest.and_then(|l| l.p99_ms),
            })
        });
        let state = match (&s.end, &s.current, &s.starting) {
            (Some(_), _, _) => "finished",
            (None, Some(_), _) => "running",
            (None, None, Some(_)) => "starting",
            (None, None, None) if s.finished.is_empty() => "preparing",
            // The last arm's probes and stack down, or the next one's start.
            (None, None, None) if s.finished.len() < s.arms.len() => "between",
            (None, None, None) => "judging",
        };
        json!({
            "scenario": s.scenario,
            "state": state,
            "arms": s.arms,
            "starting": s.starting,
            "arm": arm,
            "samples": s.samples,
            "finished": s.finished,
            "end": s.end,
        })
    }

    /// report.html, once the run ended with one (and a note it was fetched).
    pub(crate) fn report(&self) -> Option<PathBuf> {
        let mut s = self.lock();
        let path = s.end.as_ref()?.report.clone()?;
        s.report_fetched = true;
        Some(path)
    }

    /// Whether a page asked lately.
    pub(crate) fn watched(&self) -> bool {
        self.lock()
            .last_poll
            .is_some_and(|at| at.elapsed() < WATCHED_WITHIN)
    }

    /// Whether the pages have what they need once the run ended: the end
    /// itself, and the report when there is one.
    pub(crate) fn settled(&self) -> bool {
        let s = self.lock();
        let has_report = s.end.as_ref().is_some_and(|e| e.report.is_some());
        s.end_seen && (s.report_fetched || !has_report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_become_samples_and_finished_arms() {
        let board = Board::new("small", vec!["single".into(), "local".into()]);
        assert_eq!(board.status()["state"], "preparing");
        board.arm_starting("single");
        assert_eq!(board.status()["state"], "starting");
        let counters = Arc::new(Counters::default());
        board.arm_begun(
            "single",
            Duration::from_secs(2),
            counters.clone(),
            Instant::now(),
        );
        counters.done.fetch_add(10, Ordering::Relaxed);
        counters.admitted.fetch_add(4, Ordering::Relaxed);
        counters.rejected.fetch_add(6, Ordering::Relaxed);
        counters.latency.add_all([2_000u64; 10].into_iter());
        board.tick();
        let status = board.status();
        assert_eq!(status["state"], "running");
        assert_eq!(status["arm"]["sent"], 10);
        assert_eq!(status["arm"]["index"], 0);
        let sample = &status["samples"][0];
        assert!(sample["sent"].as_f64().unwrap() > 0.0, "{sample}");
        assert!(status["arm"]["p99_ms"].as_f64().unwrap() >= 2.0);
        board.arm_ended();
        let status = board.status();
        assert_eq!(status["state"], "between");
        assert_eq!(status["finished"][0]["admitted"], 4);
        assert!(!board.settled(), "not ended yet");
    }
}
