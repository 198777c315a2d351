//! No secret in the open, through the real binary and real redis-server
//! processes: a `[redis] url` password is nowhere in the run folder, the
//! terminal or any process's command line while the run goes; a wrong
//! password or an unreachable port is named with the password hidden; the
//! Redis rlbench starts itself refuses a client without its per-run
//! password, which is in no command line and no output either.

use crate::common;

use common::{arm, bin, summary, text, wait_no_replicas, write};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PASSWORD: &str = "pa55w0rd";

/// One Redis arm, light and short: two replicas sharing the script.
fn scenario(redis: &str) -> String {
    format!(
        r#"
name = "secrets"
duration = "3s"
seed = 5

[policy]
algorithm = "fixed_window"
limit = 10
window = "1s"

[cluster]
replicas = 2

{redis}

[load]
rate = 60
keys = 3

[[arms]]
name = "shared"
mode = "redis_lua"
clock = "redis"
on_redis_error = "fail_closed"
[arms.expect]
max_definite_violations = 0
"#
    )
}

/// A redis-server of the test's own on a free loopback port, asking
/// `password`; its config comes on stdin, so the password is not on its
/// command line either (the test looks for it in every command line).
struct OwnRedis {
    port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

impl OwnRedis {
    fn start(password: &str) -> OwnRedis {
        for _ in 0..3 {
            let port = free_port();
            let dir = tempfile::tempdir().unwrap();
            let mut child = Command::new("redis-server")
                .arg("-")
                .current_dir(dir.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server on PATH");
            let conf = format!(
                "port {port}\nbind 127.0.0.1\nsave \"\"\nappendonly no\nrequirepass {password}\n"
            );
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(conf.as_bytes()).unwrap();
            drop(stdin);
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if ask(port, &format!("AUTH {password}\r\nPING\r\n")).contains("+PONG") {
                    return OwnRedis {
                        port,
                        child,
                        _dir: dir,
                    };
                }
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("redis-server did not start");
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Sends `commands` (inline protocol) to 127.0.0.1:`port`; what came back
/// within half a second.
fn ask(port: u16, commands: &str) -> String {
    let Ok(mut conn) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    conn.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    if conn.write_all(commands.as_bytes()).is_err() {
        return String::new();
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 512];
    let lines = commands.matches("\r\n").count();
    while let Ok(n) = conn.read(&mut buf) {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        if got.iter().filter(|&&b| b == b'\n').count() >= lines {
            break;
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// Every process's command line, as `ps` shows it to any user.
fn command_lines() -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(raw) = std::fs::read(entry.path().join("cmdline")) {
            out.push((pid, String::from_utf8_lossy(&raw).replace('\0', " ")));
        }
    }
    out
}

/// Each file under `root` (recursively) that holds `secret`.
fn files_holding(root: &Path, secret: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                seen += 1;
                let hit = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
                if hit {
                    found.push(path.display().to_string());
                }
            }
        }
    }
    assert!(seen >= 5, "the run folder is nearly empty: {seen} files");
    found
}

/// rlbench `run` of `scenario` in `dir` into `dir/out` (not quiet: every
/// line it prints is checked), stdout and stderr to files.
fn spawn_run(dir: &Path, scenario: &str) -> Child {
    let path = write(dir, "s.toml", scenario);
    Command::new(bin())
        .args(["run", path.to_str().unwrap(), "--out", "out"])
        .current_dir(dir)
        .stdout(std::fs::File::create(dir.join("stdout")).unwrap())
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
        .spawn()
        .unwrap()
}

/// Waits for the run (bounded), meanwhile calling `each` every 20 ms with
/// the live processes of the run (replicas, redis-server).
fn watch(child: &mut Child, mut each: impl FnMut(&[u32])) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "the run did not end");
        each(&common::replicas_of(child.id()));
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_redis_password_is_nowhere_in_the_run_folder_the_terminal_or_any_command_line() {
    let redis = OwnRedis::start(PASSWORD);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redis://:{PASSWORD}@127.0.0.1:{}", redis.port);
    let mut child = spawn_run(dir.path(), &scenario(&format!("[redis]\nurl = \"{url}\"")));
    let (mut samples, mut with_replicas) = (0, 0);
    let status = watch(&mut child, |ours| {
        samples += 1;
        if !ours.is_empty() {
            with_replicas += 1;
        }
        for (pid, line) in command_lines() {
            assert!(
                !line.contains(PASSWORD),
                "the password is on the command line of {pid}: {line}"
            );
        }
    });
    let (out, err) = (
        std::fs::read_to_string(dir.path().join("stdout")).unwrap(),
        std::fs::read_to_string(dir.path().join("stderr")).unwrap(),
    );
    assert!(status.success(), "{err}");
    assert!(
        with_replicas >= 10,
        "the replicas were seen in {with_replicas} of {samples} samples"
    );
    assert!(!out.contains(PASSWORD), "{out}");
    assert!(!err.contains(PASSWORD), "{err}");
    let folder = dir.path().join("out");
    assert_eq!(files_holding(&folder, PASSWORD), Vec::<String>::new());
    // The Redis figures were read with the password (INFO needs it), and
    // name the node by its address alone.
    let s = summary(&folder);
    let nodes = arm(&s, "shared")["redis"]["nodes"].clone();
    assert_eq!(
        nodes[0]["address"],
        format!("127.0.0.1:{}", redis.port),
        "{nodes}"
    );
    let copy = std::fs::read_to_string(folder.join("scenario.toml")).unwrap();
    assert!(
        copy.contains(&format!("redis://:***@127.0.0.1:{}", redis.port)),
        "{copy}"
    );
    // `report` rebuilds from that copy without needing the password.
    let again = common::rlbench(&["report", folder.to_str().unwrap()], dir.path());
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(files_holding(&folder, PASSWORD), Vec::<String>::new());
    assert!(wait_no_replicas(child.id(), Duration::from_secs(5)).is_empty());
}

#[test]
fn a_wrong_password_or_an_unreachable_port_is_named_with_the_password_hidden() {
    let redis = OwnRedis::start(PASSWORD);
    let closed = free_port();
    let cases = [
        (
            format!("redis://:n0tth1s@127.0.0.1:{}", redis.port),
            "n0tth1s",
        ),
        (
            format!("redis://default:n0tth1s@127.0.0.1:{}", redis.port),
            "n0tth1s",
        ),
        (format!("redis://:{PASSWORD}@127.0.0.1:{closed}"), PASSWORD),
    ];
    for (url, secret) in cases {
        let dir = tempfile::tempdir().unwrap();
        let (out, pid) = common::run_scenario(
            dir.path(),
            &scenario(&format!("[redis]\nurl = \"{url}\"")),
            &[],
            &[],
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{url}: {err}");
        let shown = url.replace(secret, "***");
        assert!(err.contains(&shown), "{url}: {err}");
        assert!(!err.contains(secret), "{url}: {err}");
        assert!(!text(&out.stdout).contains(secret));
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(wait_no_replicas(pid, Duration::from_secs(2)).is_empty());
    }
}

#[test]
fn the_redis_rlbench_starts_refuses_clients_without_its_per_run_password() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_run(dir.path(), &scenario(""));
    // The port from the run's own words (`arm shared: redis-server at …`),
    // the password from a replica's environment (readable by its owner,
    // this test, and nobody else).
    let (mut port, mut password) = (None::<u16>, None::<String>);
    let mut token = None::<String>;
    let mut refused = String::new();
    let mut conf_mode = None;
    let mut logged_in = false;
    let status = watch(&mut child, |ours| {
        for (pid, line) in command_lines() {
            for secret in password.iter().chain(&token) {
                assert!(
                    !line.contains(secret.as_str()),
                    "on the command line of {pid}: {line}"
                );
            }
        }
        if port.is_none() {
            let err = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
            port = err.lines().find_map(|l| {
                let at = l.split("redis-server at ").nth(1)?;
                assert!(at.starts_with("redis://:***@127.0.0.1:"), "{l}");
                at.rsplit(':').next()?.trim().parse().ok()
            });
        }
        if let (Some(p), true) = (port, refused.is_empty()) {
            refused = ask(p, "PING\r\n");
        }
        for pid in ours {
            let root = Path::new("/proc").join(pid.to_string());
            if password.is_none() {
                let environ = std::fs::read(root.join("environ")).unwrap_or_default();
                let environ = String::from_utf8_lossy(&environ);
                password = environ
                    .split("redis://:")
                    .nth(1)
                    .and_then(|rest| rest.split('@').next())
                    .map(str::to_string);
                token = environ
                    .split("\"admin_token\":\"")
                    .nth(1)
                    .and_then(|rest| rest.split('"').next())
                    .map(str::to_string);
            }
            if conf_mode.is_none() {
                if let Ok(cwd) = std::fs::read_link(root.join("cwd")) {
                    use std::os::unix::fs::PermissionsExt;
                    let mode = |p: &Path| {
                        let meta = std::fs::metadata(p).ok()?;
                        Some(meta.permissions().mode() & 0o777)
                    };
                    if let (Some(conf), Some(folder)) = (mode(&cwd.join("redis.conf")), mode(&cwd))
                    {
                        conf_mode = Some((conf, folder));
                    }
                }
            }
        }
        if let (Some(p), Some(pw), false) = (port, &password, logged_in) {
            // The password the replicas were given is the server's.
            logged_in = ask(p, &format!("AUTH {pw}\r\nPING\r\n")).contains("+PONG");
        }
    });
    let err = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    let out = std::fs::read_to_string(dir.path().join("stdout")).unwrap();
    assert!(status.success(), "{err}");
    assert!(port.is_some(), "no redis-server line: {err}");
    assert!(
        refused.starts_with("-NOAUTH"),
        "an unauthenticated PING: {refused:?}"
    );
    assert_eq!(
        conf_mode,
        Some((0o600, 0o700)),
        "redis.conf and its folder are the owner's only"
    );
    assert!(logged_in, "the replicas' password never let a client in");
    let password = password.expect("a replica's config names the password");
    assert_eq!(password.len(), 32, "{password}");
    assert!(!err.contains(&password) && !out.contains(&password));
    let token = token.expect("a replica's config holds the admin token");
    assert_ne!(token, password, "two secrets, drawn apart");
    let folder = dir.path().join("out");
    for secret in [&password, &token] {
        assert!(!err.contains(secret.as_str()) && !out.contains(secret.as_str()));
        assert_eq!(files_holding(&folder, secret), Vec::<String>::new());
    }
    assert!(wait_no_replicas(child.id(), Duration::from_secs(5)).is_empty());
}

/// The replicas' admin endpoint, started by rlbench, refuses a caller
/// without the stack's token: `rlbench serve` keeps a stack up, and
/// nothing it prints lets a user step a clock.
#[test]
fn the_admin_endpoint_of_a_served_replica_wants_its_token() {
    let dir = tempfile::tempdir().unwrap();
    let served = write(
        dir.path(),
        "serve.toml",
        r#"
name = "served"
duration = "1s"
[policy]
algorithm = "fixed_window"
limit = 10
window = "1s"
[load]
rate = 1
[[arms]]
name = "one"
mode = "local"
"#,
    );
    let mut child = Command::new(bin())
        .args(["serve", served.to_str().unwrap()])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let serve = common::Running(Some(child));
    let mut line = String::new();
    let address = loop {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "serve ended");
        if let Some(at) = line.split("POST http://").nth(1) {
            break at.split('/').next().unwrap().to_string();
        }
    };
    let put = |authorization: &str| {
        let mut conn = TcpStream::connect(address.as_str()).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        write!(
            conn,
            "PUT /admin/clock-skew?us=5 HTTP/1.1\r\nHost: x\r\n{authorization}Content-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        let _ = conn.read_to_string(&mut answer);
        answer.lines().next().unwrap_or("").to_string()
    };
    assert!(put("").contains(" 401 "), "{}", put(""));
    let wrong = "Authorization: Bearer 00000000000000000000000000000000\r\n";
    assert!(put(wrong).contains(" 401 "), "{}", put(wrong));
    drop(serve);
}
