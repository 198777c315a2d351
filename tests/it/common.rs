//! Helpers for tests that drive the real rlbench binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub(crate) fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rlbench"))
}

/// rlbench with `args` in `cwd`; its output unfolded whatever the
/// shell's `COLUMNS` (tests that read the folding set it themselves).
pub(crate) fn rlbench(args: &[&str], cwd: &Path) -> Output {
    Command::new(bin())
        .args(args)
        .current_dir(cwd)
        .env_remove("COLUMNS")
        .output()
        .expect("rlbench runs")
}

/// rlbench with `args` in `cwd` and `COLUMNS=columns`.
pub(crate) fn rlbench_at(columns: usize, args: &[&str], cwd: &Path) -> Output {
    Command::new(bin())
        .args(args)
        .current_dir(cwd)
        .env("COLUMNS", columns.to_string())
        .output()
        .expect("rlbench runs")
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Pids of live processes started by the rlbench process `pid`: replicas
/// and redis-server carry `RLBENCH_RUN=rlbench-<pid>-...` in their environment.
pub(crate) fn replicas_of(pid: u32) -> Vec<u32> {
    let marker = format!("rlbench-{pid}-");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let environ = String::from_utf8_lossy(&environ);
        // redis-server rewrites its title over argv and environ; its working
        // folder (named after the run) stays.
        let cwd = std::fs::read_link(entry.path().join("cwd"))
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .map(|s| s.split_whitespace().nth(2) == Some("Z"))
            .unwrap_or(true);
        let ours = environ.contains(&format!("RLBENCH_RUN={marker}")) || cwd.contains(&marker);
        if ours && !zombie {
            found.push(p);
        }
    }
    found
}

/// Waits (bounded) until no replica of `pid` is alive; returns the survivors.
pub(crate) fn wait_no_replicas(pid: u32, within: Duration) -> Vec<u32> {
    let deadline = Instant::now() + within;
    loop {
        let left = replicas_of(pid);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A small two-arm scenario that saturates its limit quickly.
pub(crate) fn small_scenario(duration: &str, extra_single_expect: &str) -> String {
    format!(
        r#"
name = "small"
duration = "{duration}"
seed = 3

[policy]
algorithm = "sliding_log"
limit = 5
window = "1s"

[cluster]
replicas = 3

[load]
rate = 300
keys = 3

[[arms]]
name = "single"
mode = "local"
replicas = 1
[arms.expect]
max_definite_violations = 0
max_over_admission_ratio = 1.05
{extra_single_expect}

[[arms]]
name = "local"
mode = "local"
[arms.expect]
# Three replicas counting alone admit up to 3x; a loaded machine answers
# later, which widens each request's interval and so raises the bound U:
# 2x is still proof, and does not hang on the machine's speed.
min_over_admission_ratio = 2.0
"#
    )
}

/// Starts rlbench with `args` in `dir`, output piped, extra environment set.
pub(crate) fn spawn(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Child {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .current_dir(dir)
        .env_remove("COLUMNS")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("rlbench starts")
}

/// Runs the `single` arm of `scenario` into `dir/out`, which must pass.
pub(crate) fn run_single(dir: &Path, scenario: &str) -> Output {
    let path = write(dir, "s.toml", scenario);
    let args = [
        "run",
        path.to_str().unwrap(),
        "--arm",
        "single",
        "--out",
        "out",
        "-q",
    ];
    let out = rlbench(&args, dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    out
}

/// The summary.json of the run folder `folder`.
pub(crate) fn summary(folder: &Path) -> serde_json::Value {
    let raw = std::fs::read_to_string(folder.join("summary.json")).expect("summary.json written");
    serde_json::from_str(&raw).unwrap()
}

/// Runs `small_scenario(duration, "")` into `dir/out`, which must pass; the run folder.
pub(crate) fn run_small(dir: &Path, duration: &str) -> PathBuf {
    let path = write(dir, "s.toml", &small_scenario(duration, ""));
    let out_dir = dir.join("out");
    let out = rlbench(
        &[
            "run",
            path.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
            "-q",
        ],
        dir,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The last line is the page to open, as a path and a file:// URL.
    let stdout = text(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let page = out_dir.join("report.html");
    let url = url::Url::from_file_path(std::fs::canonicalize(&page).unwrap()).unwrap();
    assert_eq!(
        last,
        format!("report: {} ({url})", page.display()),
        "{stdout}"
    );
    out_dir
}

/// `rlbench run SCENARIO --out out -q` in `dir` (the scenario written to
/// `s.toml`), with extra arguments and environment: its output and pid.
pub(crate) fn run_scenario(
    dir: &Path,
    scenario: &str,
    env: &[(&str, &str)],
    extra: &[&str],
) -> (Output, u32) {
    let path = write(dir, "s.toml", scenario);
    let mut cmd = Command::new(bin());
    cmd.args(["run", path.to_str().unwrap(), "--out", "out", "-q"])
        .args(extra)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    (child.wait_with_output().unwrap(), pid)
}

/// The arm of a summary.json by name.
pub(crate) fn arm<'a>(s: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    s["arms"]
        .as_array()
        .expect("arms")
        .iter()
        .find(|a| a["name"] == name)
        .unwrap_or_else(|| panic!("no arm {name} in the summary"))
}

/// A free loopback port (bound, then released).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An rlbench process killed when dropped (a panicking test leaves none).
pub(crate) struct Running(pub Option<std::process::Child>);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Whether the arm record at `path` is there and final: rlbench writes an
/// unfinished one while the arm's load runs (what a kill would leave), and
/// the final one once the load and its probes are done.
#[allow(dead_code)]
pub(crate) fn arm_finished(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|record| record.get("unfinished") != Some(&serde_json::Value::Bool(true)))
}

/// Whether `program` is on PATH.
pub(crate) fn has(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Asserts the exit code, showing what the command said when it differs.
pub(crate) fn exited(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Asserts that the run of rlbench `pid` left no replica or redis-server.
pub(crate) fn none_left(pid: u32, within: Duration) {
    assert!(
        wait_no_replicas(pid, within).is_empty(),
        "a replica or redis-server survived"
    );
}

/// Waits (20 s at most) until the run of rlbench `pid` has its replicas up
/// and its trace `events` open: the load has begun.
pub(crate) fn wait_started(pid: u32, events: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !events.exists() || replicas_of(pid).is_empty() {
        assert!(Instant::now() < deadline, "the run never started");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Copies a folder and everything in it.
pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// `scenario` sending its keys by the same names every run (`[target]
/// fresh_keys = false`): a second run meets the state the first left.
pub(crate) fn with_same_keys(scenario: &str) -> String {
    assert!(
        scenario.contains("\n[target]\n"),
        "no [target] table:\n{scenario}"
    );
    scenario.replacen("\n[target]\n", "\n[target]\nfresh_keys = false\n", 1)
}
