//! A Redis server rlbench runs itself: `redis-server` on a free loopback
//! port, no persistence, its own temporary folder, a random password
//! (`requirepass`, and `masterauth` for a replica of a server with the
//! same one), ready once it answers PING; stopped (and the folder removed)
//! on every exit path. The password is in a config file only its owner
//! can read, never on the command line (which `ps` shows every user), and
//! in `url`, which clients connect with and nothing shows (`redacted_url` is
//! the URL for words).

use super::child::Supervised;
use super::error::{StackError, Waited};
use reference_api::redis_url;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;
use tokio::time::Instant;

const READY_WITHIN: Duration = Duration::from_secs(10);

pub struct RedisServer {
    /// `redis://:PASSWORD@127.0.0.1:PORT`: to connect with, never to show.
    pub url: String,
    pub port: u16,
    password: String,
    process: Supervised,
    dir: tempfile::TempDir,
    /// Arguments past the common ones (a cluster node's), kept for `restart`.
    extra: Vec<String>,
}

impl RedisServer {
    /// `label` marks the process (environment `RLBENCH_RUN`), so a run's
    /// processes can be found from outside; its folder is named after
    /// this process (`leftovers`). The server gets a fresh random password.
    pub async fn start(label: &str) -> Result<RedisServer, StackError> {
        Self::start_with(label, &super::secret::fresh()?, |_| Ok(Vec::new())).await
    }

    /// As [`RedisServer::start`], with `password` (shared by the nodes of
    /// a cluster or a pair, which authenticate to each other with it) and
    /// more arguments made for the port the server gets (a cluster node's
    /// bus port, say).
    pub async fn start_with(
        label: &str,
        password: &str,
        extra: impl Fn(u16) -> Result<Vec<String>, StackError>,
    ) -> Result<RedisServer, StackError> {
        let exe = find_on_path("redis-server").ok_or(StackError::RedisMissing)?;
        // A port found free can be taken before redis binds it: try a few.
        let mut tries = 1;
        loop {
            let port = free_port()?;
            match Self::start_on(&exe, port, label, password, extra(port)?).await {
                Ok(server) => return Ok(server),
                Err((true, _)) if tries < 3 => tries += 1,
                Err((_, why)) => return Err(why),
            }
        }
    }

    /// `Err((true, why))` when another port may work.
    async fn start_on(
        exe: &PathBuf,
        port: u16,
        label: &str,
        password: &str,
        extra: Vec<String>,
    ) -> Result<RedisServer, (bool, StackError)> {
        // The owner's alone, like the config file in it.
        let dir = tempfile::Builder::new()
            .prefix(&format!("{}redis-", super::leftovers::prefix()))
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .map_err(|e| (false, StackError::RedisFolder(e)))?;
        let log = dir.path().join("redis.log");
        let conf = dir.path().join("redis.conf");
        write_private(
            &conf,
            &format!("requirepass {password}\nmasterauth {password}\n"),
        )
        .map_err(|source| {
            let path = conf.clone();
            (false, StackError::RedisConfig { path, source })
        })?;
        let mut command = Command::new(exe);
        command
            // The config file first (redis-server's rule), the rest after.
            .arg(&conf)
            .arg("--port")
            .arg(port.to_string())
            .args([
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
            ])
            .arg("--dir")
            .arg(dir.path())
            .arg("--logfile")
            .arg(&log)
            .args(&extra)
            .env(super::child::RUN_ENV, label)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let process = Supervised::spawn(&mut command).map_err(|source| {
            let what = exe.display().to_string();
            (false, StackError::Spawn { what, source })
        })?;
        let mut server = RedisServer {
            url: with_password(password, &format!("127.0.0.1:{port}")),
            port,
            password: password.to_string(),
            process,
            dir,
            extra,
        };
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if ping(&server.url).await {
                return Ok(server);
            }
            if server.process.has_exited() {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                let last = text.lines().last().unwrap_or("no log").trim().to_string();
                let retry = text.contains("Address already in use");
                return Err((retry, StackError::RedisExited { port, last }));
            }
            if Instant::now() > deadline {
                server.stop().await;
                let waited = Waited::Ping { port };
                let within = READY_WITHIN;
                return Err((false, StackError::TimedOut { waited, within }));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    /// Its URL for words: the password hidden.
    pub fn redacted_url(&self) -> String {
        redis_url::redact(&self.url)
    }

    /// The URL that reaches this server through `address` (a proxy in
    /// front of it), password included.
    pub fn url_at(&self, address: &str) -> String {
        with_password(&self.password, address)
    }

    pub fn folder(&self) -> &std::path::Path {
        self.dir.path()
    }

    pub async fn stop(&mut self) {
        self.process.stop().await;
    }

    /// SIGSTOP: the server keeps its port and its data but answers nothing.
    pub fn pause(&self) {
        self.process.signal(nix::sys::signal::Signal::SIGSTOP);
    }

    /// SIGCONT after `pause`.
    pub fn resume(&self) {
        self.process.signal(nix::sys::signal::Signal::SIGCONT);
    }

    /// SIGKILL (a crash: data and script cache gone), and reaped.
    pub async fn kill(&mut self) {
        self.process.signal(nix::sys::signal::Signal::SIGKILL);
        let _ = self.process.wait_exit().await;
    }

    /// A fresh server on the same port (after `kill`), marked like the first.
    pub async fn restart(&mut self, label: &str) -> Result<(), StackError> {
        let exe = find_on_path("redis-server").ok_or(StackError::RedisMissing)?;
        let fresh = Self::start_on(&exe, self.port, label, &self.password, self.extra.clone())
            .await
            .map_err(|(_, why)| why)?;
        *self = fresh;
        Ok(())
    }
}

fn with_password(password: &str, address: &str) -> String {
    // Hex: nothing in it needs escaping in a URL.
    format!("redis://:{password}@{address}")
}

/// Writes a file only its owner can read (it is created so, never widened).
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())
}

/// One PING round trip (`url` with its password when it needs one).
pub(crate) async fn ping(url: &str) -> bool {
    let attempt = async {
        let client = redis::Client::open(url).ok()?;
        let mut conn = client.get_multiplexed_async_connection().await.ok()?;
        let pong: String = redis::cmd("PING").query_async(&mut conn).await.ok()?;
        Some(pong == "PONG")
    };
    matches!(
        tokio::time::timeout(Duration::from_millis(500), attempt).await,
        Ok(Some(true))
    )
}

pub(crate) fn free_port() -> Result<u16, StackError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(StackError::NoFreePort)?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(StackError::NoFreePort)
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}
