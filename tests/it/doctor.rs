//! `rlbench doctor` on this machine and on one made to lack things: a
//! missing redis-server is a missing piece (exit 3) with the fix; a
//! scenario needing 10,000 connections under a 1,024 open-files limit is
//! a warning with the `ulimit` to run.

use crate::common;

use std::os::unix::fs::symlink;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

fn doctor(args: &[&str], cwd: &Path) -> Command {
    let mut cmd = Command::new(common::bin());
    cmd.arg("doctor").args(args).current_dir(cwd);
    cmd
}

#[test]
fn a_machine_without_redis_server_is_told_how_to_get_it() {
    let dir = tempfile::tempdir().unwrap();
    // A PATH with nothing on it: no redis-server, nginx or chromium.
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    symlink("/bin/sh", bin.join("sh")).unwrap();
    let out = doctor(&[], dir.path()).env("PATH", &bin).output().unwrap();
    let stdout = common::text(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    let line = stdout
        .lines()
        .find(|l| l.contains("redis-server"))
        .expect("a line for redis-server");
    assert!(line.starts_with("missing"), "{line}");
    assert!(line.contains("apt-get install redis-server"), "{line}");
    // The tests' programs are warnings: a run does not need them.
    let nginx = stdout.lines().find(|l| l.contains("nginx")).unwrap();
    assert!(nginx.starts_with("warn"), "{nginx}");
}

#[test]
fn ten_thousand_connections_under_a_1024_open_files_limit_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::write(
        dir.path(),
        "busy.toml",
        r#"
name = "busy"
duration = "10s"
[policy]
algorithm = "sliding_log"
limit = 10
window = "1s"
[load]
rate = 5000
keys = 10
timeout = "2s"
[[arms]]
name = "single"
mode = "local"
"#,
    );
    let mut cmd = doctor(&[scenario.to_str().unwrap()], dir.path());
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let (_, hard) =
                nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
                    .map_err(std::io::Error::from)?;
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, 1_024, hard)
                .map_err(std::io::Error::from)
        });
    }
    let out = cmd.output().unwrap();
    let stdout = common::text(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.contains("open files"))
        .expect("an open-files line");
    assert!(line.contains("soft limit 1024"), "{line}");
    assert!(line.contains("10000 connections"), "{line}");
    assert!(line.contains("ulimit -n 10064"), "{line}");
    // Below a hard limit that allows it, rlbench raises its own: a warning.
    let (_, hard) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    if hard >= 10_064 {
        assert!(line.starts_with("warn"), "{line}");
    } else {
        assert!(line.starts_with("missing"), "{line}");
    }
}

#[test]
fn this_machine_has_what_the_main_scenario_needs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = doctor(&["scenarios/three-replicas.toml"], root)
        .output()
        .unwrap();
    let stdout = common::text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    for what in [
        "redis-server",
        "open files",
        "ephemeral ports",
        "CPUs",
        "wall clock",
    ] {
        assert!(stdout.contains(what), "{what}: {stdout}");
    }
    // What the scenario does not need is not checked: the tests' programs,
    // and a governor the machine does not show.
    assert!(
        !stdout.contains("nginx") && !stdout.contains("chromium"),
        "{stdout}"
    );
    assert!(!stdout.contains("not readable"), "{stdout}");
    assert!(
        stdout
            .lines()
            .all(|l| l.starts_with("ok") || l.starts_with("warn")),
        "{stdout}"
    );
    // The wall clock's rate, measured: "runs within N ppm" or, while it is
    // slewed past the default bound, a warning that says so.
    let clock = stdout.lines().find(|l| l.contains("wall clock")).unwrap();
    assert!(
        clock.contains("ppm of the monotonic clock") || clock.contains("being slewed"),
        "{clock}"
    );
}

/// An external-target scenario with one of its targets down: doctor says
/// which and exits 3, as the run would; it does not ask for redis-server,
/// nginx or Chromium, which the scenario does not need.
#[test]
fn a_scenario_is_checked_for_what_it_needs_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let up = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = common::free_port();
    let scenario = common::write(
        dir.path(),
        "mine.toml",
        &format!(
            r#"
name = "mine"
duration = "2s"
[target]
kind = "external"
urls = ["http://127.0.0.1:{}/api", "http://127.0.0.1:{down}/api"]
key_header = "X-Customer-Id"
[policy]
algorithm = "sliding_log"
limit = 5
window = "1s"
[load]
rate = 10
keys = 2
[[arms]]
name = "api"
"#,
            up.local_addr().unwrap().port()
        ),
    );
    let out = doctor(&[scenario.to_str().unwrap()], dir.path())
        .output()
        .unwrap();
    let stdout = common::text(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    let target = stdout
        .lines()
        .find(|l| l.starts_with("missing") && l.contains(&down.to_string()))
        .unwrap_or_else(|| panic!("no line for the target down: {stdout}"));
    assert!(target.contains("target"), "{target}");
    for unneeded in ["redis-server", "nginx", "chromium"] {
        assert!(!stdout.contains(unneeded), "{unneeded}: {stdout}");
    }
}
