//! The limiter's own metrics held against the trace (`[target] metrics`):
//! the shipped scenario reads its replicas' `/metrics` (exact, and the
//! lossy variant caught); then a real Prometheus server, started here on
//! a free loopback port, scrapes two served stacks — one exact, one lossy
//! — and rlbench reads their counts through Prometheus' HTTP API and by
//! scraping the replicas itself: the same verdicts either way.

use crate::common::{arm, free_port, has, run_scenario, summary, text};
use crate::external::{spawn_group, wait_listening, Group};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn discrepancy(s: &serde_json::Value, name: &str) -> f64 {
    let m = &arm(s, name)["limiter_metrics"];
    m["discrepancy"]
        .as_f64()
        .unwrap_or_else(|| panic!("{name}: no discrepancy in {m}"))
}

#[test]
fn the_replicas_own_counts_are_exact_and_the_lossy_variants_are_caught() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = std::fs::read_to_string(Path::new(ROOT).join("scenarios/metrics.toml"))
        .unwrap()
        .replace("duration = \"4s\"", "duration = \"3s\"");
    let (out, _) = run_scenario(dir.path(), &scenario, &[], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let s = summary(&dir.path().join("out"));
    assert_eq!(discrepancy(&s, "exact"), 0.0, "{stdout}");
    let exact = &arm(&s, "exact")["limiter_metrics"];
    assert_eq!(
        exact["admitted"]["limiter"].as_f64(),
        arm(&s, "exact")["requests"]["admitted"].as_f64(),
        "{exact}"
    );
    assert!(discrepancy(&s, "lossy") >= 1.0, "{stdout}");
    let lossy = &arm(&s, "lossy")["limiter_metrics"];
    assert!(
        lossy["admitted"]["limiter"].as_f64() < lossy["admitted"]["trace"].as_f64(),
        "{lossy}"
    );
    assert!(
        stdout.contains("metrics of exact: its own counters"),
        "{stdout}"
    );
    assert!(stdout.contains("metrics of lossy:"), "{stdout}");
    assert!(stdout.contains("off by at least"), "{stdout}");
    // A per-second sample of the counts for each second of the load.
    assert!(
        exact["samples"].as_array().is_some_and(|a| a.len() >= 2),
        "{exact}"
    );
    let page = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(
        page.contains("id=\"metrics-lossy\""),
        "the page says it too"
    );
}

/// `rlbench serve` of one arm of scenarios/metrics.toml on three ports from `base`.
fn serve(arm: &str, base: u16) -> Group {
    let mut group = spawn_group(
        Command::new(crate::common::bin())
            .args([
                "serve",
                "scenarios/metrics.toml",
                "--arm",
                arm,
                "--port",
                &base.to_string(),
            ])
            .current_dir(ROOT),
    );
    for port in base..base + 3 {
        wait_listening(port, &mut group.0);
    }
    group
}

/// Three consecutive ports free now.
fn three_free() -> u16 {
    for _ in 0..50 {
        let base = free_port();
        if base < u16::MAX - 3
            && (1..3).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).is_ok())
        {
            return base;
        }
    }
    panic!("no three consecutive free ports");
}

/// Prometheus scraping `targets` every second, on a free port.
fn prometheus(dir: &Path, targets: &[u16]) -> (Group, u16) {
    assert!(
        has("prometheus"),
        "prometheus is missing: scripts/test.sh installs it (Debian: apt-get install prometheus)"
    );
    let list: Vec<String> = targets
        .iter()
        .map(|p| format!("\"127.0.0.1:{p}\""))
        .collect();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
         scrape_configs:\n  - job_name: replicas\n    static_configs:\n      - targets: [{}]\n",
        list.join(", ")
    );
    std::fs::write(dir.join("prometheus.yml"), config).unwrap();
    let port = free_port();
    let mut group = spawn_group(Command::new("prometheus").args([
        &format!("--config.file={}", dir.join("prometheus.yml").display()),
        &format!("--storage.tsdb.path={}", dir.join("tsdb").display()),
        &format!("--web.listen-address=127.0.0.1:{port}"),
    ]));
    wait_listening(port, &mut group.0);
    // Ready, and every target scraped once.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let up = get(port, "/api/v1/query?query=count(up%3D%3D1)");
        if up.contains(&format!("\"{}\"]", targets.len())) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus never saw its targets up: {up}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    (group, port)
}

