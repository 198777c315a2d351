//! One replica as a child process: started by re-executing rlbench's own
//! binary through the hidden `replica` subcommand, in its own process group
//! with a pipe on stdin, and stopped with SIGTERM, a grace period, then
//! SIGKILL. Dropping a `Replica` kills it at once, so a panic or an
//! abandoned start leaves no process behind; and should rlbench itself be
//! killed, the replica sees its stdin close and exits.

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use reference_api::replica::READY_PREFIX;
use reference_api::ReplicaConfig;
use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

const GRACE: Duration = Duration::from_secs(3);
const STDERR_LINES: usize = 20;

pub struct Replica {
    pub name: String,
    /// `http://127.0.0.1:PORT`
    pub url: String,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Replica {
    pub async fn start(
        exe: &Path,
        config: &ReplicaConfig,
        run_id: &str,
        ready_within: Duration,
    ) -> Result<Replica, String> {
        let name = config.replica.clone();
        let json = serde_json::to_string(config).map_err(|e| format!("replica {name}: {e}"))?;
        let mut child = Command::new(exe)
            .args(["replica", "--run-id", run_id, "--config-json", &json])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start replica {name} ({}): {e}", exe.display()))?;
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(err) = child.stderr.take() {
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
            stdin: child.stdin.take(),
            stderr,
            child: None,
        };
        let stdout = child.stdout.take();
        replica.child = Some(child);
        let Some(stdout) = stdout else {
            return Err(format!("replica {name}: no stdout"));
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
                let status = match replica.child.as_mut() {
                    Some(c) => c.wait().await.map(|s| s.to_string()).unwrap_or_default(),
                    None => String::new(),
                };
                // Let the stderr reader catch up with the last words.
                tokio::time::sleep(Duration::from_millis(50)).await;
                return Err(format!(
                    "replica {name} exited during start ({status}): {}",
                    replica.stderr_tail()
                ));
            }
            Err(_) => {
                return Err(format!(
                    "replica {name} did not report ready within {ready_within:?}: {}",
                    replica.stderr_tail()
                ))
            }
        }
        // Keep draining stdout so the replica never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(replica)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        let text = tail.iter().cloned().collect::<Vec<_>>().join(" | ");
        if text.is_empty() {
            "no output".to_string()
        } else {
            text
        }
    }

    /// Whether the process has exited (and so cannot serve).
    pub fn has_exited(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => !matches!(c.try_wait(), Ok(None)),
            None => true,
        }
    }

    /// SIGTERM, up to `GRACE` to exit, then SIGKILL; always reaps.
    pub async fn stop(&mut self) {
        drop(self.stdin.take());
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Some(pid) = child.id() {
            signal_group(pid, Signal::SIGTERM);
            if tokio::time::timeout(GRACE, child.wait()).await.is_ok() {
                return;
            }
            signal_group(pid, Signal::SIGKILL);
        }
        let _ = child.wait().await;
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            if let Some(pid) = child.id() {
                signal_group(pid, Signal::SIGKILL);
            }
            let _ = child.start_kill();
        }
    }
}

fn signal_group(pid: u32, signal: Signal) {
    // The replica leads its own group (process_group(0)), so its id is the group's.
    let _ = killpg(Pid::from_raw(pid as i32), signal);
}
