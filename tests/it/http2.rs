//! HTTP/2 (`[target] http = "2"`, `attack --http`), against real servers
//! started here on free loopback ports: nginx over TLS (ALPN h2) and in
//! cleartext (prior knowledge), its access log saying which protocol each
//! request came in and on which connection — many requests share one —
//! judged exact as over HTTP/1.1; `auto` settles on HTTP/2 where TLS
//! offers it and on HTTP/1.1 where it does not; HTTP/2 asked of a server
//! whose TLS offers only HTTP/1.1 is refused before any load; and the reference API (`rlbench serve`) over h2c,
//! its rate-limit headers read as over HTTP/1.1.

use crate::common::{arm, free_port, run_scenario, summary, text};
use crate::external::{spawn_group, wait_listening, Group};
use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

struct Ports {
    tls: u16,
    cleartext: u16,
    http1: u16,
}

/// nginx: `/limited` behind one limit_req zone per server (10r/s burst 5
/// nodelay per X-Customer-Id), each server logging `protocol connection`
/// per request to `<port>.log` in `prefix`.
fn nginx(prefix: &Path, cert: &Path, key: &Path, p: &Ports) -> Group {
    let server = |i: usize, port: u16, listen: &str| {
        format!(
            "limit_req_zone $http_x_customer_id zone=z{i}:1m rate=10r/s;
    server {{
        listen 127.0.0.1:{port} {listen};
        ssl_certificate {cert};
        ssl_certificate_key {key};
        access_log {log} seen;
        location = /limited {{
            limit_req zone=z{i} burst=5 nodelay;
            root html;
        }}
    }}
    ",
            cert = cert.display(),
            key = key.display(),
            log = prefix.join(format!("{port}.log")).display(),
        )
    };
    let conf = format!(
        "worker_processes 1;
events {{ worker_connections 1024; }}
error_log stderr warn;
http {{
    log_format seen '$server_protocol $connection';
    limit_req_log_level info;
    {}{}{}
}}
",
        server(0, p.tls, "ssl http2"),
        server(1, p.cleartext, "http2"),
        server(2, p.http1, "ssl"),
    );
    crate::external::start_nginx(prefix, &conf, &[p.tls, p.cleartext, p.http1])
}

/// nginx on free ports with a certificate of the test's own: the
/// certificates' folder, nginx's prefix, the authority, the ports, nginx.
fn started() -> (
    tempfile::TempDir,
    tempfile::TempDir,
    std::path::PathBuf,
    Ports,
    Group,
) {
    let certs = tempfile::tempdir().unwrap();
    let (ca, cert, key) = crate::tls::certificates(certs.path());
    let prefix = tempfile::tempdir().unwrap();
    let p = Ports {
        tls: free_port(),
        cleartext: free_port(),
        http1: free_port(),
    };
    let nginx = nginx(prefix.path(), &cert, &key, &p);
    (certs, prefix, ca, p, nginx)
}

/// (requests logged, of them over HTTP/2, distinct connections).
fn logged(prefix: &Path, port: u16) -> (usize, usize, usize) {
    let text = std::fs::read_to_string(prefix.join(format!("{port}.log"))).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let h2 = lines.iter().filter(|l| l.starts_with("HTTP/2.0 ")).count();
    let connections: HashSet<&str> = lines.iter().filter_map(|l| l.split(' ').nth(1)).collect();
    (lines.len(), h2, connections.len())
}

/// `tls::attack` (4 customers at 50/s, judged as nginx's limit_req) on one URL.
fn attack(dir: &Path, url: &str, extra: &[&str]) -> std::process::Output {
    crate::tls::attack(dir, &[url.to_string()], extra)
}

/// Exact, every request answered: (sent, rejected).
fn exact(dir: &Path, out: &std::process::Output) -> (u64, u64) {
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let s = summary(&dir.join("out"));
    let a = arm(&s, "attack");
    assert_eq!(a["correctness"]["definite_violations"], 0, "{stdout}");
    assert_eq!(a["correctness"]["false_rejects"], 0, "{stdout}");
    assert_eq!(a["requests"]["errors"], 0, "{stdout}");
    let rejected = a["requests"]["rejected"].as_u64().unwrap();
    assert!(rejected > 0, "nginx limited nothing: {stdout}");
    (a["requests"]["sent"].as_u64().unwrap(), rejected)
}

