//! Secrets stay secret in a distributed run: a coordinator with a password
//! (the limiter's Redis too, for the redis_lua arm), given to every process
//! through the environment. The password appears nowhere in the process
//! list, the run folder, the terminal, or the coordinator's keys once the
//! run is over — and every key rlbench keeps there expires.

use crate::common::{text, write, Running};
use crate::distributed::TOKEN;
use rlbench::testing::RedisServer;
use std::path::Path;
use std::time::{Duration, Instant};

/// The password in a `redis://:PASSWORD@…` URL.
fn password_of(url: &str) -> String {
    url.split_once("://:")
        .and_then(|(_, rest)| rest.split_once('@'))
        .map(|(p, _)| p.to_string())
        .unwrap()
}

/// The command lines of every process, joined.
fn process_list() -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            all.push_str(&String::from_utf8_lossy(&cmd).replace('\0', " "));
            all.push('\n');
        }
    }
    all
}

/// Every file under `dir` that holds `needle`.
fn files_holding(dir: &Path, needle: &str, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            files_holding(&p, needle, out);
        } else if let Ok(bytes) = std::fs::read(&p) {
            if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                out.push(p.display().to_string());
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinators_password_is_nowhere_to_be_seen() {
    let coordinator = RedisServer::start("rlbench-test").await.unwrap();
    let url = coordinator.url.clone();
    let password = password_of(&url);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let agents: Vec<Running> = (0..2)
        .map(|i| {
            let log = std::fs::File::create(d.join(format!("agent-{i}.log"))).unwrap();
            Running(Some(
                std::process::Command::new(crate::common::bin())
                    .args(["agent", "--name", &format!("agent-{i}")])
                    .env("RLBENCH_COORDINATOR", &url)
                    .env("RLBENCH_COORDINATOR_TOKEN", TOKEN)
                    .current_dir(d)
                    .stdout(log.try_clone().unwrap())
                    .stderr(log)
                    .spawn()
                    .unwrap(),
            ))
        })
        .collect();
    let scenario = format!(
        r#"
name = "secret"
duration = "3s"
seed = 2

[policy]
algorithm = "sliding_log"
limit = 10
window = "1s"

[cluster]
replicas = 2

[redis]
url = "{url}"
timeout = "1s"

[load]
rate = 100
keys = 2

[distributed]
agents = 2
max_clock_uncertainty = "200ms"

[[arms]]
name = "lua"
mode = "redis_lua"
clock = "redis"
[arms.expect]
max_definite_violations = 0
"#
    );
    let path = write(d, "secret.toml", &scenario);
    let child = std::process::Command::new(crate::common::bin())
        .args(["run", path.to_str().unwrap(), "--out", "out"])
        .env("RLBENCH_COORDINATOR", &url)
        .env("RLBENCH_COORDINATOR_TOKEN", TOKEN)
        .current_dir(d)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // While it runs, the process list holds neither the password nor the token.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let ps = process_list();
        assert!(
            !ps.contains(&password),
            "the password is in the process list"
        );
        assert!(!ps.contains(TOKEN), "the token is in the process list");
        std::thread::sleep(Duration::from_millis(250));
    }
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    for (what, said) in [("stdout", &stdout), ("stderr", &stderr)] {
        assert!(!said.contains(&password), "the password on {what}");
    }
    for i in 0..2 {
        let log = std::fs::read_to_string(d.join(format!("agent-{i}.log"))).unwrap();
        assert!(!log.contains(&password), "the password in agent-{i}'s log");
    }
    let mut holding = Vec::new();
    files_holding(&d.join("out"), &password, &mut holding);
    assert!(
        holding.is_empty(),
        "the password in the run folder: {holding:?}"
    );
    let copy = std::fs::read_to_string(d.join("out/scenario.toml")).unwrap();
    assert!(copy.contains("redis://:***@"), "{copy}");
    // The coordinator's keys: none holds the password, each expires.
    drop(agents);
    let mut con = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("rlbench:coord:*")
        .query(&mut con)
        .unwrap();
    for key in &keys {
        let ttl: i64 = redis::cmd("TTL").arg(key).query(&mut con).unwrap();
        assert!(ttl > 0, "{key} never expires (TTL {ttl})");
        let dump: Vec<u8> = redis::cmd("DUMP").arg(key).query(&mut con).unwrap();
        assert!(
            !dump
                .windows(password.len())
                .any(|w| w == password.as_bytes()),
            "{key} holds the password"
        );
    }
}

