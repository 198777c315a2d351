//! The limiter's own counts held against the trace. [`Tally`] adds up
//! what each counter series rose by across the readings of an arm (a
//! series that went down was reset — a restarted replica — and counts
//! from zero again, as Prometheus' `increase` reads it, without its
//! extrapolation). [`held`] then states how far those counts are from any
//! the trace allows: the trace knows the requests answered admitted or
//! limited, and the rest (errors, timeouts, other statuses) may have been
//! counted either way or not at all. So the limiter's admitted count is
//! exact when it lies in `[admitted seen, admitted seen + undecided]`; the
//! figure is its distance from that interval — a bound: no correct count
//! is ever off, and an off count is off by at least that much.

use super::error::TallyError;
use crate::store::records::MetricsRecord;
use crate::store::summary::{HeldCount, LimiterMetrics};
use std::collections::BTreeMap;

/// The largest count a reading or a record read back may hold (more is a
/// damaged record or a hostile answer, not a counter).
pub(crate) const MAX_COUNT: f64 = 1e15;

/// Each series' latest value, and what all of them rose by since the
/// first reading.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    last: BTreeMap<String, f64>,
    started: bool,
    pub increase: f64,
    pub resets: u64,
}

impl Tally {
    /// Takes one reading (series id → value). The first only sets where
    /// each series starts; a series first seen later started at zero.
    pub(crate) fn add(&mut self, reading: &BTreeMap<String, f64>) -> Result<(), TallyError> {
        for (id, &v) in reading {
            if !(v.is_finite() && (0.0..=MAX_COUNT).contains(&v)) {
                return Err(TallyError {
                    series: id.clone(),
                    value: v,
                });
            }
            let prev = self.last.insert(id.clone(), v);
            if !self.started {
                continue;
            }
            match prev {
                Some(p) if v >= p => self.increase += v - p,
                Some(_) => {
                    self.resets += 1;
                    self.increase += v;
                }
                None => self.increase += v,
            }
        }
        self.started = true;
        Ok(())
    }
}

/// What the trace saw of the decisions the counters count.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Seen {
    pub admitted: u64,
    pub rejected: u64,
    /// Sent without an admit or a limit for answer.
    pub undecided: u64,
}

/// The distance of `limiter` from `[seen, seen + undecided]`.
pub(crate) fn off(limiter: f64, seen: u64, undecided: u64) -> f64 {
    let low = seen as f64;
    let high = low + undecided as f64;
    if limiter < low {
        low - limiter
    } else if limiter > high {
        limiter - high
    } else {
        0.0
    }
}

