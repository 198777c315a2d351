//! `rlbench run`'s flags, and `rlbench agent`'s: a load agent serving
//! `run --agents`.

use super::output::OutputFormat;
use super::values;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
    /// The run folder (default: reports/<scenario>/<UTC timestamp>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Overrides the scenario's duration, e.g. "5s".
    #[arg(long, value_parser = values::spelled_duration)]
    pub duration: Option<(Duration, String)>,
    /// Run only this arm (repeatable).
    #[arg(long = "arm", value_name = "NAME")]
    pub arms: Vec<String>,
    /// No progress lines; the summary table and errors still print.
    #[arg(long, short)]
    pub quiet: bool,
    /// What stdout carries: the text (default), or one JSON document
    /// (everything else goes to stderr).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Load agents (`rlbench agent`) split each arm's schedule; one merged
    /// trace is judged here. Overrides [distributed] agents.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub agents: Option<u16>,
    /// The Redis the agents were started with, e.g. redis://127.0.0.1:6379
    /// (or RLBENCH_COORDINATOR, which keeps a password out of the process
    /// list).
    // Checked after parsing (app::run), so that a URL that does not
    // parse is never echoed with its password.
    #[arg(long, value_name = "URL")]
    pub coordinator: Option<String>,
    /// The secret shared with the agents, at least 16 characters: every
    /// message is signed with it. Better from RLBENCH_COORDINATOR_TOKEN,
    /// out of the process list.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// The most an agent's times may be off before nothing of the run is
    /// proven (the gate fails), e.g. "25ms". Overrides [distributed]
    /// max_clock_uncertainty (default 10ms).
    #[arg(long, value_name = "DURATION", value_parser = values::duration)]
    pub max_clock_uncertainty: Option<Duration>,
    /// How long to wait for the agents to register, e.g. "2m" (default 60s).
    #[arg(long, value_name = "DURATION", value_parser = values::duration)]
    pub agents_wait: Option<Duration>,
    /// Tests only: agents take their own wall clocks for the coordinator's
    /// (no offsets measured), to show what that costs.
    #[arg(long, hide = true)]
    pub trust_agent_clocks: bool,
    /// Follow the run in a browser: a page on a loopback address (default
    /// 127.0.0.1:0, a free port; its URL is printed) with progress,
    /// outcomes per second and latency, then the verdicts and the report.
    #[arg(
        long,
        value_name = "ADDR",
        num_args = 0..=1,
        default_missing_value = "127.0.0.1:0",
        value_parser = values::live_addr
    )]
    pub live: Option<SocketAddr>,
}

#[derive(Debug, Args)]
pub(crate) struct AgentArgs {
    /// The Redis the controller (`rlbench run --agents N --coordinator URL`)
    /// uses, e.g. redis://127.0.0.1:6379.
    #[arg(
        long,
        env = "RLBENCH_COORDINATOR",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub coordinator: String,
    /// The secret shared with the controllers it serves, at least 16
    /// characters: it does only work signed with it. Better from
    /// RLBENCH_COORDINATOR_TOKEN, out of the process list.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Send load to targets off this machine's loopback when a run asks
    /// (only this command line can allow it, never a scenario).
    #[arg(long)]
    pub allow_remote_targets: bool,
    /// Exit (3) when no run leased this agent for this long, e.g. "5m": a
    /// Job's agents end when their controller never came.
    #[arg(long, value_name = "DURATION", value_parser = values::duration)]
    pub idle_timeout: Option<Duration>,
    /// This agent's name among the coordinator's agents (default: the
    /// host's name and the process id; `index-I` in a Kubernetes Indexed
    /// Job, from JOB_COMPLETION_INDEX and RLBENCH_AGENTS).
    #[arg(long)]
    pub name: Option<String>,
    /// Exit after the first run it serves ends (a Job's pod).
    #[arg(long)]
    pub once: bool,
}
