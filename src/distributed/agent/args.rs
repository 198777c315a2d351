//! The agent's command line, as `rlbench agent` checked it.

use crate::distributed::link::ClockSource;
use crate::distributed::seal::Token;
use std::time::Duration;

/// What `rlbench agent` was asked, checked.
pub(crate) struct AgentArgs {
    pub coordinator: String,
    /// The secret shared with the controllers it serves.
    pub token: Token,
    pub name: String,
    /// `(index, of)`: placed by a Kubernetes Indexed Job.
    pub index: Option<(usize, usize)>,
    /// Exit once a run it served ends.
    pub once: bool,
    pub clock: ClockSource,
    /// `--allow-remote-targets`: load may go off this machine's loopback.
    /// Only this agent's own command line can say so, never a scenario.
    pub allow_remote_targets: bool,
    /// `--idle-timeout`: with no run for this long, give up (exit 3).
    pub idle_timeout: Option<Duration>,
}
