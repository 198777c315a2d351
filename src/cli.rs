//! The command line (clap). Parsing only: `run`, `check`, `serve`, and the
//! hidden `replica` through which rlbench starts its own replicas.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "rlbench",
    version,
    about = "Load-test rate limiters across real replicas and prove whether they admit what their policy says"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scenario's arms, verify every decision, write the report.
    Run(RunArgs),
    /// Validate a scenario without running anything.
    Check {
        /// The scenario file (TOML).
        scenario: PathBuf,
    },
    /// Rebuild every report file of a run folder from its events.
    Report {
        /// A run folder, e.g. reports/three-replicas/latest.
        run_dir: PathBuf,
    },
    /// Two summary.json files side by side, arm by arm.
    Compare {
        baseline: PathBuf,
        candidate: PathBuf,
        /// Exit 1 when the candidate's over-admission ratio or p99 latency
        /// is worse by more than this share, e.g. "10%".
        #[arg(long, value_name = "SHARE")]
        max_regression: Option<String>,
    },
    /// Bring one arm's replicas up and keep them up until Ctrl-C.
    Serve {
        scenario: PathBuf,
        /// The arm to serve (default: the first).
        #[arg(long)]
        arm: Option<String>,
    },
    /// Internal: run as one replica of the reference API.
    #[command(hide = true)]
    Replica {
        #[arg(long)]
        config_json: String,
        /// Marks the process as belonging to one rlbench run.
        #[arg(long)]
        run_id: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
    /// The run folder (default: reports/<scenario>/<UTC timestamp>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Overrides the scenario's duration, e.g. "5s".
    #[arg(long)]
    pub duration: Option<String>,
    /// Run only this arm (repeatable).
    #[arg(long = "arm", value_name = "NAME")]
    pub arms: Vec<String>,
    /// No progress lines; the summary table and errors still print.
    #[arg(long, short)]
    pub quiet: bool,
}
