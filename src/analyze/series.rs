//! An arm's requests over time: per bucket of send time, how they fared
//! (outcome, HTTP status class), their latency percentiles and the
//! generator's lag. Buckets start at one second; when a run outgrows
//! [`MAX_BUCKETS`] of them they double in width, pairs merged exactly, so
//! the page stays small for any length of run.

use crate::events::{Event, Outcome};
use crate::store::page::{Series, MAX_BUCKETS};
use hdrhistogram::Histogram;

/// Status classes in the order the page stacks them.
const CLASSES: [&str; 6] = ["2xx", "429", "4xx", "5xx", "other", "none"];

fn class(status: u16) -> usize {
    match status {
        0 => 5,
        200..=299 => 0,
        429 => 1,
        400..=499 => 2,
        500..=599 => 3,
        _ => 4,
    }
}

#[derive(Clone)]
struct Bucket {
    outcomes: [u64; 4],
    classes: [u64; CLASSES.len()],
    latency: Histogram<u32>,
    lag_max_us: u64,
}

impl Bucket {
    fn new() -> Self {
        Bucket {
            outcomes: [0; 4],
            classes: [0; CLASSES.len()],
            // Two significant figures: a chart's resolution, a quarter of
            // the summary's histograms' size.
            latency: Histogram::new_with_bounds(1, 3_600_000_000, 2)
                .expect("static histogram bounds are valid"),
            lag_max_us: 0,
        }
    }

    fn merge(&mut self, other: &Bucket) {
        for (a, b) in self.outcomes.iter_mut().zip(other.outcomes) {
            *a += b;
        }
        for (a, b) in self.classes.iter_mut().zip(other.classes) {
            *a += b;
        }
        let _ = self.latency.add(&other.latency);
        self.lag_max_us = self.lag_max_us.max(other.lag_max_us);
    }
}

/// Collects an arm's series, one event at a time.
pub(crate) struct Collector {
    width_us: u64,
    buckets: Vec<Bucket>,
}

impl Default for Collector {
    fn default() -> Self {
        Collector {
            width_us: 1_000_000,
            buckets: Vec::new(),
        }
    }
}

impl Collector {
    pub(crate) fn add(&mut self, e: &Event) {
        let mut i = (e.sent_us / self.width_us) as usize;
        while i >= MAX_BUCKETS {
            self.widen();
            i = (e.sent_us / self.width_us) as usize;
        }
        if i >= self.buckets.len() {
            self.buckets.resize_with(i + 1, Bucket::new);
        }
        let b = &mut self.buckets[i];
        let o = match e.outcome {
            Outcome::Admitted => 0,
            Outcome::Rejected => 1,
            Outcome::Error => 2,
            Outcome::Timeout => 3,
        };
        b.outcomes[o] += 1;
        b.classes[class(e.status)] += 1;
        b.latency.saturating_record(e.latency_us().max(1));
        b.lag_max_us = b.lag_max_us.max(e.lag_us());
    }

    /// Doubles the buckets' width, merging each pair.
    fn widen(&mut self) {
        self.width_us *= 2;
        let old = std::mem::take(&mut self.buckets);
        for pair in old.chunks(2) {
            let mut b = pair[0].clone();
            if let Some(next) = pair.get(1) {
                b.merge(next);
            }
            self.buckets.push(b);
        }
    }

    pub(crate) fn finish(self) -> Series {
        let ms = |us: u64| (us as f64 / 10.0).round() / 100.0;
        let column = |f: &dyn Fn(&Bucket) -> u64| self.buckets.iter().map(f).collect::<Vec<_>>();
        let at = |q: f64| {
            self.buckets
                .iter()
                .map(|b| {
                    if b.latency.is_empty() {
                        0.0
                    } else {
                        ms(b.latency.value_at_quantile(q))
                    }
                })
                .collect::<Vec<_>>()
        };
        Series {
            bucket_s: self.width_us as f64 / 1e6,
            admitted: column(&|b| b.outcomes[0]),
            rejected: column(&|b| b.outcomes[1]),
            errors: column(&|b| b.outcomes[2]),
            timeouts: column(&|b| b.outcomes[3]),
            status: CLASSES
                .iter()
                .enumerate()
                .map(|(i, name)| (name.to_string(), column(&|b| b.classes[i])))
                .filter(|(_, counts)| counts.iter().any(|&n| n > 0))
                .collect(),
            p50_ms: at(0.5),
            p99_ms: at(0.99),
            max_ms: self
                .buckets
                .iter()
                .map(|b| {
                    if b.latency.is_empty() {
                        0.0
                    } else {
                        ms(b.latency.max())
                    }
                })
                .collect(),
            lag_max_ms: self.buckets.iter().map(|b| ms(b.lag_max_us)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Outcome;

    fn event(sent_s: f64, outcome: Outcome, status: u16, latency_ms: u64) -> Event {
        let sent_us = (sent_s * 1e6) as u64;
        Event {
            seq: 0,
            key: "k".into(),
            replica: 0,
            intended_us: sent_us,
            sent_us,
            done_us: sent_us + latency_ms * 1_000,
            status,
            outcome,
            error: None,
            advertised: None,
            retry_of: None,
            agent: 0,
        }
    }

    #[test]
    fn requests_are_counted_in_the_second_they_were_sent() {
        let mut c = Collector::default();
        c.add(&event(0.2, Outcome::Admitted, 200, 1));
        c.add(&event(0.9, Outcome::Rejected, 429, 2));
        c.add(&event(2.5, Outcome::Error, 503, 3));
        c.add(&event(2.6, Outcome::Timeout, 0, 900));
        let s = c.finish();
        assert_eq!(s.bucket_s, 1.0);
        assert_eq!(s.admitted, [1, 0, 0]);
        assert_eq!(s.rejected, [1, 0, 0]);
        assert_eq!(s.errors, [0, 0, 1]);
        assert_eq!(s.timeouts, [0, 0, 1]);
        let names: Vec<&str> = s.status.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["2xx", "429", "5xx", "none"]);
        assert_eq!(s.status[3].1, [0, 0, 1]);
        assert_eq!(s.max_ms[1], 0.0, "an empty second has no latency");
        assert!((s.max_ms[2] - 900.0).abs() < 9.0, "{}", s.max_ms[2]);
        assert!((s.p50_ms[0] - 1.0).abs() < 0.02, "{}", s.p50_ms[0]);
    }

    #[test]
    fn a_long_run_gets_wider_buckets_and_keeps_every_request() {
        let mut c = Collector::default();
        let seconds = 3 * MAX_BUCKETS as u64;
        for s in 0..seconds {
            c.add(&event(s as f64 + 0.5, Outcome::Admitted, 200, 1));
        }
        let s = c.finish();
        assert!(s.admitted.len() <= MAX_BUCKETS, "{}", s.admitted.len());
        assert_eq!(s.bucket_s, 4.0);
        assert_eq!(s.admitted.iter().sum::<u64>(), seconds);
        assert!(s.admitted[..s.admitted.len() - 1].iter().all(|&n| n == 4));
    }
}
