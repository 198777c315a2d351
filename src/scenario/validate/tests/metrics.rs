//! `[target] metrics`: where the limiter's counters are read and which
//! series; the reference API's own by default; bounds on the discrepancy
//! only where counters are read; every mistake one line at its place.

use super::super::super::parse;
use super::external::EXTERNAL;
use super::{error_of, GOOD};
use crate::scenario::spec::MetricsSource;

fn reference(metrics: &str) -> String {
    GOOD.replace(
        "[policy]",
        &format!("[target]\nkind = \"reference\"\nmetrics = {metrics}\n\n[policy]"),
    )
}

fn external(metrics: &str) -> String {
    EXTERNAL.replace(
        "limited_status",
        &format!("metrics = {metrics}\nlimited_status"),
    )
}

#[test]
fn the_reference_api_reads_its_replicas_counters_unless_told() {
    let s = parse("s.toml", &reference("{}")).unwrap();
    let m = s.metrics.unwrap();
    assert_eq!(m.source, MetricsSource::Replicas);
    assert_eq!(
        m.admitted.unwrap().to_string(),
        r#"rlbench_requests_total{decision="admitted"}"#
    );
    assert_eq!(
        m.rejected.unwrap().to_string(),
        r#"rlbench_requests_total{decision="rejected"}"#
    );
    assert_eq!(parse("s.toml", GOOD).unwrap().metrics, None);
    let s = parse(
        "s.toml",
        &reference(r#"{ prometheus = "http://127.0.0.1:9090", admitted = 'a{x="1"}' }"#),
    )
    .unwrap();
    let m = s.metrics.unwrap();
    assert!(matches!(m.source, MetricsSource::Prometheus(_)));
    assert_eq!(m.rejected, None, "only what is named is read");
}

#[test]
fn an_external_target_names_where_and_which_series() {
    let s = parse(
        "s.toml",
        &external(r#"{ urls = ["http://127.0.0.1:9100/metrics", "http://[::1]:9101/metrics"], rejected = 'limited_total' }"#),
    )
    .unwrap();
    let m = s.metrics.unwrap();
    assert!(matches!(&m.source, MetricsSource::Scrape(u) if u.len() == 2));
    assert_eq!(m.admitted, None);
    for (metrics, says) in [
        ("{ admitted = 'a' }", "metrics needs url, urls or prometheus"),
        (
            "{ url = \"http://127.0.0.1:1/metrics\" }",
            "metrics needs admitted or rejected",
        ),
        (
            "{ url = \"http://127.0.0.1:1/m\", prometheus = \"http://127.0.0.1:2\", admitted = 'a' }",
            "one of url, urls and prometheus",
        ),
        (
            "{ url = \"https://127.0.0.1:1/m\", admitted = 'a' }",
            "read over http://",
        ),
        (
            "{ url = \"http://10.1.2.3:1/m\", admitted = 'a' }",
            "metrics:",
        ),
        (
            "{ prometheus = \"http://127.0.0.1:9090/api/v1/query\", admitted = 'a' }",
            "base URL",
        ),
        (
            "{ url = \"http://127.0.0.1:1/m\", admitted = 'sum(a)' }",
            "only {label",
        ),
        (
            "{ url = \"http://127.0.0.1:1/m\", admitted = 'a{b=~\"c\"}' }",
            "regular-expression",
        ),
        ("{ urls = [], admitted = 'a' }", "at least one URL"),
        ("{ scrape = \"x\" }", "unknown field `scrape`"),
    ] {
        let e = error_of(&external(metrics));
        assert!(e.contains(says), "{metrics}: {e}");
        assert!(e.starts_with("s.toml:"), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

#[test]
fn a_bound_on_the_discrepancy_needs_counters_to_read_and_lossy_metrics_is_the_reference_apis() {
    let bound = GOOD.replace(
        "max_over_admission_ratio = 1.05",
        "max_over_admission_ratio = 1.05\nmax_metrics_discrepancy = 0",
    );
    let e = error_of(&bound);
    assert!(e.contains("needs [target] metrics"), "{e}");
    let s = parse(
        "s.toml",
        &reference("{}").replace(
            "max_over_admission_ratio = 1.05",
            "max_over_admission_ratio = 1.05\nmax_metrics_discrepancy = 0",
        ),
    )
    .unwrap();
    assert!(s.arms[0]
        .expect
        .iter()
        .any(|e| e.figure == crate::gate::Figure::MetricsDiscrepancy));
    let lossy = GOOD.replace(
        "mode = \"local\"\nreplicas = 1",
        "mode = \"local\"\nreplicas = 1\nlossy_metrics = true",
    );
    assert!(parse("s.toml", &lossy).unwrap().arms[0].lossy_metrics);
    let e = error_of(&EXTERNAL.replace("name = \"both\"", "name = \"both\"\nlossy_metrics = true"));
    assert!(
        e.contains("lossy_metrics configures the reference API"),
        "{e}"
    );
}

#[test]
fn otlp_names_a_collectors_grpc_port_and_an_interval_on_the_reference_apis_arms() {
    let with = |otlp: &str| {
        GOOD.replace(
            "mode = \"local\"\nreplicas = 1",
            &format!("mode = \"local\"\nreplicas = 1\notlp = {otlp}"),
        )
    };
    let s = parse("s.toml", &with(r#"{ endpoint = "http://127.0.0.1:4317" }"#)).unwrap();
    let otlp = s.arms[0].otlp.clone().unwrap();
    assert_eq!(otlp.endpoint, "http://127.0.0.1:4317");
    assert_eq!(otlp.interval_ms, 10_000, "10 s unless told");
    let s = parse(
        "s.toml",
        &with(r#"{ endpoint = "http://collector.monitoring:4317/", interval = "250ms" }"#),
    )
    .unwrap();
    assert_eq!(s.arms[0].otlp.as_ref().unwrap().interval_ms, 250);
    assert_eq!(parse("s.toml", GOOD).unwrap().arms[0].otlp, None);
    for bad in [
        "https://127.0.0.1:4317",
        "127.0.0.1:4317",
        "http://127.0.0.1",
        "http://:4317",
        "http://127.0.0.1:0",
        "http://127.0.0.1:99999",
        "http://127.0.0.1:4317/v1/metrics",
        "http://u@127.0.0.1:4317",
    ] {
        let e = error_of(&with(&format!("{{ endpoint = \"{bad}\" }}")));
        assert!(
            e.contains("otlp endpoint: expected http://HOST:PORT"),
            "{bad}: {e}"
        );
        assert!(e.starts_with("s.toml:"), "{e}");
    }
    for bad in ["50ms", "2h"] {
        let e = error_of(&with(&format!(
            "{{ endpoint = \"http://127.0.0.1:4317\", interval = \"{bad}\" }}"
        )));
        assert!(e.contains("otlp interval: from 100ms to 1h"), "{bad}: {e}");
    }
    let e = error_of(&with(
        r#"{ endpoint = "http://127.0.0.1:4317", every = "1s" }"#,
    ));
    assert!(e.contains("every"), "{e}");
    let e = error_of(&EXTERNAL.replace(
        "name = \"both\"",
        "name = \"both\"\notlp = { endpoint = \"http://127.0.0.1:4317\" }",
    ));
    assert!(e.contains("otlp configures the reference API"), "{e}");
}
