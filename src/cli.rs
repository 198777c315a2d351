//! The command line (clap). Parsing only: `run`, `agent`, `check`,
//! `report`, `export`, `explain`, `doctor`, `init`, `completions`, `man`,
//! `compare`, `attack`, `audit`, `probe`, `serve`, and the hidden `replica`
//! through which rlbench starts its own replicas. Every flag arrives typed
//! (cli/values.rs): a bad value is clap's error, exit 2.

pub(crate) mod values;

use crate::events::export::Format;
use crate::load::pick::Fanout;
use clap::{ArgGroup, Args, Parser, Subcommand};
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Uri};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

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

/// What a command prints on stdout (`--format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OutputFormat {
    /// Text for a person.
    #[default]
    Text,
    /// One JSON document (summary.json's schema for run and attack).
    Json,
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
        /// probe URL --write NAME` does (a bounded load to the target).
        #[arg(long, requires = "target", conflicts_with_all = ["policy", "preset", "key_header"])]
        probe: bool,
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
        /// Exit 1 when the candidate's over-admission ratio, definite
        /// violations, false-reject ratio or p99 latency is worse by more
        /// than this share, e.g. "10%" (from 0: any rise), or an arm is gone.
        #[arg(long, value_name = "SHARE", value_parser = values::share)]
        max_regression: Option<f64>,
        /// Where the HTML page goes: a file, or a folder to hold
        /// compare.html (default: reports/compare.html, overwritten by the
        /// next compare); never inside a run folder.
        #[arg(long, value_name = "PATH")]
        html: Option<PathBuf>,
        /// Overwrite --html's file even when it is not a page rlbench wrote.
        #[arg(long)]
        force: bool,
        /// Exit 1 when the runs differ in what they ran (scenario,
        /// duration, an arm's rate, the arms), not only warn.
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

/// `--http`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum HttpFlag {
    #[value(name = "1.1")]
    V1,
    #[value(name = "2")]
    V2,
    Auto,
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

impl From<HttpFlag> for crate::load::request::Http {
    fn from(f: HttpFlag) -> Self {
        match f {
            HttpFlag::V1 => crate::load::request::Http::H1,
            HttpFlag::V2 => crate::load::request::Http::H2,
            HttpFlag::Auto => crate::load::request::Http::Auto,
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct ProbeArgs {
    /// Target URLs, loopback only (127.0.0.0/8, ::1, localhost); requests
    /// fan out across them.
    #[arg(required = true, value_name = "URL", value_parser = values::http_url)]
    pub urls: Vec<Uri>,
    /// An extra header on every request, "Name: value" (repeatable); a
    /// header given here is never tried as the key.
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE", value_parser = values::header)]
    pub headers: Vec<(HeaderName, HeaderValue)>,
    #[arg(long, short = 'm', default_value = "GET", value_parser = values::method)]
    pub method: Method,
    /// A header to try as the key first (repeatable), besides X-Api-Key,
    /// X-Customer-Id, X-User-Id, X-Client-Id, a bearer token,
    /// X-Forwarded-For and the client address.
    #[arg(long, value_name = "NAME", value_parser = values::header_name)]
    pub key_header: Vec<HeaderName>,
    /// Statuses that mean "limited" (comma-separated).
    #[arg(
        long,
        value_name = "CODES",
        value_delimiter = ',',
        default_value = "429,503",
        value_parser = values::limited_status
    )]
    pub limited_status: Vec<u16>,
    /// The policy you believe the limiter keeps, as --policy in attack:
    /// judged beside what fits.
    #[arg(long, value_name = "KEYS")]
    pub policy: Option<String>,
    /// At most this many requests in all.
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(100..=1_000_000))]
    pub max_requests: u64,
    /// At most this long in all, e.g. "60s"; a longer one pins longer windows.
    #[arg(long, default_value = "60s", value_parser = values::duration)]
    pub max_time: Duration,
    /// Per-request timeout.
    #[arg(long, default_value = "2s", value_parser = values::duration)]
    pub timeout: Duration,
    /// Write a starter scenario NAME.toml with the key and the best fit.
    #[arg(long, value_name = "NAME")]
    pub write: Option<String>,
    /// Overwrite NAME.toml if it exists.
    #[arg(long, requires = "write")]
    pub force: bool,
}

