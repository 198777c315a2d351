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
    serve_from(Path::new("scenarios/metrics.toml"), arm, base)
}

/// `rlbench serve` of one arm of `scenario` on three ports from `base`.
fn serve_from(scenario: &Path, arm: &str, base: u16) -> Group {
    let mut group = spawn_group(
        Command::new(crate::common::bin())
            .args([
                "serve",
                &scenario.display().to_string(),
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

/// scripts/otlp/receiver.py on a free port: its process, the port, and the
/// data points it printed so far (one JSON object each).
fn otlp_receiver() -> (
    Group,
    u16,
    std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
) {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let pylib = Path::new(ROOT).join("scripts/otlp/pylib");
    assert!(
        pylib.is_dir(),
        "scripts/otlp/pylib is missing: scripts/test.sh installs it (scripts/otlp/install.sh)"
    );
    let mut child = Command::new("python3")
        .arg(Path::new(ROOT).join("scripts/otlp/receiver.py"))
        .env("PYTHONPATH", &pylib)
        .process_group(0)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("python3 starts");
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let group = Group(child);
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let port: u16 = first
        .strip_prefix("listening ")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("the receiver did not start: {first:?}"));
    let points = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = points.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let v: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
            sink.lock().unwrap().push(v);
        }
    });
    (group, port, points)
}

/// A POST to the reference API on loopback with `key`; the status line.
fn post(port: u16, key: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connects");
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = write!(
        s,
        "POST /api/transfers HTTP/1.0\r\nHost: 127.0.0.1\r\nX-Customer-Id: {key}\r\nContent-Length: 0\r\n\r\n"
    );
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.lines().next().unwrap_or_default().to_string()
}

/// `rlbench_requests_total` by (replica, decision) in a `/metrics` text.
fn requests_of(text: &str) -> std::collections::BTreeMap<(String, String), u64> {
    let label = |line: &str, name: &str| {
        let start = line.find(&format!("{name}=\""))? + name.len() + 2;
        Some(line[start..].split('"').next()?.to_string())
    };
    text.lines()
        .filter(|l| l.starts_with("rlbench_requests_total{"))
        .filter_map(|l| {
            let value = l.rsplit(' ').next()?.parse().ok()?;
            Some(((label(l, "replica")?, label(l, "decision")?), value))
        })
        .collect()
}

/// The latest `rlbench_requests` point the receiver got for each (replica,
/// decision), checking each point's description on the way.
fn exported(points: &[serde_json::Value]) -> std::collections::BTreeMap<(String, String), u64> {
    let mut out = std::collections::BTreeMap::new();
    for p in points.iter().filter(|p| p["name"] == "rlbench_requests") {
        assert_eq!(p["resource"]["service.name"], "reference-api", "{p}");
        assert_eq!(p["type"], "sum", "{p}");
        assert_eq!(p["monotonic"], true, "{p}");
        assert_eq!(p["temporality"], "cumulative", "{p}");
        let a = &p["attributes"];
        assert_eq!(a["mode"], "redis_lua", "{p}");
        assert_eq!(a["key_from"], "header", "{p}");
        assert_eq!(a["replica"], p["resource"]["service.instance.id"], "{p}");
        let key = (
            a["replica"].as_str().unwrap().to_string(),
            a["decision"].as_str().unwrap().to_string(),
        );
        out.insert(key, p["value"].as_u64().expect("a count"));
    }
    out
}

/// The replicas' metrics by OTLP: a real gRPC receiver, decoding them with
/// the OpenTelemetry project's own protobuf definitions
/// (scripts/otlp/receiver.py), gets for each replica the counts its
/// `/metrics` shows — the lossy variant's lossy counts too, since one
/// snapshot feeds both — and the last values when the replicas stop.
#[test]
fn otlp_exports_carry_what_each_replicas_metrics_shows() {
    let dir = tempfile::tempdir().unwrap();
    let (_receiver, port, points) = otlp_receiver();
    let scenario = std::fs::read_to_string(Path::new(ROOT).join("scenarios/metrics.toml"))
        .unwrap()
        .replace(
            "lossy_metrics = true",
            &format!(
                "lossy_metrics = true\notlp = {{ endpoint = \"http://127.0.0.1:{port}\", interval = \"200ms\" }}"
            ),
        );
    let path = dir.path().join("otlp.toml");
    std::fs::write(&path, scenario).unwrap();
    let base = three_free();
    let mut group = serve_from(&path, "lossy", base);
    let mut statuses = std::collections::BTreeMap::<String, u32>::new();
    for i in 0..45u16 {
        let status = post(base + i % 3, &format!("c-{}", i % 2));
        *statuses.entry(status).or_default() += 1;
    }
    assert!(
        statuses.keys().any(|s| s.contains(" 200 "))
            && statuses.keys().any(|s| s.contains(" 429 ")),
        "admits and rejects both: {statuses:?}"
    );
    let mut scraped = std::collections::BTreeMap::new();
    for p in base..base + 3 {
        scraped.extend(requests_of(&get(p, "/metrics")));
    }
    assert_eq!(
        scraped.len(),
        15,
        "five decisions of three replicas: {scraped:?}"
    );
    assert_eq!(scraped.values().sum::<u64>(), 45, "{scraped:?}");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = exported(&points.lock().unwrap());
        if now == scraped {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "OTLP never carried what /metrics shows:\n/metrics {scraped:?}\nOTLP     {now:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Stopped, the replicas send their last values: five more admits or
    // rejects reach the receiver though no interval ends after them.
    let _ = post(base, "c-late");
    let before = points.lock().unwrap().len();
    let pid = nix::unistd::Pid::from_raw(group.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let stopped = Instant::now() + Duration::from_secs(20);
    while group.0.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < stopped,
            "rlbench serve did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let last = exported(&points.lock().unwrap());
    assert_eq!(
        last.values().sum::<u64>(),
        46,
        "the request after the last scrape is in the last export ({} points before the stop, {} now): {last:?}",
        before,
        points.lock().unwrap().len()
    );
}
