//! The statistics primitives every figure is made of: outcome counts,
//! HDR histograms of latency and service time (µs), and their usual
//! percentiles in milliseconds.

use crate::events::{Event, Outcome};
use hdrhistogram::Histogram;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Counts {
    pub sent: u64,
    pub admitted: u64,
    pub rejected: u64,
    pub errors: u64,
    pub timeouts: u64,
}

impl Counts {
    pub(crate) fn add(&mut self, outcome: Outcome) {
        self.sent += 1;
        match outcome {
            Outcome::Admitted => self.admitted += 1,
            Outcome::Rejected => self.rejected += 1,
            Outcome::Error => self.errors += 1,
            Outcome::Timeout => self.timeouts += 1,
        }
    }

    pub(crate) fn error_ratio(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            (self.errors + self.timeouts) as f64 / self.sent as f64
        }
    }
}

/// First attempts and retries apart (`[load] retry`): what callers got,
/// beside what the limiter was asked.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Tries {
    /// First attempts: the requests the schedule (or the workers) made.
    pub first: u64,
    pub retries: u64,
    /// Admitted at the first attempt.
    pub first_admitted: u64,
    /// Admitted at any attempt (a chain ends at its admit, so one per
    /// request at most).
    pub admitted: u64,
}

impl Tries {
    pub(crate) fn add(&mut self, e: &Event) {
        let admitted = e.outcome == Outcome::Admitted;
        if e.retry_of.is_none() {
            self.first += 1;
            self.first_admitted += u64::from(admitted);
        } else {
            self.retries += 1;
        }
        self.admitted += u64::from(admitted);
    }
}

/// Milliseconds at the usual percentiles.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Percentiles {
    pub(crate) fn of(h: &Histogram<u64>) -> Self {
        let ms = |us: u64| us as f64 / 1_000.0;
        if h.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
        }
    }
}

/// Latency from the intended send time and service time from the actual
/// one, kept apart (µs).
#[derive(Clone, Debug)]
pub(crate) struct Histograms {
    pub latency: Histogram<u64>,
    pub service: Histogram<u64>,
}

impl Histograms {
    pub(crate) fn empty() -> Self {
        Self::new()
    }

    pub(crate) fn new() -> Self {
        Histograms {
            latency: histogram(),
            service: histogram(),
        }
    }

    /// Adds another's counts (both 1 µs to 1 hour, 3 digits: exact).
    pub(crate) fn add(&mut self, other: &Histograms) {
        self.latency
            .add(&other.latency)
            .expect("histograms of the same bounds add");
        self.service
            .add(&other.service)
            .expect("histograms of the same bounds add");
    }

    pub(crate) fn record(&mut self, e: &Event) {
        self.latency.saturating_record(e.latency_us().max(1));
        self.service
            .saturating_record(e.done_us.saturating_sub(e.sent_us).max(1));
    }
}

pub(crate) fn histogram() -> Histogram<u64> {
    // 1 µs to 1 hour at 3 significant digits.
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static histogram bounds are valid")
}