#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// Log files, one per replica (each replica's clock within
    /// --clock-bound of the others').
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<PathBuf>,
    /// What the lines are.
    #[arg(long = "log", value_enum, value_name = "KIND")]
    pub kind: LogKind,
    /// nginx: the log_format string as configured (it must log $msec,
    /// $request_time, $status and the key's variable).
    #[arg(long, value_name = "FORMAT")]
    pub log_format: Option<String>,
    /// Where the key is: nginx, the variable ('$http_x_api_key'); HAProxy,
    /// which captured request header (1: the first, the default); Envoy
    /// and JSON lines, the field; k6, the tag (default "key"); vegeta,
    /// where in the URL: url, query:NAME, path:N or path:last.
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    /// JSON lines: which fields hold what,
    /// 'start=ts,duration_ms=took,status=code,key=customer' (two of
    /// start, end, duration_ms, duration_s; status and key).
    #[arg(long, value_name = "FIELDS")]
    pub fields: Option<String>,
    /// How far each log's clock may be from the others' (required with
    /// several logs; 0 when they were written on one machine).
    #[arg(long, value_name = "DURATION", value_parser = values::bound)]
    pub clock_bound: Option<Duration>,
    /// The policy the limiter promises, as the keys of a [policy] table
    /// (as attack --policy takes it).
    #[arg(long, value_name = "KEYS")]
    pub policy: String,
    /// Statuses that mean "limited" (comma-separated).
    #[arg(
        long,
        value_name = "CODES",
        value_delimiter = ',',
        default_value = "429",
        value_parser = values::limited_status
    )]
    pub limited_status: Vec<u16>,
    /// A line that cannot be read is skipped and counted (the first few
    /// are named) rather than an error.
    #[arg(long)]
    pub skip_bad_lines: bool,
    /// Keep the run folder (trace, summary.json, report.html) here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Gate: exit 1 when more admits than this are proven beyond --policy
    /// (default 0).
    #[arg(long, value_name = "N")]
    pub max_definite_violations: Option<u64>,
    /// Gate: exit 1 above this share of wrong 429s.
    #[arg(long, value_name = "RATIO", value_parser = values::ratio)]
    pub max_false_reject_ratio: Option<f64>,
    /// Only the summary table and verdicts.
    #[arg(long, short)]
    pub quiet: bool,
    /// What stdout carries: the text (default), or one JSON document.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
}

/// What `rlbench audit` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogKind {
    /// nginx access logs in a --log-format of yours.
    Nginx,
    /// HAProxy's HTTP log (option httplog), the key a captured header.
    Haproxy,
    /// Envoy's JSON access log (start_time, duration, response_code).
    Envoy,
    /// JSON lines with --fields naming what is where.
    Jsonl,
    /// k6's --out json results, the key a tag of each request.
    K6,
    /// vegeta's results as CSV (vegeta encode --to csv), the key in the URL.
    Vegeta,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("loop").required(true).args(["rate", "concurrency"])))]
