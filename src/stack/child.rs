//! A child process rlbench supervises: its own process group, a request to
//! die with rlbench (PR_SET_PDEATHSIG), SIGTERM then SIGKILL to stop, and a
//! kill on drop — so no path out of rlbench leaves it running.

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::time::Duration;
use tokio::process::{Child, Command};

const GRACE: Duration = Duration::from_secs(3);

pub(super) struct Supervised {
    child: Option<Child>,
}

impl Supervised {
    pub(super) fn spawn(command: &mut Command) -> std::io::Result<Self> {
        command.process_group(0).kill_on_drop(true);
        #[cfg(target_os = "linux")]
        // SAFETY: runs in the forked child before exec; prctl is a plain
        // system call, async-signal-safe, touching no shared state.
        unsafe {
            command.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)
            });
        }
        Ok(Supervised {
            child: Some(command.spawn()?),
        })
    }

    pub(super) fn child_mut(&mut self) -> Option<&mut Child> {
        self.child.as_mut()
    }

    pub(super) fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    pub(super) fn has_exited(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => !matches!(c.try_wait(), Ok(None)),
            None => true,
        }
    }

    /// Waits for the process to end by itself; its exit status as text.
    pub(super) async fn wait_exit(&mut self) -> String {
        match self.child.as_mut() {
            Some(c) => c.wait().await.map(|s| s.to_string()).unwrap_or_default(),
            None => String::new(),
        }
    }

    /// Sends `signal` to the process group.
    pub(super) fn signal(&self, signal: Signal) {
        if let Some(pid) = self.pid() {
            // The child leads its own group (process_group(0)).
            let _ = killpg(Pid::from_raw(pid as i32), signal);
        }
    }

    /// SIGTERM, up to `GRACE` to exit, then SIGKILL; always reaps.
    pub(super) async fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Some(pid) = child.id() {
            let group = Pid::from_raw(pid as i32);
            let _ = killpg(group, Signal::SIGCONT);
            let _ = killpg(group, Signal::SIGTERM);
            if tokio::time::timeout(GRACE, child.wait()).await.is_ok() {
                return;
            }
            let _ = killpg(group, Signal::SIGKILL);
        }
        let _ = child.wait().await;
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
    }
}

/// Every process a stack starts carries the run's id in this environment
/// variable (redis-server rewrites its command line; its environment stays).
pub(crate) const RUN_ENV: &str = "RLBENCH_RUN";