/// A GET on loopback, the whole answer as text.
fn get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

fn external(exact: u16, lossy: u16, metrics: &str) -> String {
    let urls = |base: u16| {
        (base..base + 3)
            .map(|p| format!("\"http://127.0.0.1:{p}/api/transfers\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        r#"name = "metrics-held"
duration = "3s"
seed = 7

[target]
kind = "external"
urls = [{exact_urls}]
method = "POST"
key_header = "X-Customer-Id"
metrics = {metrics}

[policy]
algorithm = "fixed_window"
limit = 10
window = "1s"

[load]
schedule = "poisson"
rate = 500
keys = 20
fanout = "round_robin"

[[arms]]
name = "exact"
[arms.expect]
max_definite_violations = 0
max_metrics_discrepancy = 0

[[arms]]
name = "lossy"
urls = [{lossy_urls}]
[arms.expect]
max_definite_violations = 0
min_metrics_discrepancy = 1
"#,
        exact_urls = urls(exact),
        lossy_urls = urls(lossy),
    )
}

#[test]
fn prometheus_and_a_direct_scrape_hold_the_same_counts_against_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let exact = three_free();
    let _exact = serve("exact", exact);
    let lossy = three_free();
    let _lossy = serve("lossy", lossy);
    let ports: Vec<u16> = (exact..exact + 3).chain(lossy..lossy + 3).collect();
    let (_prometheus, port) = prometheus(dir.path(), &ports);

    // Through Prometheus: the series of both stacks summed, each arm's
    // load rising only its own.
    let through = format!(
        r#"{{ prometheus = "http://127.0.0.1:{port}", admitted = 'rlbench_requests_total{{decision="admitted"}}', rejected = 'rlbench_requests_total{{decision="rejected"}}' }}"#
    );
    let run = dir.path().join("prometheus");
    std::fs::create_dir(&run).unwrap();
    let (out, _) = run_scenario(&run, &external(exact, lossy, &through), &[], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let s = summary(&run.join("out"));
    assert_eq!(discrepancy(&s, "exact"), 0.0, "{stdout}");
    assert!(discrepancy(&s, "lossy") >= 1.0, "{stdout}");
    assert!(
        stdout.contains(&format!("Prometheus at http://127.0.0.1:{port}")),
        "{stdout}"
    );

    // Scraped directly: every replica of both stacks.
    let urls: Vec<String> = ports
        .iter()
        .map(|p| format!("\"http://127.0.0.1:{p}/metrics\""))
        .collect();
    let direct = format!(
        r#"{{ urls = [{}], admitted = 'rlbench_requests_total{{decision="admitted"}}', rejected = 'rlbench_requests_total{{decision="rejected"}}' }}"#,
        urls.join(", ")
    );
    let run = dir.path().join("direct");
    std::fs::create_dir(&run).unwrap();
    let (out, _) = run_scenario(&run, &external(exact, lossy, &direct), &[], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let s = summary(&run.join("out"));
    assert_eq!(discrepancy(&s, "exact"), 0.0, "{stdout}");
    assert!(discrepancy(&s, "lossy") >= 1.0, "{stdout}");
}

#[test]
fn counters_that_cannot_be_read_fail_a_gate_on_them_and_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let exact = three_free();
    let _exact = serve("exact", exact);
    // Nothing listens on `closed`: the counters are not there to read.
    let closed = free_port();
    let scenario = external(
        exact,
        exact,
        &format!(r#"{{ url = "http://127.0.0.1:{closed}/metrics", admitted = 'x' }}"#),
    )
    .replace("min_metrics_discrepancy = 1", "max_metrics_discrepancy = 0");
    let (out, _) = run_scenario(dir.path(), &scenario, &[], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("could not be read"), "{stdout}");
    let s = summary(&dir.path().join("out"));
    assert!(arm(&s, "exact")["limiter_metrics"]["discrepancy"].is_null());
    // The trace's verdict stands on its own.
    assert_eq!(arm(&s, "exact")["correctness"]["definite_violations"], 0);
}
