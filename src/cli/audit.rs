//! `rlbench audit`'s flags: access logs or another tool's results, and
//! what kind of lines they are.

use super::output::OutputFormat;
use super::values;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

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
