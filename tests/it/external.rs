//! External targets, end to end: the shipped scenarios against real nginx
//! processes (started and stopped here, on free loopback ports) and against
//! the reference API served by `rlbench serve`, plus an unreachable target.

use crate::common;

use common::{arm, free_port, run_scenario, text, Running};
use serde_json::Value;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn shipped(name: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join("scenarios").join(name)).unwrap()
}

/// A base port with `n` free ports from it.
fn free_ports(n: u16) -> u16 {
    for _ in 0..100 {
        let base = free_port();
        let held: Vec<_> = (0..n)
            .map_while(|i| {
                base.checked_add(i)
                    .and_then(|p| TcpListener::bind(("127.0.0.1", p)).ok())
            })
            .collect();
        if held.len() == n as usize {
            return base;
        }
    }
    panic!("no {n} consecutive free ports");
}

pub(crate) fn wait_listening(port: u16, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the server exited before listening on {port}: {status}");
        }
        assert!(Instant::now() < deadline, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A process group of our own, killed (all of it) when dropped — also
/// when the test panics.
pub(crate) struct Group(pub(crate) Child);

impl Drop for Group {
    fn drop(&mut self) {
        let pgid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

pub(crate) fn spawn_group(cmd: &mut Command) -> Group {
    use std::os::unix::process::CommandExt;
    Group(
        cmd.process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starts"),
    )
}

/// nginx with the shipped config, its servers on `ports` (for 18080...).
fn nginx(prefix: &Path, ports: [u16; 3]) -> Group {
    let conf = on_ports(
        &std::fs::read_to_string(Path::new(ROOT).join("scenarios/nginx/nginx.conf")).unwrap(),
        ports,
    );
    start_nginx(prefix, &conf, &ports)
}

/// nginx on `conf` (written to `prefix`, with `html/limited` beside it),
/// running until dropped, once it listens on every one of `ports`.
pub(crate) fn start_nginx(prefix: &Path, conf: &str, ports: &[u16]) -> Group {
    assert!(
        Command::new("nginx").arg("-v").output().is_ok(),
        "nginx is not installed (Debian: apt-get install nginx-light; .ci/run installs it)"
    );
    std::fs::create_dir_all(prefix.join("html")).unwrap();
    std::fs::write(prefix.join("nginx.conf"), conf).unwrap();
    std::fs::copy(
        Path::new(ROOT).join("scenarios/nginx/html/limited"),
        prefix.join("html/limited"),
    )
    .unwrap();
    // nginx's workers run as another user when started by root (and write
    // the access logs a test may ask for).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(prefix, std::fs::Permissions::from_mode(0o777)).unwrap();
    let pid = prefix.join("nginx.pid");
    let mut group = spawn_group(Command::new("nginx").args([
        "-p",
        prefix.to_str().unwrap(),
        "-c",
        "nginx.conf",
        "-g",
        &format!("daemon off; pid {};", pid.display()),
    ]));
    for &port in ports {
        wait_listening(port, &mut group.0);
    }
    group
}

/// `text` with 127.0.0.1:18080... replaced by `ports`.
fn on_ports(text: &str, ports: [u16; 3]) -> String {
    let mut text = text.to_string();
    for (i, port) in ports.iter().enumerate() {
        text = text.replace(
            &format!("127.0.0.1:{}", 18080 + i),
            &format!("127.0.0.1:{port}"),
        );
    }
    text
}

fn summary(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("out/summary.json")).unwrap()).unwrap()
}

#[test]
fn nginx_one_zone_is_exact_two_zones_are_a_fake_global_and_delay_admits_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = tempfile::tempdir().unwrap();
    let ports = [free_port(), free_port(), free_port()];
    let _nginx = nginx(prefix.path(), ports);
    let scenario = on_ports(&shipped("nginx.toml"), ports);
    let (out, _) = run_scenario(dir.path(), &scenario, &[], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let s = summary(dir.path());

    let one = arm(&s, "one-zone");
    assert_eq!(one["mode"], "external");
    assert_eq!(one["correctness"]["definite_violations"], 0, "{stdout}");
    // nginx said no with 503s: counted as limits, not errors.
    assert!(one["requests"]["rejected"].as_u64().unwrap() > 0);
    assert_eq!(one["requests"]["errors"], 0, "{stdout}");
    assert_eq!(
        one["requests"]["rejected"],
        one["requests"]["status_codes"]["503"]
    );
    // nginx sends no rate-limit headers: a finding, not a failure.
    let h = &one["headers"];
    assert_eq!(h["with_headers"], 0);
    assert!(
        h["findings"][0].as_str().unwrap().contains("none of the"),
        "{h}"
    );

    let two = arm(&s, "two-zones");
    let ratio = two["correctness"]["over_admission_ratio"].as_f64().unwrap();
    assert!((1.8..=2.2).contains(&ratio), "two zones: {ratio}");
    assert!(
        two["correctness"]["definite_violations"].as_u64().unwrap() > 0,
        "{stdout}"
    );

    // Without nodelay the burst is answered late, but admitted the same.
    let delayed = arm(&s, "delayed");
    assert_eq!(delayed["correctness"]["definite_violations"], 0, "{stdout}");
    assert!(
        delayed["latency_ms"]["p99"].as_f64().unwrap() > 100.0,
        "the burst was not held back: {stdout}"
    );
}

/// Two runs of `arm_name` of `scenario`, back to back, each in a folder of
/// its own: the second starts as soon as the first has sent its last
/// request (its arm record is written after the load and the Retry-After
/// probes), while the first still renders its report — so the target
/// still holds the first run's state: both send the keys by the same
/// names ([`common::with_same_keys`]).
fn back_to_back(scenario: &str, arm_name: &str) -> [(tempfile::TempDir, std::process::Output); 2] {
    let scenario = &common::with_same_keys(scenario);
    let first_dir = tempfile::tempdir().unwrap();
    let path = common::write(first_dir.path(), "s.toml", scenario);
    let args = [
        "run",
        path.to_str().unwrap(),
        "--out",
        "out",
        "-q",
        "--arm",
        arm_name,
    ];
    let mut first = Running(Some(common::spawn(first_dir.path(), &args, &[])));
    let record = first_dir.path().join(format!("out/events/{arm_name}.json"));
    let deadline = Instant::now() + Duration::from_secs(40);
    while !common::arm_finished(&record) && first.0.as_mut().unwrap().try_wait().unwrap().is_none()
    {
        assert!(
            Instant::now() < deadline,
            "the first run of {arm_name} hangs"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let second_dir = tempfile::tempdir().unwrap();
    let (second, _) = run_scenario(second_dir.path(), scenario, &[], &["--arm", arm_name]);
    let first_out = first.0.take().unwrap().wait_with_output().unwrap();
    [(first_dir, first_out), (second_dir, second)]
}

/// One nginx, `one-zone` twice in a row: the second run starts while the
/// zone still holds the first one's state (its bucket partly drained), and
/// must still score 0 definite violations and 0 false rejects. (A verifier
/// that assumed an external bucket starts full would, for the whole run,
/// believe in tokens that the first run had spent, and call nearly every
/// reject false.)
#[test]
fn nginx_one_zone_twice_in_a_row_is_exact_both_times() {
    let prefix = tempfile::tempdir().unwrap();
    let ports = [free_port(), free_port(), free_port()];
    let _nginx = nginx(prefix.path(), ports);
    let scenario = on_ports(&shipped("nginx.toml"), ports);
    for (i, (dir, out)) in back_to_back(&scenario, "one-zone").iter().enumerate() {
        let which = ["first", "second"][i];
        let stdout = text(&out.stdout);
        let s = summary(dir.path());
        let one = arm(&s, "one-zone");
        let c = &one["correctness"];
        eprintln!(
            "one-zone, {which} run: {} admitted, {} rejected, {} definite, {} false rejects",
            one["requests"]["admitted"],
            one["requests"]["rejected"],
            c["definite_violations"],
            c["false_rejects"]
        );
        assert_eq!(c["definite_violations"], 0, "{which} run\n{stdout}");
        assert_eq!(c["false_rejects"], 0, "{which} run\n{stdout}");
        assert!(
            one["requests"]["rejected"].as_u64().unwrap() > 0,
            "{which} run: nginx did not limit\n{stdout}"
        );
        assert_eq!(one["requests"]["errors"], 0, "{which} run\n{stdout}");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{which} run\n{stdout}{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn an_api_served_by_rlbench_is_judged_from_outside_headers_and_all() {
    let dir = tempfile::tempdir().unwrap();
    let base = free_ports(3);
    let mut serve = spawn_group(
        Command::new(common::bin())
            .args([
                "serve",
                "scenarios/three-replicas.toml",
                "--arm",
                "redis-lua",
                "--port",
                &base.to_string(),
            ])
            .current_dir(ROOT),
    );
    for i in 0..3 {
        wait_listening(base + i, &mut serve.0);
    }
    let scenario = shipped("external-api.toml")
        .replace("127.0.0.1:18090", &format!("127.0.0.1:{base}"))
        .replace("127.0.0.1:18091", &format!("127.0.0.1:{}", base + 1))
        .replace("127.0.0.1:18092", &format!("127.0.0.1:{}", base + 2))
        .replace("duration = \"5s\"", "duration = \"3s\"");
    let (out, _) = run_scenario(dir.path(), &scenario, &[], &[]);
    // SIGTERM lets serve stop its Redis and replicas itself.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(serve.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let s = summary(dir.path());
    let api = arm(&s, "api");
    assert_eq!(api["replicas"], 3);
    assert_eq!(api["correctness"]["definite_violations"], 0);
    let h = &api["headers"];
    let sent = api["requests"]["sent"].as_u64().unwrap();
    assert_eq!(
        h["conventions"]["ratelimit"]["present"].as_u64(),
        Some(sent)
    );
    assert_eq!(h["conventions"]["ratelimit"]["malformed"], 0);
    assert_eq!(h["advertised_limit"]["10"].as_u64(), Some(sent), "{h}");
    assert!(h["remaining"]["checked"].as_u64().unwrap() > 0, "{h}");
    assert_eq!(h["remaining"]["contradicted"], 0, "{h}");
    let probes = h["retry_after_probes"].as_array().unwrap();
    assert_eq!(probes.len(), 2);
    assert!(probes.iter().all(|p| p["result"] == "admitted"), "{h}");
    assert_eq!(h["findings"].as_array().unwrap().len(), 0, "{h}");
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(html.contains("Rate-limit headers"), "no headers section");
    assert!(
        stdout.contains("headers of api: RateLimit / RateLimit-Policy on every answer"),
        "{stdout}"
    );
}

#[test]
fn an_unreachable_external_target_exits_3_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let scenario = shipped("nginx.toml").replace("127.0.0.1:18080", &format!("127.0.0.1:{port}"));
    // One arm: one URL, one line.
    let (out, _) = run_scenario(dir.path(), &scenario, &[], &["--arm", "one-zone"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("cannot reach http://127.0.0.1:{port}/limited")),
        "{err}"
    );
    // Every arm: every URL nothing answers on, a line each, before any load.
    let (out, _) = run_scenario(dir.path(), &scenario, &[], &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.trim().lines().collect();
    assert!(lines.len() >= 2, "{err}");
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("rlbench: cannot reach http://127.0.0.1:")),
        "{err}"
    );
    assert!(!dir.path().join("out/summary.json").exists());
}

/// An external target that answers everything with a 404 is never a
/// pass, however clean its (empty) verdict.
#[test]
fn a_target_that_only_answers_404_fails_with_nothing_judged() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = std::io::BufReader::new(stream);
                let mut line = String::new();
                loop {
                    line.clear();
                    match std::io::BufRead::read_line(&mut reader, &mut line) {
                        Ok(0) | Err(_) => return,
                        Ok(_) if line == "\r\n" => {
                            let answer = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
                            if std::io::Write::write_all(&mut writer, answer).is_err() {
                                return;
                            }
                        }
                        Ok(_) => {}
                    }
                }
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::write(
        dir.path(),
        "gone.toml",
        &format!(
            r#"
name = "gone"
duration = "1s"
[target]
kind = "external"
urls = ["http://127.0.0.1:{port}"]
path = "/nothing-here"
[policy]
algorithm = "sliding_log"
limit = 10
window = "1s"
[load]
rate = 100
[[arms]]
name = "api"
[arms.expect]
max_definite_violations = 0
"#
        ),
    );
    let o = common::rlbench(
        &["run", scenario.to_str().unwrap(), "--out", "out", "-q"],
        dir.path(),
    );
    let stderr = text(&o.stderr);
    // The setup's failure, not the limiter's: exit 3, "check the URL".
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("expectation failed: api: nothing judged: ")
            && stderr.contains(" requests failed (404 ×"),
        "{stderr}"
    );
    assert!(
        stderr.contains("arm api: none of its ")
            && stderr.contains("the limiter is not to blame — check the URL's path and method"),
        "{stderr}"
    );
    let s = common::summary(&dir.path().join("out"));
    assert_eq!(s["gate"]["passed"], false);
    assert_eq!(
        s["arms"][0]["correctness"]["definite_violations"], 0,
        "clean, and judged nothing"
    );
    let junit = std::fs::read_to_string(dir.path().join("out/junit.xml")).unwrap();
    assert!(junit.contains("something judged"), "{junit}");
}