/// A coordinator reached over TLS (`rediss://`): a redis-server on a TLS
/// port only, its certificate signed by an authority the test makes;
/// controller and agents check it against that authority
/// (RLBENCH_COORDINATOR_CA) and the run goes end to end. Without the
/// authority, the certificate is refused (exit 3).
#[test]
fn a_tls_coordinator_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // An authority, and a certificate for 127.0.0.1 it signs.
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "rlbench test authority");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &rcgen::Issuer::from_params(&ca_params, &ca_key))
        .unwrap();
    let ca = write(d, "ca.pem", &ca_cert.pem());
    let cert_file = write(d, "redis.pem", &cert.pem());
    let key_file = write(d, "redis.key", &key.serialize_pem());
    let port = crate::common::free_port();
    let password = "tls-pa55word-for-the-test";
    let _redis = Running(Some(
        std::process::Command::new("redis-server")
            .args([
                "--port",
                "0",
                "--tls-port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .args(["--tls-cert-file", cert_file.to_str().unwrap()])
            .args(["--tls-key-file", key_file.to_str().unwrap()])
            .args(["--tls-ca-cert-file", ca.to_str().unwrap()])
            .args(["--tls-auth-clients", "no", "--requirepass", password])
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                d.to_str().unwrap(),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("redis-server runs (scripts/test.sh installs it)"),
    ));
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the TLS redis-server never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let url = format!("rediss://:{password}@127.0.0.1:{port}");
    let env = |cmd: &mut std::process::Command, with_ca: bool| {
        cmd.env("RLBENCH_COORDINATOR", &url)
            .env("RLBENCH_COORDINATOR_TOKEN", TOKEN)
            .current_dir(d);
        if with_ca {
            cmd.env("RLBENCH_COORDINATOR_CA", &ca);
        }
    };
    // Without the authority: the certificate is not trusted.
    let mut agent = std::process::Command::new(crate::common::bin());
    agent.args(["agent", "--name", "untrusting", "--once"]);
    env(&mut agent, false);
    let refused = agent.output().unwrap();
    assert_eq!(refused.status.code(), Some(3), "{}", text(&refused.stderr));
    assert!(
        !text(&refused.stderr).contains(password),
        "{}",
        text(&refused.stderr)
    );
    let _agents: Vec<Running> = (0..2)
        .map(|i| {
            let log = std::fs::File::create(d.join(format!("tls-{i}.log"))).unwrap();
            let mut cmd = std::process::Command::new(crate::common::bin());
            cmd.args(["agent", "--name", &format!("tls-{i}"), "--once"])
                .stdout(log.try_clone().unwrap())
                .stderr(log);
            env(&mut cmd, true);
            Running(Some(cmd.spawn().unwrap()))
        })
        .collect();
    let scenario = r#"
name = "tls"
duration = "2s"
seed = 4

[policy]
algorithm = "sliding_log"
limit = 10
window = "1s"

[cluster]
replicas = 1

[load]
rate = 100
keys = 2

[[arms]]
name = "single"
mode = "local"
[arms.expect]
max_definite_violations = 0
max_false_reject_ratio = 0
"#;
    let path = write(d, "tls.toml", scenario);
    let mut run = std::process::Command::new(crate::common::bin());
    run.args([
        "run",
        path.to_str().unwrap(),
        "--agents",
        "2",
        "--out",
        "out",
        "-q",
        "--max-clock-uncertainty",
        "200ms",
    ]);
    env(&mut run, true);
    let out = run.output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(!stdout.contains(password) && !stderr.contains(password));
    let s = crate::common::summary(&d.join("out"));
    let rows = crate::common::arm(&s, "single")["per_agent"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(rows, 2);
}
