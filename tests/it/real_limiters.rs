//! Real rate limiters nobody on this project wrote, judged from outside by
//! the real binary: the PyPI library `limits` (its three strategies) and the
//! npm library rate-limiter-flexible, each in memory behind a small server
//! in scripts/limiters/ (versions pinned there, semantics in the servers'
//! comments), and Debian's HAProxy with a stick table (which counts denied
//! requests too: `count_rejected`), against the shipped scenarios/limits.toml,
//! scenarios/rate-limiter-flexible.toml and scenarios/haproxy.toml on free
//! loopback ports.
//!
//! This file is the harness (how each server starts, how a shipped
//! scenario is pointed at it, what "exact" and "caught" assert); the tests
//! are in third_party.rs, chunked_bucket.rs and beside each scenario's.
//!
//! Each correct limiter is run twice, back to back, against the same
//! process: the second run starts while the limiter still holds the first
//! one's state, and both must score 0 definite violations and 0 false
//! rejects. The same limiter on several processes, each with its own
//! memory, behind round-robin — the fake global limit — must be caught.
//!
//! The libraries are installed by scripts/limiters/install.sh (.ci/run runs
//! it) next to the servers; a test panics saying so when they are missing.

use crate::common;

use common::{arm, free_port, run_scenario, text, Running};
use serde_json::Value;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

const INSTALL: &str = "run scripts/limiters/install.sh (it needs python3 with pip \
    and node with npm; .ci/run installs them and runs it)";

fn limiters() -> PathBuf {
    Path::new(ROOT).join("scripts/limiters")
}

