//! The command line (clap). Parsing only: `run`, `agent`, `check`,
//! `report`, `export`, `explain`, `doctor`, `init`, `completions`, `man`,
//! `compare`, `attack`, `audit`, `probe`, `serve`, and the hidden `replica`
//! through which rlbench starts its own replicas. Every flag arrives typed
//! (cli/values.rs): a bad value is clap's error, exit 2. The subcommands
//! with flags of their own struct are in cli/ by subcommand (run and agent,
//! attack, audit, probe), `--format`'s values in cli/output.rs.

pub(crate) mod attack;
pub(crate) mod audit;
pub(crate) mod output;
pub(crate) mod probe;
pub(crate) mod run;
pub(crate) mod tls;
pub(crate) mod values;

use crate::events::export::Format;
use attack::AttackArgs;
use audit::AuditArgs;
use clap::{Parser, Subcommand};
use hyper::header::HeaderName;
use output::OutputFormat;
use probe::ProbeArgs;
use run::{AgentArgs, RunArgs};
use std::net::SocketAddr;
use std::path::PathBuf;

/// `text` as standard error shows it: folded at 80 columns (or
/// `COLUMNS`) on a terminal or with `COLUMNS` set, whole with `--wide` or
/// into a pipe — as standard output is.
pub(crate) fn for_stderr(text: &str, wide: bool) -> String {
    match crate::report::fold::stderr_width(wide) {
        Some(w) => crate::report::fold::fold(text, w),
        None => text.to_string(),
    }
}

/// A command line clap refused, in one line like every rlbench error:
/// clap's own words, without its usage block and its pointer to --help.
pub(crate) fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut line = String::new();
    for part in text
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        if !line.is_empty() {
            line.push_str(if line.ends_with(':') { " " } else { "; " });
        }
        line.push_str(part);
    }
    line.trim_start_matches("error: ").to_string()
}

