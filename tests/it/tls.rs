//! `https://` targets against real nginx and HAProxy over TLS, started
//! here on free loopback ports with certificates this test makes (rcgen)
//! in its own temporary folder: `attack --cacert` judges one limit_req
//! zone exact, twice in a row, and two zones behind round-robin a fake
//! global limit; without the authority the certificate is refused before
//! any load, in one line; HAProxy keyed on the client address (`src`) is
//! exact with each key from an address of its own, and its pair caught.

use crate::common::{free_port, rlbench, summary, text};
use crate::external::{spawn_group, wait_listening, Group};
use std::path::{Path, PathBuf};
use std::process::Command;

/// An authority and a certificate for 127.0.0.1 it signed: (ca, cert, key).
pub(crate) fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "rlbench test authority");
    let ca = params.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &rcgen::Issuer::from_params(&params, &ca_key))
        .unwrap();
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    (
        write("ca.pem", ca.pem()),
        write("server.pem", cert.pem()),
        write("server.key", key.serialize_pem()),
    )
}

/// nginx serving /limited over TLS on `ports`, one limit_req zone per
/// port: 10 requests per second per X-Customer-Id, burst 5, nodelay.
fn nginx_tls(prefix: &Path, cert: &Path, key: &Path, ports: [u16; 2]) -> Group {
    let servers: String = ports
        .iter()
        .enumerate()
        .map(|(i, port)| {
            format!(
                "limit_req_zone $http_x_customer_id zone=z{i}:1m rate=10r/s;
    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        location = /limited {{
            limit_req zone=z{i} burst=5 nodelay;
            root html;
        }}
    }}
    ",
                cert = cert.display(),
                key = key.display()
            )
        })
        .collect();
    let conf = format!(
        "worker_processes 2;\nevents {{ worker_connections 1024; }}\nerror_log stderr warn;\n\
         http {{\n    access_log off;\n    limit_req_log_level info;\n    {servers}\n}}\n"
    );
    crate::external::start_nginx(prefix, &conf, &ports)
}

/// `rlbench attack` on `urls` for 4 s, 4 customers at 50 requests/s each,
/// judged as nginx's limit_req; extra flags after.
pub(crate) fn attack(dir: &Path, urls: &[String], extra: &[&str]) -> std::process::Output {
    let mut args: Vec<&str> = vec!["attack"];
    args.extend(urls.iter().map(String::as_str));
    args.extend([
        "--rate",
        "200",
        "-d",
        "4s",
        "--keys",
        "4",
        "--key-header",
        "X-Customer-Id",
        "--limited-status",
        "503",
        "--policy",
        r#"preset = "nginx_limit_req", rate = "10r/s", burst = 5, nodelay = true"#,
        "--out",
        "out",
        "-q",
    ]);
    args.extend(extra);
    rlbench(&args, dir)
}