#[test]
fn nginx_over_http2_is_judged_exact_on_shared_connections() {
    let (_certs, prefix, ca, p, _nginx) = started();
    let cacert = ca.to_str().unwrap();

    // Over TLS, HTTP/2 asked for.
    let dir = tempfile::tempdir().unwrap();
    let url = format!("https://127.0.0.1:{}/limited", p.tls);
    let (sent, _) = exact(
        dir.path(),
        &attack(dir.path(), &url, &["--cacert", cacert, "--http", "2"]),
    );
    let (requests, h2, connections) = logged(prefix.path(), p.tls);
    assert_eq!(
        (requests as u64, h2 as u64),
        (sent, sent),
        "every request over HTTP/2"
    );
    assert!(
        connections * 10 <= requests,
        "{connections} connections for {requests} requests: streams not shared"
    );

    // auto: TLS offers HTTP/2 and nginx takes it.
    let dir = tempfile::tempdir().unwrap();
    let (sent, _) = exact(
        dir.path(),
        &attack(dir.path(), &url, &["--cacert", cacert, "--http", "auto"]),
    );
    let (after, h2_after, _) = logged(prefix.path(), p.tls);
    assert_eq!(
        ((after - requests) as u64, (h2_after - h2) as u64),
        (sent, sent)
    );

    // Cleartext, prior knowledge (h2c), from a scenario.
    let url = format!("http://127.0.0.1:{}/limited", p.cleartext);
    let scenario = format!(
        r#"name = "h2c"
duration = "3s"
[target]
kind = "external"
urls = ["{url}"]
key_header = "X-Customer-Id"
limited_status = [503]
http = "2"
[policy]
preset = "nginx_limit_req"
rate = "10r/s"
burst = 5
nodelay = true
[load]
rate = 200
keys = 4
[[arms]]
name = "one-zone"
[arms.expect]
max_definite_violations = 0
max_false_reject_ratio = 0
"#
    );
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = run_scenario(dir.path(), &scenario, &[], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let s = summary(&dir.path().join("out"));
    let one = arm(&s, "one-zone");
    assert_eq!(one["requests"]["errors"], 0, "{stdout}");
    let (requests, h2, _) = logged(prefix.path(), p.cleartext);
    assert!(
        requests > 0 && h2 == requests,
        "{h2} of {requests} over HTTP/2"
    );

    // HTTP/2 where TLS offers only HTTP/1.1: refused before any load;
    // auto settles on HTTP/1.1 there.
    let url = format!("https://127.0.0.1:{}/limited", p.http1);
    let dir = tempfile::tempdir().unwrap();
    let out = attack(dir.path(), &url, &["--cacert", cacert, "--http", "2"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("does not speak HTTP/2"), "{stderr}");
    assert_eq!(logged(prefix.path(), p.http1).0, 0, "no load was sent");
    let dir = tempfile::tempdir().unwrap();
    let (sent, _) = exact(
        dir.path(),
        &attack(dir.path(), &url, &["--cacert", cacert, "--http", "auto"]),
    );
    let (requests, h2, _) = logged(prefix.path(), p.http1);
    assert_eq!((requests as u64, h2), (sent, 0), "over HTTP/1.1");
}

#[test]
fn the_reference_api_over_h2c_is_judged_with_its_headers() {
    let dir = tempfile::tempdir().unwrap();
    let base = free_port();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut serve = spawn_group(
        Command::new(crate::common::bin())
            .args([
                "serve",
                "scenarios/three-replicas.toml",
                "--arm",
                "single",
                "--port",
                &base.to_string(),
            ])
            .current_dir(root),
    );
    wait_listening(base, &mut serve.0);
    let scenario = std::fs::read_to_string(root.join("scenarios/external-api.toml"))
        .unwrap()
        .replace(
            r#"urls = ["http://127.0.0.1:18090", "http://127.0.0.1:18091", "http://127.0.0.1:18092"]"#,
            &format!("urls = [\"http://127.0.0.1:{base}\"]\nhttp = \"2\""),
        )
        .replace("duration = \"5s\"", "duration = \"3s\"");
    let (out, _) = run_scenario(dir.path(), &scenario, &[], &[]);
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(serve.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let s = summary(&dir.path().join("out"));
    let api = arm(&s, "api");
    assert_eq!(api["correctness"]["definite_violations"], 0, "{stdout}");
    assert_eq!(api["requests"]["errors"], 0, "{stdout}");
    let sent = api["requests"]["sent"].as_u64().unwrap();
    let h = &api["headers"];
    assert_eq!(
        h["conventions"]["ratelimit"]["present"].as_u64(),
        Some(sent),
        "{h}"
    );
    assert_eq!(h["remaining"]["contradicted"], 0, "{h}");
}

/// `--disable-keepalive` (`[target] keep_alive = false`): every request
/// over a TLS connection of its own — nginx logs as many connections as
/// requests — and still judged exact; with keep-alive a handful carry
/// them all.
#[test]
fn without_keep_alive_every_request_has_its_own_tls_connection() {
    let (_certs, prefix, ca, p, _nginx) = started();
    let cacert = ca.to_str().unwrap();
    let url = format!("https://127.0.0.1:{}/limited", p.http1);
    let dir = tempfile::tempdir().unwrap();
    let (sent, _) = exact(
        dir.path(),
        &attack(
            dir.path(),
            &url,
            &["--cacert", cacert, "--disable-keepalive"],
        ),
    );
    let (requests, _, connections) = logged(prefix.path(), p.http1);
    assert_eq!((requests as u64, connections as u64), (sent, sent));
    let dir = tempfile::tempdir().unwrap();
    let (sent, _) = exact(dir.path(), &attack(dir.path(), &url, &["--cacert", cacert]));
    let (after, _, all) = logged(prefix.path(), p.http1);
    assert_eq!((after - requests) as u64, sent);
    assert!(
        (all - connections) * 10 <= sent as usize,
        "{} connections for {sent} requests with keep-alive",
        all - connections
    );
    // Not with HTTP/2, whose streams share a connection by design.
    let out = attack(
        dir.path(),
        &url,
        &["--cacert", cacert, "--http", "2", "--disable-keepalive"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

/// `probe` over TLS and HTTP/2 as `attack` speaks them (`--cacert`,
/// `--http auto`): without the authority it stops before any load, in
/// one line; with it, the limiter is found over HTTP/2 (nginx's log says
/// so), and the starter it writes keeps the authority and the version —
/// `run` of it speaks HTTP/2 and judges nginx exact.
#[test]
fn a_probe_over_tls_and_http2_writes_a_starter_that_speaks_them() {
    let (_certs, prefix, ca, p, _nginx) = started();
    let url = format!("https://127.0.0.1:{}/limited", p.tls);
    let dir = tempfile::tempdir().unwrap();
    let out = crate::common::rlbench(&["probe", &url, "--http", "auto"], dir.path());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("certificate"), "{stderr}");
    assert_eq!(logged(prefix.path(), p.tls).0, 0, "no load was sent");

    let out = crate::common::rlbench(
        &[
            "probe",
            &url,
            "--cacert",
            ca.to_str().unwrap(),
            "--http",
            "auto",
            "--limited-status",
            "503",
            "--write",
            "over-h2",
        ],
        dir.path(),
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let (probed, h2, _) = logged(prefix.path(), p.tls);
    assert!(probed > 0 && h2 == probed, "{h2} of {probed} over HTTP/2");
    let starter = std::fs::read_to_string(dir.path().join("over-h2.toml")).unwrap();
    assert!(starter.contains("http = \"2\""), "{starter}");
    assert!(
        starter.contains(&format!("ca = {}", serde_json::to_string(&ca).unwrap())),
        "{starter}"
    );
    let run = crate::common::rlbench(
        &[
            "run",
            "over-h2.toml",
            "--duration",
            "4s",
            "--out",
            "out",
            "-q",
        ],
        dir.path(),
    );
    let stdout = text(&run.stdout);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{starter}\n{stdout}{}",
        text(&run.stderr)
    );
    let s = summary(&dir.path().join("out"));
    let a = arm(&s, "api");
    assert_eq!(a["correctness"]["definite_violations"], 0, "{stdout}");
    assert_eq!(a["correctness"]["false_rejects"], 0, "{stdout}");
    assert_eq!(a["requests"]["errors"], 0, "{stdout}");
    let (after, h2_after, _) = logged(prefix.path(), p.tls);
    assert!(
        after > probed && h2_after - h2 == after - probed,
        "the starter's run over HTTP/2: {} of {}",
        h2_after - h2,
        after - probed
    );
}
