//! An arm's requests over time: per bucket of send time, how they fared
//! (outcome, HTTP status class), their latency percentiles and the
//! generator's lag. Buckets start at 20 ms; when a run outgrows
//! [`POINTS`] of them they widen to the next round width (20 ms, 0.1 s,
//! 0.2 s, 1 s, 2 s, 10 s, …), whole buckets merged exactly, so a chart
//! has between a fifth of [`POINTS`] and [`POINTS`] of them for any run
//! of a second or more, and the page stays small.

use crate::events::{Event, Outcome};
use crate::store::page_json::{Series, MAX_BUCKETS};

/// Buckets a series holds at most before they widen (within the page's
/// [`MAX_BUCKETS`]): enough for a chart's detail, few enough to read.
pub(crate) const POINTS: usize = 250;
const _: () = assert!(POINTS <= MAX_BUCKETS);

/// The widths buckets go through (µs), each a whole multiple of the one
/// before (at most five times it); past the last they double.
const WIDTHS_US: [u64; 12] = [
    20_000,
    100_000,
    200_000,
    1_000_000,
    2_000_000,
    10_000_000,
    20_000_000,
    60_000_000,
    120_000_000,
    600_000_000,
    1_200_000_000,
    3_600_000_000,
];

/// The width after `width_us`.
fn wider(width_us: u64) -> u64 {
    WIDTHS_US
        .iter()
        .copied()
        .find(|&w| w > width_us)
        .unwrap_or(width_us * 2)
}
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
            width_us: WIDTHS_US[0],
            buckets: Vec::new(),
        }
    }
}

impl Collector {
    pub(crate) fn add(&mut self, e: &Event) {
        let mut i = (e.sent_us / self.width_us) as usize;
        while i >= POINTS {
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

    /// Widens the buckets to the next width, merging each run of them
    /// the new width holds (a whole number: see [`WIDTHS_US`]).
    fn widen(&mut self) {
        let next = wider(self.width_us);
        let by = (next / self.width_us) as usize;
        self.width_us = next;
        let old = std::mem::take(&mut self.buckets);
        for group in old.chunks(by) {
            let mut b = group[0].clone();
            for other in &group[1..] {
                b.merge(other);
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
    fn requests_are_counted_in_the_bucket_they_were_sent_in() {
        let mut c = Collector::default();
        c.add(&event(0.005, Outcome::Admitted, 200, 1));
        c.add(&event(0.019, Outcome::Rejected, 429, 2));
        c.add(&event(0.05, Outcome::Error, 503, 3));
        c.add(&event(0.055, Outcome::Timeout, 0, 900));
        let s = c.finish();
        assert_eq!(s.bucket_s, 0.02);
        assert_eq!(s.admitted, [1, 0, 0]);
        assert_eq!(s.rejected, [1, 0, 0]);
        assert_eq!(s.errors, [0, 0, 1]);
        assert_eq!(s.timeouts, [0, 0, 1]);
        let names: Vec<&str> = s.status.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["2xx", "429", "5xx", "none"]);
        assert_eq!(s.status[3].1, [0, 0, 1]);
        assert_eq!(s.max_ms[1], 0.0, "an empty bucket has no latency");
        assert!((s.max_ms[2] - 900.0).abs() < 9.0, "{}", s.max_ms[2]);
        assert!((s.p50_ms[0] - 1.0).abs() < 0.02, "{}", s.p50_ms[0]);
    }

    #[test]
    fn every_run_of_a_second_or_more_gets_a_fifth_of_the_points_at_least() {
        // From one second to two days, each width's edges and between.
        let mut seconds = vec![1.0, 2.0, 3.0, 4.99, 5.0, 5.01, 7.0, 24.9, 25.1];
        seconds.extend((1..40).map(|i| 1.37f64.powi(i)));
        for run_s in seconds {
            let mut c = Collector::default();
            let mut t = 0.0;
            while t < run_s {
                c.add(&event(t, Outcome::Admitted, 200, 1));
                t += (run_s / 997.0).max(0.001);
            }
            let s = c.finish();
            let n = s.admitted.len();
            assert!(
                (POINTS / 5..=POINTS).contains(&n),
                "{run_s} s: {n} buckets of {} s",
                s.bucket_s
            );
            assert!(
                WIDTHS_US.contains(&((s.bucket_s * 1e6).round() as u64)) || s.bucket_s > 3600.0,
                "{run_s} s: a round width, not {} s",
                s.bucket_s
            );
        }
    }

    #[test]
    fn a_long_run_gets_wider_buckets_and_keeps_every_request() {
        let mut c = Collector::default();
        // 1,800 s: 20 ms, 0.1, 0.2, 1, 2, then 10 s buckets, 180 of them.
        let seconds = 1_800u64;
        for s in 0..seconds {
            c.add(&event(s as f64 + 0.5, Outcome::Admitted, 200, 1));
        }
        let s = c.finish();
        assert_eq!(s.bucket_s, 10.0);
        assert_eq!(s.admitted.len(), 180);
        assert_eq!(s.admitted.iter().sum::<u64>(), seconds);
        assert!(s.admitted.iter().all(|&n| n == 10));
    }
}
