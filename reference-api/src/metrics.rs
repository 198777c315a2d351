//! A replica's account of itself, as one snapshot of [`Sample`]s: its
//! decisions by replica, mode, key source and outcome, and what its limits
//! and its Redis path did (keys refused, connections refused, fallbacks,
//! lease calls). The same snapshot is rendered for Prometheus on
//! `/metrics` (OpenMetrics text through prometheus-client) and observed by
//! the OTLP exporter when one is configured (`otlp.rs`), so the two never
//! tell different stories.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

/// What a family's values are: totals that only grow, or levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

/// One family of series: its name (a counter's samples get `_total`
/// appended on `/metrics`), what it counts, and its kind.
pub struct MetricFamily {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
}

/// Every family a replica may report; a snapshot holds series of these
/// only (the OTLP exporter registers one instrument for each).
pub const FAMILIES: &[MetricFamily] = &[
    MetricFamily {
        name: REQUESTS,
        help: "Requests answered by POST /api/transfers, by decision: admitted (200), rejected (429), bad_request (400), unauthorized (401), too_large (413)",
        kind: Kind::Counter,
    },
    MetricFamily {
        name: LIVE_KEYS,
        help: "Keys whose state this replica holds (local mode)",
        kind: Kind::Gauge,
    },
    MetricFamily {
        name: KEYS_REFUSED,
        help: "Requests rejected because their key was new and max_keys keys were live (local mode)",
        kind: Kind::Counter,
    },
    MetricFamily {
        name: CONNECTIONS_REFUSED,
        help: "Connections closed as accepted: max_connections were open",
        kind: Kind::Counter,
    },
    MetricFamily {
        name: REDIS_ERRORS,
        help: "Decisions taken without Redis (it failed or did not answer in time), by the decision on_redis_error made",
        kind: Kind::Counter,
    },
    MetricFamily {
        name: LEASE_CALLS,
        help: "Calls to Redis for a lease of admits (redis_batched), by whether admits were granted",
        kind: Kind::Counter,
    },
];

pub const REQUESTS: &str = "rlbench_requests";
pub const LIVE_KEYS: &str = "rlbench_live_keys";
pub const KEYS_REFUSED: &str = "rlbench_keys_refused";
pub const CONNECTIONS_REFUSED: &str = "rlbench_connections_refused";
/// Decisions taken without Redis; `/metrics` names its samples
/// `rlbench_redis_errors_total`.
pub const REDIS_ERRORS: &str = "rlbench_redis_errors";
pub const LEASE_CALLS: &str = "rlbench_lease_calls";

/// One series' value at the snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    pub family: &'static str,
    pub labels: Vec<(&'static str, String)>,
    pub value: u64,
}

/// The decisions a replica counts, one counter each (`decision` label).
#[derive(Debug, Default)]
pub struct Decisions {
    pub admitted: AtomicU64,
    pub rejected: AtomicU64,
    pub bad_request: AtomicU64,
    pub unauthorized: AtomicU64,
    pub too_large: AtomicU64,
}

impl Decisions {
    /// Each counter with its `decision` label value.
    pub fn each(&self) -> [(&'static str, u64); 5] {
        let load = |c: &AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
        [
            ("admitted", load(&self.admitted)),
            ("rejected", load(&self.rejected)),
            ("bad_request", load(&self.bad_request)),
            ("unauthorized", load(&self.unauthorized)),
            ("too_large", load(&self.too_large)),
        ]
    }
}

/// Prometheus' text for `samples` (OpenMetrics 1.0: `# EOF` last), every
/// family of [`FAMILIES`] that has a series, in that order.
pub fn render(samples: &[Sample]) -> String {
    let mut registry = Registry::default();
    for family in FAMILIES {
        let mine = samples.iter().filter(|s| s.family == family.name);
        let labels = |s: &Sample| -> Vec<(String, String)> {
            s.labels
                .iter()
                .map(|(k, v)| ((*k).to_string(), v.clone()))
                .collect()
        };
        match family.kind {
            Kind::Counter => {
                let f = Family::<Vec<(String, String)>, Counter>::default();
                let mut any = false;
                for s in mine {
                    f.get_or_create(&labels(s)).inc_by(s.value);
                    any = true;
                }
                if any {
                    registry.register(family.name, family.help, f);
                }
            }
            Kind::Gauge => {
                let f = Family::<Vec<(String, String)>, Gauge>::default();
                let mut any = false;
                for s in mine {
                    f.get_or_create(&labels(s))
                        .set(i64::try_from(s.value).unwrap_or(i64::MAX));
                    any = true;
                }
                if any {
                    registry.register(family.name, family.help, f);
                }
            }
        }
    }
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = encode(&mut text, &registry);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(family: &'static str, labels: &[(&'static str, &str)], value: u64) -> Sample {
        Sample {
            family,
            labels: labels.iter().map(|(k, v)| (*k, v.to_string())).collect(),
            value,
        }
    }

    #[test]
    fn counters_get_total_and_gauges_do_not_and_empty_families_are_left_out() {
        let text = render(&[
            sample(REQUESTS, &[("replica", "r0"), ("decision", "admitted")], 7),
            sample(REQUESTS, &[("replica", "r0"), ("decision", "rejected")], 0),
            sample(LIVE_KEYS, &[("replica", "r0")], 3),
        ]);
        assert!(
            text.contains("rlbench_requests_total{replica=\"r0\",decision=\"admitted\"} 7\n"),
            "{text}"
        );
        assert!(
            text.contains("rlbench_requests_total{replica=\"r0\",decision=\"rejected\"} 0\n"),
            "{text}"
        );
        assert!(text.contains("# TYPE rlbench_requests counter\n"), "{text}");
        assert!(
            text.contains("rlbench_live_keys{replica=\"r0\"} 3\n"),
            "{text}"
        );
        assert!(!text.contains(REDIS_ERRORS), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn label_values_are_escaped() {
        let text = render(&[sample(REQUESTS, &[("replica", "a\"b\\c\nd")], 1)]);
        assert!(
            text.contains(r#"rlbench_requests_total{replica="a\"b\\c\nd"} 1"#),
            "{text}"
        );
    }

    #[test]
    fn every_family_named_is_known() {
        for f in FAMILIES {
            assert!(f.name.starts_with("rlbench_") && !f.name.ends_with("_total"));
        }
        let names: std::collections::HashSet<_> = FAMILIES.iter().map(|f| f.name).collect();
        assert_eq!(names.len(), FAMILIES.len());
    }
}