#[derive(Debug, Parser)]
#[command(
    name = "rlbench",
    version,
    about = "Load-test rate limiters across real replicas and prove whether they admit what their policy says"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Colour: auto (on a terminal, unless NO_COLOR is set), always or never.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = clap::ColorChoice::Auto)]
    pub color: clap::ColorChoice,
    /// The verdict table with every column (mode, replicas, allowed, peak,
    /// possible, p50), wider than 80 columns, and no line folded (on a
    /// terminal, or with COLUMNS set, lines fold at 80 columns or COLUMNS).
    #[arg(long, global = true)]
    pub wide: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run a scenario's arms, verify every decision, write the report.
    Run(RunArgs),
    /// A load agent for `run --agents`: registers with the coordinator and
    /// sends its segment of each arm's schedule.
    Agent(AgentArgs),
    /// Validate a scenario without running anything; names every error in
    /// the file (each on its own line, in the file's order), not only the first.
    Check {
        /// The scenario file (TOML).
        scenario: PathBuf,
        /// What stdout carries: the text, or one JSON document.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Rebuild every report file of a run folder from its events.
    Report {
        /// A run folder, e.g. reports/three-replicas/latest.
        run_dir: PathBuf,
        /// Judge only shard I of N of every arm's keys (by key hash) and
        /// keep its judgments in the folder, for --shards N to add up;
        /// e.g. 0/4. No gate is judged.
        #[arg(long, value_name = "I/N", conflicts_with = "shards")]
        shard: Option<String>,
        /// Finish the folder from the judgments of its N shards (each
        /// judged by --shard I/N, on any machine): exactly the report and
        /// gate of judging every key at once.
        #[arg(long, value_name = "N")]
        shards: Option<u32>,
    },
    /// Print a run's trace (every request of its arms) as CSV or JSON Lines.
    Export {
        /// A run folder, e.g. reports/three-replicas/latest.
        run_dir: PathBuf,
        /// Only this arm (repeat for several); all arms when not given.
        #[arg(long = "arm", value_name = "NAME")]
        arms: Vec<String>,
        /// csv (with an `arm` column first) or jsonl.
        #[arg(long, value_enum, default_value_t = Format::Csv)]
        format: Format,
    },
    /// The proof behind a run's verdicts: each violation's and false
    /// reject's requests and the rule they break, from the run folder.
    Explain {
        /// A run folder, e.g. reports/three-replicas/latest.
        run_dir: PathBuf,
        /// Only this arm.
        #[arg(long)]
        arm: Option<String>,
        /// Only this key (e.g. customer-0003).
        #[arg(long)]
        key: Option<String>,
        /// Witnesses of each kind per arm: the earliest and the largest.
        #[arg(long, default_value_t = 5)]
        limit: usize,
        /// What stdout carries: the text, or one JSON document.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Check this machine for what load tests trip on (and, given a
    /// scenario, what it needs): ok / warn / missing, with the fix.
    Doctor {
        /// A scenario whose needs to check too.
        scenario: Option<PathBuf>,
        /// What stdout carries: the text, or one JSON document.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Write a commented starter scenario (NAME.toml) that passes `check`.
    Init {
        /// The scenario's name and file name.
        #[arg(default_value = "starter")]
        name: String,
        /// Judge your own limiter at this loopback URL (an external target)
        /// instead of the reference API's replicas.
        #[arg(long, value_name = "URL")]
        target: Option<String>,
        /// The [policy] keys on one line, e.g.
        /// 'algorithm = "fixed_window", limit = 5, window = "1m"'.
        #[arg(long, value_name = "KEYS", conflicts_with = "preset")]
        policy: Option<String>,
        /// With --target: a limiter people run, its policy written in its
        /// own terms with the numbers to set (nginx, haproxy,
        /// express-rate-limit, governor, redis-cell, aspnetcore).
        #[arg(long, value_enum, requires = "target")]
        preset: Option<InitPreset>,
        /// With --target: the request header your limiter keys on
        /// (default X-Customer-Id).
        #[arg(long, value_name = "NAME", value_parser = values::header_name, requires = "target")]
        key_header: Option<HeaderName>,
        /// With --target: find the key and the policy first, as `rlbench
        /// probe URL --write NAME` does (a bounded load to the target: at
        /// most 5000 requests in 60 s). The default without --policy or
        /// --preset.
        #[arg(long, requires = "target", conflicts_with_all = ["policy", "preset", "no_probe"])]
        probe: bool,
        /// With --target: write a template instead, its [policy] commented
        /// out (`rlbench run` refuses it until the policy is declared).
        #[arg(long, requires = "target", conflicts_with_all = ["policy", "preset"])]
        no_probe: bool,
        /// With --target https://…: trust the certificate authorities in
        /// this PEM file, as probe and attack take it (kept in the starter).
        #[arg(long, value_name = "FILE", requires = "target", conflicts_with_all = ["insecure", "policy", "preset", "no_probe"])]
        cacert: Option<std::path::PathBuf>,
        /// With --target https://…: check nothing of the server's
        /// certificate (kept in the starter).
        #[arg(long, short = 'k', requires = "target", conflicts_with_all = ["policy", "preset", "no_probe"])]
        insecure: bool,
        /// Overwrite NAME.toml if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Shell completions for bash, zsh or fish, on stdout (e.g.
    /// `rlbench completions bash > /etc/bash_completion.d/rlbench`).
    Completions { shell: clap_complete::Shell },
    /// The manual page (roff), on stdout: `rlbench man > rlbench.1; man ./rlbench.1`.
    Man,
    /// Two runs (run folders or summary.json files) side by side, arm by
    /// arm, in the terminal and on an HTML page with both runs' charts.
    Compare {
        baseline: PathBuf,
        candidate: PathBuf,
        /// Also exit 1 when the candidate's over-admission ratio (past
        /// 1), definite violations or false-reject ratio rose by more than
        /// this share, e.g. "10%", or its p99 latency did and by more than
        /// --latency-floor. Without it only what is not noise fails: a
        /// proven over-admit or a false reject where there was none, the
        /// gate turning red, an arm gone.
        #[arg(long, value_name = "SHARE", value_parser = values::share)]
        max_regression: Option<f64>,
        /// A p99 rise smaller than this is noise, whatever its share
        /// (with --max-regression).
        #[arg(long, value_name = "DURATION", default_value = "1ms", value_parser = values::bound)]
        latency_floor: std::time::Duration,
        /// Where the HTML page goes: a file, or a folder to hold
        /// compare.html (default: reports/compare.html, overwritten by the
        /// next compare); never inside a run folder.
        #[arg(long, value_name = "PATH")]
        html: Option<PathBuf>,
        /// Overwrite --html's file even when it is not a page rlbench wrote.
        #[arg(long)]
        force: bool,
        /// Exit 1 when the runs are not comparable (scenario, duration,
        /// the arms, an arm's rate, policy, URLs, key place or keys), not
        /// only say so.
        #[arg(long)]
        strict: bool,
        /// What stdout carries: the text, or one JSON document.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Load any loopback URL without a scenario file and print the summary.
    Attack(Box<AttackArgs>),
    /// Judge a limiter from its access logs (nginx, HAProxy, Envoy's JSON,
    /// any JSON lines) or another load tool's results (k6's --out json,
    /// vegeta's CSV):
    /// each line a decided request, judged against --policy as a run is.
    Audit(Box<AuditArgs>),
    /// Find what a limiter keys on and which policy explains its every
    /// decision, from outside, with a short bounded probing load (to this
    /// machine only); prints the fits, what was ruled out and why, and
    /// the best one as --policy (with --write, a starter scenario).
    Probe(Box<ProbeArgs>),
    /// Bring one arm's replicas up and keep them up until Ctrl-C.
    Serve {
        scenario: PathBuf,
        /// The arm to serve (default: the first).
        #[arg(long)]
        arm: Option<String>,
        /// Replica i listens on 127.0.0.1:(PORT + i) (default: free ports).
        #[arg(long)]
        port: Option<u16>,
    },
    /// Internal: run as one replica of the reference API.
    #[command(hide = true)]
    Replica {
        /// The config as JSON (default: the RLBENCH_REPLICA_CONFIG
        /// environment variable, which is how rlbench passes it: a command
        /// line is visible to every local user).
        #[arg(long)]
        config_json: Option<String>,
        /// Marks the process as belonging to one rlbench run.
        #[arg(long)]
        run_id: Option<String>,
        /// Listen here (a replica restarted on its port) instead of a free port.
        #[arg(long)]
        listen: Option<SocketAddr>,
    },
}

/// `init --preset`: a limiter people run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum InitPreset {
    Nginx,
    Haproxy,
    ExpressRateLimit,
    Governor,
    RedisCell,
    Aspnetcore,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(args: &[&str]) -> String {
        let e = Cli::try_parse_from(args).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        one_line(&e)
    }

    #[test]
    fn a_refused_command_line_is_one_line_in_clap_s_words() {
        let bad = refused(&["rlbench", "attack", "http://127.0.0.1:9/", "-d", "1s"]);
        assert_eq!(
            bad,
            "the following required arguments were not provided: \
             <--rate <RATE>|--concurrency <CONCURRENCY>>"
        );
        let bad = refused(&["rlbench", "run", "x.toml", "--duration", "10"]);
        assert!(
            bad.starts_with("invalid value '10' for '--duration"),
            "{bad}"
        );
        assert!(!bad.contains('\n'), "{bad}");
        let bad = refused(&["rlbench", "run", "x.toml", "--durashun", "1s"]);
        assert!(
            bad.starts_with("unexpected argument '--durashun' found; tip:"),
            "{bad}"
        );
        assert!(!bad.contains("Usage"), "{bad}");
    }
}