/// The record's counts (bounded: it is read back from disk) held against
/// what the trace saw.
pub(crate) fn held(record: &MetricsRecord, seen: Seen) -> LimiterMetrics {
    let bounded = |v: Option<f64>| v.filter(|v| v.is_finite() && (0.0..=MAX_COUNT).contains(v));
    let count = |selector: &Option<String>, limiter: Option<f64>, trace: u64| {
        let selector = selector.clone()?;
        let limiter = bounded(limiter)?;
        Some(HeldCount {
            selector,
            limiter,
            trace,
            undecided: seen.undecided,
            off: off(limiter, trace, seen.undecided),
        })
    };
    let mut error = record.error.clone();
    let admitted = count(&record.admitted_selector, record.admitted, seen.admitted);
    let rejected = count(&record.rejected_selector, record.rejected, seen.rejected);
    let read =
        |selector: &Option<String>, held: &Option<HeldCount>| selector.is_none() || held.is_some();
    if error.is_none()
        && (!read(&record.admitted_selector, &admitted)
            || !read(&record.rejected_selector, &rejected))
    {
        error = Some("the record holds no count for a selector it names".into());
    }
    if error.is_none() && admitted.is_none() && rejected.is_none() {
        error = Some("no selector was read".into());
    }
    let discrepancy = error.is_none().then(|| {
        admitted.as_ref().map_or(0.0, |h| h.off) + rejected.as_ref().map_or(0.0, |h| h.off)
    });
    LimiterMetrics {
        source: record.source.chars().take(300).collect(),
        admitted,
        rejected,
        discrepancy,
        resets: record.resets,
        error: error.map(|e| e.chars().take(300).collect()),
        samples: record
            .samples
            .iter()
            .take(crate::store::records::MAX_METRICS_SAMPLES)
            .filter(|s| s.t_s.is_finite() && (0.0..1e9).contains(&s.t_s))
            .map(|s| crate::store::records::MetricsSample {
                t_s: s.t_s,
                admitted: bounded(s.admitted),
                rejected: bounded(s.rejected),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn a_tally_adds_rises_counts_new_series_from_zero_and_resets_from_zero() {
        let mut t = Tally::default();
        t.add(&reading(&[("a", 10.0), ("b", 5.0)])).unwrap();
        assert_eq!(t.increase, 0.0);
        t.add(&reading(&[("a", 15.0), ("b", 5.0), ("c", 2.0)]))
            .unwrap();
        assert_eq!(t.increase, 7.0);
        // b restarted and counted 3 since; a missing from this reading.
        t.add(&reading(&[("b", 3.0)])).unwrap();
        assert_eq!((t.increase, t.resets), (10.0, 1));
        t.add(&reading(&[("a", 16.0), ("b", 4.0)])).unwrap();
        assert_eq!(t.increase, 12.0);
        assert!(t.add(&reading(&[("a", f64::NAN)])).is_err());
        assert!(t.add(&reading(&[("a", -1.0)])).is_err());
        assert!(t.add(&reading(&[("a", 1e16)])).is_err());
    }

    #[test]
    fn a_count_within_what_the_trace_allows_is_exact_and_outside_is_off_by_its_distance() {
        // Must pass: exact, and anywhere the undecided requests allow.
        assert_eq!(off(100.0, 100, 0), 0.0);
        assert_eq!(off(100.0, 95, 5), 0.0);
        assert_eq!(off(95.0, 95, 5), 0.0);
        // Must fail: one short, one over.
        assert_eq!(off(99.0, 100, 0), 1.0);
        assert_eq!(off(101.0, 95, 5), 1.0);
        assert_eq!(off(0.0, 7, 3), 7.0);
    }

    fn record(admitted: Option<f64>, rejected: Option<f64>) -> MetricsRecord {
        MetricsRecord {
            source: "test".into(),
            admitted_selector: Some("a".into()),
            rejected_selector: Some("r".into()),
            admitted,
            rejected,
            ..Default::default()
        }
    }

    #[test]
    fn the_discrepancy_adds_both_counts_and_is_absent_when_anything_is_unread() {
        let seen = Seen {
            admitted: 50,
            rejected: 40,
            undecided: 2,
        };
        let exact = held(&record(Some(51.0), Some(40.0)), seen);
        assert_eq!(exact.discrepancy, Some(0.0));
        let lossy = held(&record(Some(45.0), Some(43.0)), seen);
        assert_eq!(lossy.discrepancy, Some(6.0));
        assert_eq!(lossy.admitted.as_ref().unwrap().off, 5.0);
        assert_eq!(held(&record(Some(50.0), None), seen).discrepancy, None);
        assert_eq!(
            held(&record(Some(f64::INFINITY), Some(40.0)), seen).discrepancy,
            None
        );
        let failed = MetricsRecord {
            error: Some("refused".into()),
            ..record(Some(50.0), Some(40.0))
        };
        assert_eq!(held(&failed, seen).discrepancy, None);
        let none = MetricsRecord {
            admitted_selector: None,
            rejected_selector: None,
            ..record(None, None)
        };
        assert!(held(&none, seen).error.is_some());
        let only_admits = MetricsRecord {
            rejected_selector: None,
            ..record(Some(50.0), None)
        };
        assert_eq!(held(&only_admits, seen).discrepancy, Some(0.0));
    }
}
