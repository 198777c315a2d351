//! One replica as a child process: started by re-executing rlbench's own
//! binary through the hidden `replica` subcommand, its config (Redis
//! password and admin token included) in its environment rather than on
//! its command line, with a pipe on stdin (the replica exits when it
//! closes, a second line of defence if rlbench is killed), and ready once
//! it prints its address.

use super::child::Supervised;
use super::error::StackError;
use reference_api::replica::{CONFIG_ENV, READY_PREFIX};
use reference_api::ReplicaConfig;
use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStdin, Command};

const STDERR_LINES: usize = 20;

pub(super) struct Replica {
    pub name: String,
    /// `http://127.0.0.1:PORT`
    pub url: String,
    process: Supervised,
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Replica {
    /// Starts a replica on `listen`, or on a free port when `None`.
    pub(super) async fn start(
        exe: &Path,
        config: &ReplicaConfig,
        run_id: &str,
        ready_within: Duration,
        listen: Option<&str>,
    ) -> Result<Replica, StackError> {
        let name = config.replica.clone();
        let json = serde_json::to_string(config).map_err(|source| StackError::ReplicaConfig {
            name: name.clone(),
            source,
        })?;
        let mut command = Command::new(exe);
        command.args(["replica", "--run-id", run_id]);
        if let Some(addr) = listen {
            command.args(["--listen", addr]);
        }
        command
            .env(CONFIG_ENV, json)
            .env(super::child::RUN_ENV, run_id)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut process = Supervised::spawn(&mut command).map_err(|source| StackError::Spawn {
            what: format!("replica {name} ({})", exe.display()),
            source,
        })?;
        let child = process.child_mut().ok_or(StackError::ReplicaVanished)?;
        let (stdin, stdout, stderr_pipe) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(err) = stderr_pipe {
            let tail = stderr.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(err).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
                    if tail.len() == STDERR_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            });
        }
        let mut replica = Replica {
            name: name.clone(),
            url: String::new(),
            process,
            stdin,
            stderr,
        };
        let Some(stdout) = stdout else {
            return Err(StackError::ReplicaNoStdout { name });
        };
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(ready_within, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line.strip_prefix(READY_PREFIX) {
                    return Some(url.trim().to_string());
                }
            }
            None
        })
        .await;
        match ready {
            Ok(Some(url)) => replica.url = url,
            Ok(None) => {
                let status = replica.process.wait_exit().await;
                // Let the stderr reader catch up with the last words.
                tokio::time::sleep(Duration::from_millis(50)).await;
                return Err(StackError::ReplicaExited {
                    name,
                    status,
                    stderr: replica.stderr_tail(),
                });
            }
            Err(_) => {
                return Err(StackError::ReplicaNotReady {
                    name,
                    within: ready_within,
                    stderr: replica.stderr_tail(),
                })
            }
        }
        // Keep draining stdout so the replica never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(replica)
    }

    pub(super) fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    pub(super) fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        let text = tail.iter().cloned().collect::<Vec<_>>().join(" | ");
        if text.is_empty() {
            "no output".to_string()
        } else {
            text
        }
    }

    pub(super) fn has_exited(&mut self) -> bool {
        self.process.has_exited()
    }

    pub(super) async fn stop(&mut self) {
        drop(self.stdin.take());
        self.process.stop().await;
    }

    /// SIGKILL, no grace (a crash), and reaped.
    pub(super) async fn kill(&mut self) {
        self.process.signal(nix::sys::signal::Signal::SIGKILL);
        let _ = self.process.wait_exit().await;
    }

    /// `127.0.0.1:PORT` of its URL.
    pub(super) fn address(&self) -> &str {
        self.url.trim_start_matches("http://")
    }
}