/// One third-party limiter and how its server is started.
#[derive(Clone, Copy)]
pub(crate) enum Limiter {
    /// `limits` with this strategy (limits_server.py), "10 per 1 second".
    Limits(&'static str),
    /// `limits` with this strategy and limit, keyed on this header.
    LimitsOn(&'static str, &'static str, &'static str),
    /// rate-limiter-flexible's RateLimiterMemory, 10 points per 1 s.
    Flexible,
    /// express-rate-limit's MemoryStore in an express app, 10 per 1 s.
    Express,
    /// HAProxy's stick table (scenarios/haproxy/haproxy.cfg): more than 10
    /// requests per 1 s, denied ones counted, get a 429.
    Haproxy,
    /// A Redis token bucket in Stripe's style (stripe_bucket_server.py),
    /// capacity 10, 5 a second in whole seconds, on the Redis at this URL.
    Stripe(&'static str),
    /// The same fed whole seconds of the app's clock, this many µs ahead
    /// of this machine's, its buckets shared with every such server.
    StripeAppClock(&'static str, i64),
    /// Debian's Varnish with vmod_vsthrottle
    /// (scenarios/varnish/vsthrottle.vcl): 10 per 2 s on X-Key, a bucket
    /// whose partial tokens are lost at each admit.
    Varnish,
}

impl Limiter {
    /// Panics with how to install the library when it is not there at the
    /// pinned version.
    fn require_installed(self) {
        match self {
            Limiter::Varnish => {
                assert!(
                    Command::new("varnishd").arg("-V").output().is_ok(),
                    "varnishd is not on PATH: sudo apt-get install varnish varnish-modules \
                     (scripts/test.sh installs them)"
                );
            }
            Limiter::Haproxy => {
                assert!(
                    Command::new("haproxy").arg("-v").output().is_ok(),
                    "haproxy is not on PATH: sudo apt-get install haproxy (scripts/test.sh \
                     installs it)"
                );
            }
            Limiter::Limits(_)
            | Limiter::LimitsOn(..)
            | Limiter::Stripe(_)
            | Limiter::StripeAppClock(..) => {
                let library = match self {
                    Limiter::Stripe(_) | Limiter::StripeAppClock(..) => "redis",
                    _ => "limits",
                };
                let pinned = std::fs::read_to_string(limiters().join("requirements.txt")).unwrap();
                let version = pinned
                    .lines()
                    .find_map(|l| l.strip_prefix(&format!("{library}==")))
                    .expect("pinned in requirements.txt");
                let info = limiters().join(format!("pylib/{library}-{version}.dist-info"));
                assert!(
                    info.is_dir(),
                    "the PyPI library {library} {version} is not installed in \
                     scripts/limiters/pylib: {INSTALL}"
                );
            }
            Limiter::Flexible | Limiter::Express => {
                let package = match self {
                    Limiter::Flexible => "rate-limiter-flexible",
                    _ => "express-rate-limit",
                };
                let lock: Value = serde_json::from_str(
                    &std::fs::read_to_string(limiters().join("package-lock.json")).unwrap(),
                )
                .unwrap();
                let version = &lock["packages"][format!("node_modules/{package}")]["version"];
                let installed = std::fs::read_to_string(
                    limiters().join(format!("node_modules/{package}/package.json")),
                )
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok());
                assert!(
                    installed.as_ref().is_some_and(|p| &p["version"] == version),
                    "the npm library {package} {version} is not installed in \
                     scripts/limiters/node_modules: {INSTALL}"
                );
            }
        }
    }

    /// The server's command; `logs` holds what it writes besides its log.
    fn command(self, port: u16, logs: &Path) -> Command {
        match self {
            Limiter::Limits(strategy) => {
                Limiter::LimitsOn(strategy, "10 per 1 second", "X-Customer-Id").command(port, logs)
            }
            Limiter::LimitsOn(strategy, limit, header) => {
                let mut cmd = Command::new("python3");
                cmd.arg(limiters().join("limits_server.py"))
                    .args([&port.to_string(), strategy, limit, header])
                    .env("PYTHONPATH", limiters().join("pylib"))
                    .env("PYTHONDONTWRITEBYTECODE", "1");
                cmd
            }
            Limiter::Stripe(redis_url) => {
                let mut cmd = Command::new("python3");
                cmd.arg(limiters().join("stripe_bucket_server.py"))
                    .args([&port.to_string(), "10", "5"])
                    .env("REDIS_URL", redis_url)
                    .env("PYTHONPATH", limiters().join("pylib"))
                    .env("PYTHONDONTWRITEBYTECODE", "1");
                cmd
            }
            Limiter::StripeAppClock(redis_url, offset_us) => {
                let mut cmd = Limiter::Stripe(redis_url).command(port, logs);
                cmd.env("STRIPE_APP_CLOCK_OFFSET_US", offset_us.to_string())
                    .env("STRIPE_SHARED", "1");
                cmd
            }
            Limiter::Flexible => {
                let mut cmd = Command::new("node");
                cmd.arg(limiters().join("rlf_server.js"))
                    .args([&port.to_string(), "10", "1"]);
                cmd
            }
            Limiter::Express => {
                let mut cmd = Command::new("node");
                cmd.arg(limiters().join("erl_server.js"))
                    .args([&port.to_string(), "10", "1"]);
                cmd
            }
            Limiter::Varnish => {
                // In the foreground, as root without a jail, no management
                // port, its working folder beside the log.
                let mut cmd = Command::new("varnishd");
                cmd.args(["-F", "-j", "none", "-T", "none", "-s", "malloc,16m"])
                    .arg("-a")
                    .arg(format!("127.0.0.1:{port}"))
                    .arg("-f")
                    .arg(Path::new(ROOT).join("scenarios/varnish/vsthrottle.vcl"))
                    .arg("-n")
                    .arg(logs.join(format!("varnish-{port}")));
                cmd
            }
            Limiter::Haproxy => {
                let mut cmd = Command::new("haproxy");
                cmd.arg("-db")
                    .arg("-f")
                    .arg(Path::new(ROOT).join("scenarios/haproxy/haproxy.cfg"))
                    .env("RLBENCH_HAPROXY_PORT", port.to_string());
                cmd
            }
        }
    }
}

/// A limiter server in a process group of its own, killed (all of it) when
/// dropped — also when the test panics. Its output goes to `log`.
pub(crate) struct Server {
    child: Child,
    pub(crate) port: u16,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let pgid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Server {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// Starts `limiter` on a free port and waits (at most 15 s) until it listens.
pub(crate) fn start(limiter: Limiter, logs: &Path) -> Server {
    use std::os::unix::process::CommandExt;
    limiter.require_installed();
    let port = free_port();
    let log = logs.join(format!("server-{port}.log"));
    let out = std::fs::File::create(&log).unwrap();
    let child = limiter
        .command(port, logs)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap_or_else(|e| panic!("the limiter's server does not start ({e}): {INSTALL}"));
    let mut server = Server { child, port, log };
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!(
                "the server exited before listening on {port}: {status}\n{}",
                server.log()
            );
        }
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "nothing listens on {port}\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Something else may have taken the port meanwhile: ours must be up.
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        matches!(server.child.try_wait(), Ok(None)),
        "the server on {port} exited\n{}",
        server.log()
    );
    server
}

/// The shipped scenario `file` with the URLs of its arm `arm_name` moved to
/// `servers`' ports, in order.
pub(crate) fn scenario_on(file: &str, arm_name: &str, servers: &[&Server]) -> String {
    let text = std::fs::read_to_string(Path::new(ROOT).join("scenarios").join(file)).unwrap();
    let parsed: toml::Table = text.parse().unwrap();
    let arms = parsed["arms"].as_array().unwrap();
    let the_arm = arms
        .iter()
        .find(|a| a["name"].as_str() == Some(arm_name))
        .unwrap_or_else(|| panic!("no arm {arm_name} in {file}"));
    let urls = the_arm
        .get("urls")
        .unwrap_or_else(|| &parsed["target"]["urls"])
        .as_array()
        .unwrap();
    assert_eq!(urls.len(), servers.len(), "{file} {arm_name}: its URLs");
    // Through placeholders, so that a new port equal to an old one is safe.
    let mut text = text.clone();
    for (i, url) in urls.iter().enumerate() {
        text = text.replace(&format!("\"{}\"", url.as_str().unwrap()), &format!("@{i}@"));
    }
    for (i, server) in servers.iter().enumerate() {
        text = text.replace(
            &format!("@{i}@"),
            &format!("\"http://127.0.0.1:{}\"", server.port),
        );
    }
    text
}

/// One run of `arm_name` of `scenario` (in a folder of its own).
pub(crate) struct Run {
    dir: tempfile::TempDir,
    pub(crate) out: Output,
    summary: Value,
}

impl Run {
    pub(crate) fn arm(&self, name: &str) -> &Value {
        arm(&self.summary, name)
    }

    pub(crate) fn stdout(&self) -> String {
        text(&self.out.stdout)
    }

    /// (wall-clock µs of the first send, of the last answer, and the key
    /// of every request with its outcome, in send order) of `arm_name`.
    fn trace(&self, arm_name: &str) -> (i64, i64, Vec<(String, String)>) {
        let events = self.dir.path().join("out/events");
        let record: Value = serde_json::from_str(
            &std::fs::read_to_string(events.join(format!("{arm_name}.json"))).unwrap(),
        )
        .unwrap();
        let offset = record["epoch_offset_us"].as_i64().unwrap();
        let export = common::rlbench(&["export", "out", "--arm", arm_name], self.dir.path());
        assert!(export.status.success(), "{}", text(&export.stderr));
        let csv = text(&export.stdout);
        let (mut first, mut last) = (i64::MAX, i64::MIN);
        let mut requests = Vec::new();
        // arm,seq,key,replica,intended_us,sent_us,done_us,status,outcome,...
        for line in csv.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            let (Ok(sent), Ok(done)) = (f[5].parse::<i64>(), f[6].parse::<i64>()) else {
                continue;
            };
            first = first.min(sent);
            last = last.max(done);
            requests.push((sent, f[2].to_string(), f[8].to_string()));
        }
        requests.sort();
        let requests = requests.into_iter().map(|(_, k, o)| (k, o)).collect();
        (offset + first, offset + last, requests)
    }
}

fn summary_of(dir: &Path, out: &Output) -> Value {
    std::fs::read_to_string(dir.join("out/summary.json"))
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or_else(|_| {
            panic!(
                "no summary.json: {}{}",
                text(&out.stdout),
                text(&out.stderr)
            )
        })
}

pub(crate) fn run(scenario: &str, arm_name: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = run_scenario(dir.path(), scenario, &[], &["--arm", arm_name]);
    let summary = summary_of(dir.path(), &out);
    Run { dir, out, summary }
}

/// Two runs of `arm_name`, back to back: the second starts as soon as the
/// first has sent its last request (its arm record is written after the
/// load and the Retry-After probes), while the first still renders its
/// report — so the limiter still holds the first run's admits: both send
/// the keys by the same names ([`common::with_same_keys`]).
fn back_to_back(scenario: &str, arm_name: &str) -> [Run; 2] {
    let scenario = &common::with_same_keys(scenario);
    let dir = tempfile::tempdir().unwrap();
    let path = common::write(dir.path(), "s.toml", scenario);
    let mut first = Running(Some(common::spawn(
        dir.path(),
        &[
            "run",
            path.to_str().unwrap(),
            "--out",
            "out",
            "-q",
            "--arm",
            arm_name,
        ],
        &[],
    )));
    let record = dir.path().join(format!("out/events/{arm_name}.json"));
    let deadline = Instant::now() + Duration::from_secs(40);
    while !common::arm_finished(&record) {
        let child = first.0.as_mut().unwrap();
        if child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the first run of {arm_name} hangs"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let second = run(scenario, arm_name);
    let out = first.0.take().unwrap().wait_with_output().unwrap();
    let summary = summary_of(dir.path(), &out);
    [Run { dir, out, summary }, second]
}

/// `arm_name` of `file` twice, back to back, against one running server:
/// both runs exact (0 definite violations, 0 false rejects), limiting, and
/// the second started while the first one's admits were still inside the
/// limiter's window.
pub(crate) fn exact_twice_in_a_row(limiter: Limiter, file: &str, arm_name: &str) {
    // The gap between the runs is read from their wall clocks; a wall clock
    // stepped meanwhile (a VM paused and resynced) makes it unreadable.
    let clocks_at_start = (std::time::SystemTime::now(), Instant::now());
    let logs = tempfile::tempdir().unwrap();
    let server = start(limiter, logs.path());
    let scenario = scenario_on(file, arm_name, &[&server]);
    let runs = back_to_back(&scenario, arm_name);
    for (i, r) in runs.iter().enumerate() {
        // A limiter that counts denied requests stays closed to a client
        // that keeps sending: the second run, right after the first, may
        // get no admit at all — and must not be charged for it.
        let may_stay_closed = i == 1 && matches!(limiter, Limiter::Haproxy);
        let which = format!("{} run of {arm_name}", ["first", "second"][i]);
        assert_exact(r, arm_name, &which, &server.log(), may_stay_closed);
    }
    // The point of the second run: the limiter still held the first one's
    // admits (the window is 1 s) when it started.
    let (_, first_end, _) = runs[0].trace(arm_name);
    let (second_start, _, requests) = runs[1].trace(arm_name);
    let gap_ms = (second_start - first_end) as f64 / 1e3;
    let (wall0, mono0) = clocks_at_start;
    let wall = std::time::SystemTime::now()
        .duration_since(wall0)
        .map_or(-1.0, |d| d.as_secs_f64());
    let jumped_ms = (wall - mono0.elapsed().as_secs_f64()) * 1e3;
    if jumped_ms.abs() > 200.0 {
        eprintln!(
            "{arm_name}: the wall clock moved {jumped_ms:.0} ms against the monotonic one \
             during the test: the gap between the runs ({gap_ms:.0} ms by the wall clock) \
             cannot be read"
        );
    } else {
        assert!(
            (0.0..1000.0).contains(&gap_ms),
            "{arm_name}: the second run started {gap_ms:.0} ms after the first ended"
        );
    }
    let mut seen = std::collections::HashSet::new();
    let first_rejected = requests
        .iter()
        .filter(|(key, outcome)| seen.insert(key.clone()) && outcome == "rejected")
        .count();
    for (i, r) in runs.iter().enumerate() {
        let a = r.arm(arm_name);
        eprintln!(
            "{arm_name} run {}: {} admitted, {} rejected, {} definite, {} false rejects",
            i + 1,
            a["requests"]["admitted"],
            a["requests"]["rejected"],
            a["correctness"]["definite_violations"],
            a["correctness"]["false_rejects"]
        );
    }
    eprintln!(
        "{arm_name}: second run {gap_ms:.0} ms after the first; \
         {first_rejected} of {} keys' first request rejected",
        seen.len()
    );
}

/// `arm_name` of `file` on one server per limiter (each its own settings,
/// sharing state if they do): 0 definite violations, 0 false rejects, the
/// limiter limiting, no error, exit 0. Returns the arm's summary.
pub(crate) fn exact_across_servers(limiters: &[Limiter], file: &str, arm_name: &str) -> Value {
    let logs = tempfile::tempdir().unwrap();
    let servers: Vec<Server> = limiters.iter().map(|&l| start(l, logs.path())).collect();
    let scenario = scenario_on(file, arm_name, &servers.iter().collect::<Vec<_>>());
    let r = run(&scenario, arm_name);
    let log: String = servers.iter().map(Server::log).collect();
    assert_exact(&r, arm_name, arm_name, &log, false);
    r.arm(arm_name).clone()
}

/// One run of `arm_name` exact: 0 definite violations, 0 false rejects,
/// the limiter limiting (and admitting, unless it `may_stay_closed`), no
/// error or timeout, exit 0. `which` names the run in the messages.
fn assert_exact(r: &Run, arm_name: &str, which: &str, log: &str, may_stay_closed: bool) {
    let a = r.arm(arm_name);
    let c = &a["correctness"];
    let q = &a["requests"];
    let stdout = r.stdout();
    assert_eq!(
        c["definite_violations"], 0,
        "{which}: definite violations\n{stdout}{log}"
    );
    assert_eq!(
        c["false_rejects"], 0,
        "{which}: false rejects\n{stdout}{log}"
    );
    assert!(
        q["rejected"].as_u64().unwrap() > 0
            && (q["admitted"].as_u64().unwrap() > 0 || may_stay_closed),
        "{which}: the limiter did not limit\n{stdout}"
    );
    assert_eq!(q["errors"], 0, "{which}\n{stdout}{log}");
    assert_eq!(q["timeouts"], 0, "{which}\n{stdout}{log}");
    assert_eq!(
        r.out.status.code(),
        Some(0),
        "{which}: the scenario's expectations\n{stdout}{}",
        text(&r.out.stderr)
    );
}

/// `arm_name` of `file` on `processes` fresh servers, each with its own
/// memory, behind round-robin: caught.
pub(crate) fn fake_global_is_caught(
    limiter: Limiter,
    file: &str,
    arm_name: &str,
    processes: usize,
    min_ratio: f64,
) {
    let logs = tempfile::tempdir().unwrap();
    let servers: Vec<Server> = (0..processes)
        .map(|_| start(limiter, logs.path()))
        .collect();
    let scenario = scenario_on(file, arm_name, &servers.iter().collect::<Vec<_>>());
    let r = run(&scenario, arm_name);
    let stdout = r.stdout();
    let a = r.arm(arm_name);
    assert_eq!(a["replicas"], processes, "{stdout}");
    let c = &a["correctness"];
    assert!(
        c["definite_violations"].as_u64().unwrap() > 0,
        "{arm_name}: the fake global limit went unproven\n{stdout}"
    );
    let ratio = c["over_admission_ratio"].as_f64().unwrap();
    eprintln!(
        "{arm_name}: {} admitted of {} allowed ({ratio:.2}x), {} definite violations",
        a["requests"]["admitted"], c["allowed_max"], c["definite_violations"]
    );
    assert!(
        ratio >= min_ratio,
        "{arm_name}: over-admission {ratio}\n{stdout}"
    );
    assert_eq!(a["requests"]["errors"], 0, "{stdout}");
    assert_eq!(
        r.out.status.code(),
        Some(0),
        "{stdout}{}",
        text(&r.out.stderr)
    );
}