pub(crate) struct AttackArgs {
    /// Target URLs, loopback only (127.0.0.0/8, ::1, localhost) unless
    /// --allow-remote-targets; requests fan out across them.
    #[arg(required = true, value_name = "URL", value_parser = values::http_url)]
    pub urls: Vec<Uri>,
    /// Open loop: requests per second, e.g. "2000" or "100/10ms".
    #[arg(long, value_parser = values::requests_per_second)]
    pub rate: Option<f64>,
    /// Closed loop: this many workers, each sending its next request when
    /// the last one answered (like wrk's connections).
    #[arg(long, short = 'c', value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub concurrency: Option<u32>,
    /// How long to send, e.g. "30s".
    #[arg(long, short = 'd', value_parser = values::duration)]
    pub duration: Duration,
    /// An extra header on every request, "Name: value" (repeatable).
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE", value_parser = values::header)]
    pub headers: Vec<(HeaderName, HeaderValue)>,
    #[arg(long, short = 'm', default_value = "GET", value_parser = values::method)]
    pub method: Method,
    /// Send a rate-limit key in this header, drawn uniformly from --keys keys.
    #[arg(long, value_name = "NAME", value_parser = values::header_name)]
    pub key_header: Option<HeaderName>,
    /// Or send it where the limiter finds it, as the keys of a scenario's
    /// [load] key: 'source_ip = "127.0.0.0/16"' (each key from an address
    /// of its own), 'query = "api_key"', 'bearer = true', 'path =
    /// "/users/{key}"', 'json_body = "username"', 'forwarded_for = true',
    /// 'jwt = { secret = "…" }'.
    #[arg(long, value_name = "KEYS", conflicts_with = "key_header")]
    pub key_in: Option<String>,
    /// The HTTP version: 1.1, 2 (ALPN h2 over TLS, prior knowledge in
    /// cleartext: many requests share a connection) or auto (2 where the
    /// https:// target agrees to it).
    #[arg(long, value_enum, default_value_t = HttpFlag::V1)]
    pub http: HttpFlag,
    /// A new connection for every request (HTTP/1.1, `connection: close`),
    /// its set-up and TLS handshake counted in its latency (oha's name).
    #[arg(long)]
    pub disable_keepalive: bool,
    /// A request body (with POST, PUT, PATCH): the text given.
    #[arg(long, value_name = "TEXT", conflicts_with = "body_file")]
    pub body: Option<String>,
    /// A request body read from this file (at most 1 MiB).
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// The body's content type (default: JSON when it parses as JSON,
    /// else text).
    #[arg(long, value_name = "TYPE")]
    pub content_type: Option<String>,
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub keys: u32,
    /// How requests spread over the URLs.
    #[arg(long, value_enum, default_value_t = Fanout::RoundRobin)]
    pub fanout: Fanout,
    /// Per-request timeout; a request without an answer by then counts as a timeout.
    #[arg(long, default_value = "2s", value_parser = values::duration)]
    pub timeout: Duration,
    /// Open loop: at most this many requests in flight.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub max_in_flight: u64,
    /// Judge the answers against this policy, given as the keys of a
    /// [policy] table: 'algorithm = "sliding_log", limit = 10, window = "1s"'.
    /// Limiters people run, in their own terms: nginx 'preset =
    /// "nginx_limit_req", rate = "10r/s", burst = 5, nodelay = true' (with
    /// --limited-status 503); HAProxy 'algorithm = "sliding_counter", limit
    /// = 10, window = "1s", count_rejected = true'; express-rate-limit
    /// 'algorithm = "fixed_window", limit = 10, window = "1m"'; a token
    /// bucket 'algorithm = "token_bucket", capacity = 5, refill = "10/1s"'.
    #[arg(long, value_name = "KEYS")]
    pub policy: Option<String>,
    /// Statuses that mean "limited" (comma-separated); nginx's limit_req
    /// answers 503 unless configured otherwise.
    #[arg(
        long,
        value_name = "CODES",
        value_delimiter = ',',
        default_value = "429",
        value_parser = values::limited_status
    )]
    pub limited_status: Vec<u16>,
    /// Act as well-behaved callers: retry a limited answer up to N times,
    /// waiting what Retry-After says, else an exponential backoff with
    /// jitter (100ms doubling to 5s). Each retry is a request of its own.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10))]
    pub retry: Option<u32>,
    /// Keep the run folder (events, summary.json, report.html) here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Gate: exit 1 when more admits than this are proven beyond --policy
    /// (default with --policy: 0).
    #[arg(long, value_name = "N", requires = "policy")]
    pub max_definite_violations: Option<u64>,
    /// Gate: exit 1 when a larger share of the rejects is certainly wrong.
    #[arg(long, value_name = "RATIO", requires = "policy", value_parser = values::ratio)]
    pub max_false_reject_ratio: Option<f64>,
    /// Gate: exit 1 when a larger share of the requests got no answer
    /// (errors and timeouts; default 0.01).
    #[arg(long, value_name = "RATIO", value_parser = values::ratio)]
    pub max_error_ratio: Option<f64>,
    /// Send to URLs off this machine too (your own fleet, with its
    /// owners' consent); the report names them. Without it, loopback only.
    #[arg(long)]
    pub allow_remote_targets: bool,
    /// https:// targets: trust the certificate authorities in this PEM
    /// file (default: the system's).
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    pub cacert: Option<PathBuf>,
    /// https:// targets: a client certificate chain (PEM), with --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// https:// targets: check nothing of the server's certificate (the
    /// report says so).
    #[arg(long, short = 'k')]
    pub insecure: bool,
    /// No progress lines; the summary table and errors still print.
    #[arg(long, short)]
    pub quiet: bool,
    /// What stdout carries: the text (default), or one JSON document
    /// (everything else goes to stderr).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
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