/// A certificate made the usual way, `openssl req -x509 -newkey …`: self
/// signed, `basicConstraints CA:TRUE` (OpenSSL's default for a request
/// made a certificate), served by nginx itself and given as `--cacert`
/// (curl takes it so): that very certificate pinned, the load sent and
/// judged exact. A different certificate of the same making is refused
/// in words, before any load.
#[test]
fn a_self_signed_certificate_made_by_openssl_is_taken_as_curl_takes_it() {
    let certs = tempfile::tempdir().unwrap();
    let made = |name: &str| {
        let (cert, key) = (
            certs.path().join(format!("{name}.pem")),
            certs.path().join(format!("{name}.key")),
        );
        let out = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            ])
            .args([
                "-subj",
                "/CN=127.0.0.1",
                "-addext",
                "subjectAltName=IP:127.0.0.1",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .output()
            .expect("openssl runs (Debian: apt-get install openssl)");
        assert!(out.status.success(), "{}", text(&out.stderr));
        (cert, key)
    };
    let (cert, key) = made("own");
    let shown = Command::new("openssl")
        .args(["x509", "-noout", "-ext", "basicConstraints", "-in"])
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        text(&shown.stdout).contains("CA:TRUE"),
        "{}",
        text(&shown.stdout)
    );
    let prefix = tempfile::tempdir().unwrap();
    let ports = [free_port(), free_port()];
    let _nginx = nginx_tls(prefix.path(), &cert, &key, ports);
    let url = format!("https://127.0.0.1:{}/limited", ports[0]);
    let dir = tempfile::tempdir().unwrap();
    let out = attack(
        dir.path(),
        std::slice::from_ref(&url),
        &["--cacert", cert.to_str().unwrap()],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let s = summary(&dir.path().join("out"));
    let a = crate::common::arm(&s, "attack");
    assert_eq!(a["requests"]["errors"], 0, "{stdout}");
    assert!(a["requests"]["rejected"].as_u64().unwrap() > 0, "{stdout}");

    let (other, _) = made("other");
    let dir = tempfile::tempdir().unwrap();
    let out = attack(dir.path(), &[url], &["--cacert", other.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("is itself a certificate authority (CA:TRUE)"),
        "{stderr}"
    );
    assert!(!stderr.contains("OtherError"), "{stderr}");
}

#[test]
fn nginx_over_tls_is_exact_twice_and_its_pair_is_caught() {
    let certs = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificates(certs.path());
    let prefix = tempfile::tempdir().unwrap();
    let ports = [free_port(), free_port()];
    let _nginx = nginx_tls(prefix.path(), &cert, &key, ports);
    let url = |p: u16| format!("https://127.0.0.1:{p}/limited");
    let cacert = ca.to_str().unwrap();

    for round in ["first", "second"] {
        let dir = tempfile::tempdir().unwrap();
        let out = attack(dir.path(), &[url(ports[0])], &["--cacert", cacert]);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{round}: {stdout}{stderr}");
        let s = summary(&dir.path().join("out"));
        let a = crate::common::arm(&s, "attack");
        assert_eq!(
            a["correctness"]["definite_violations"], 0,
            "{round}: {stdout}"
        );
        assert_eq!(a["correctness"]["false_rejects"], 0, "{round}: {stdout}");
        assert_eq!(a["requests"]["errors"], 0, "{round}: {stdout}");
        assert!(
            a["requests"]["rejected"].as_u64().unwrap() > 0,
            "{round}: nginx did not limit: {stdout}"
        );
    }

    // Two zones, each counting alone, behind round-robin: twice too loose.
    let dir = tempfile::tempdir().unwrap();
    let out = attack(
        dir.path(),
        &[url(ports[0]), url(ports[1])],
        &["--cacert", cacert],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    let s = summary(&dir.path().join("out"));
    let a = crate::common::arm(&s, "attack");
    assert!(
        a["correctness"]["definite_violations"].as_u64().unwrap() > 0,
        "{stdout}"
    );

    // A scenario names its authority beside itself.
    let scenario = format!(
        r#"name = "tls"
duration = "3s"
[target]
kind = "external"
urls = ["{}"]
key_header = "X-Customer-Id"
limited_status = [503]
ca = "ca.pem"
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
"#,
        url(ports[0])
    );
    let path = crate::common::write(certs.path(), "tls.toml", &scenario);
    let dir = tempfile::tempdir().unwrap();
    let out = rlbench(
        &["run", path.to_str().unwrap(), "--out", "out", "-q"],
        dir.path(),
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let s = summary(&dir.path().join("out"));
    let one = crate::common::arm(&s, "one-zone");
    assert!(
        one["requests"]["rejected"].as_u64().unwrap() > 0,
        "{stdout}"
    );
    assert_eq!(one["requests"]["errors"], 0, "{stdout}");

    // Without the authority: refused before any load, one line, exit 3;
    // with --insecure it is sent (and said to be unchecked).
    let dir = tempfile::tempdir().unwrap();
    let out = attack(dir.path(), &[url(ports[0])], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("cannot speak TLS with") && stderr.contains("--cacert"),
        "{stderr}"
    );
    assert!(!dir.path().join("out/summary.json").exists());
    let out = attack(dir.path(), &[url(ports[0])], &["--insecure"]);
    let stderr = text(&out.stderr);
    assert!(matches!(out.status.code(), Some(0)), "{stderr}");
    assert!(stderr.contains("not checked"), "{stderr}");
}

/// HAProxy over TLS (`bind … ssl crt`), its stick table keyed on the
/// client address (`src`), as deployments key it: started here with a
/// certificate of the test's own.
fn haproxy_tls(dir: &Path, pem: &Path, port: u16) -> Group {
    assert!(
        Command::new("haproxy").arg("-v").output().is_ok(),
        "haproxy is not on PATH: sudo apt-get install haproxy (scripts/test.sh installs it)"
    );
    let cfg = format!(
        "global
    maxconn 4096
defaults
    mode http
    timeout connect 1s
    timeout client 10s
    timeout server 10s
frontend limited
    bind 127.0.0.1:{port} ssl crt {pem}
    stick-table type ip size 100k expire 10s store http_req_rate(1s)
    http-request track-sc0 src
    http-request deny deny_status 429 if {{ sc_http_req_rate(0) gt 10 }}
    http-request return status 200 content-type text/plain string \"ok\\n\"
",
        pem = pem.display()
    );
    let path = dir.join(format!("haproxy-{port}.cfg"));
    std::fs::write(&path, cfg).unwrap();
    let mut group =
        spawn_group(Command::new("haproxy").args(["-db", "-f", path.to_str().unwrap()]));
    wait_listening(port, &mut group.0);
    group
}

#[test]
fn haproxy_keyed_on_the_client_address_over_tls_is_exact_and_its_pair_caught() {
    let certs = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificates(certs.path());
    // HAProxy takes the certificate and its key in one file.
    let pem = certs.path().join("haproxy.pem");
    let both = std::fs::read_to_string(&cert).unwrap() + &std::fs::read_to_string(&key).unwrap();
    std::fs::write(&pem, both).unwrap();
    let ports = [free_port(), free_port()];
    let _one = haproxy_tls(certs.path(), &pem, ports[0]);
    let _two = haproxy_tls(certs.path(), &pem, ports[1]);
    let url = |p: u16| format!("\"https://127.0.0.1:{p}/limited\"");
    let scenario = |urls: &str, expect: &str| {
        format!(
            r#"name = "haproxy-tls"
duration = "5s"
seed = 17
[target]
kind = "external"
urls = [{urls}]
limited_status = [429]
ca = "{ca}"
[policy]
algorithm = "sliding_counter"
limit = 10
window = "1s"
count_rejected = true
[load]
rate = 200
keys = 5
timeout = "1s"
key = {{ source_ip = "127.0.0.0/16" }}
[[arms]]
name = "api"
[arms.expect]
{expect}
"#,
            ca = ca.display()
        )
    };
    let exact = "max_definite_violations = 0\nmax_false_reject_ratio = 0\nmax_error_ratio = 0";
    let dir = tempfile::tempdir().unwrap();
    let (out, _) =
        crate::common::run_scenario(dir.path(), &scenario(&url(ports[0]), exact), &[], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let s = summary(&dir.path().join("out"));
    let a = crate::common::arm(&s, "api");
    assert!(a["requests"]["rejected"].as_u64().unwrap() > 0, "{stdout}");
    assert_eq!(a["correctness"]["false_rejects"], 0, "{stdout}");

    let pair = format!("{}, {}", url(ports[0]), url(ports[1]));
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = crate::common::run_scenario(dir.path(), &scenario(&pair, exact), &[], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    let s = summary(&dir.path().join("out"));
    let c = &crate::common::arm(&s, "api")["correctness"];
    assert!(c["definite_violations"].as_u64().unwrap() > 0, "{stdout}");
}
