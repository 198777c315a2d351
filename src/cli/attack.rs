//! `rlbench attack`'s flags: any loopback URL loaded without a scenario
//! file, and `--http`'s versions.

use super::output::OutputFormat;
use super::values;
use crate::load::pick::Fanout;
use clap::{ArgGroup, Args};
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Uri};
use std::path::PathBuf;
use std::time::Duration;

/// `--http`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum HttpFlag {
    #[value(name = "1.1")]
    V1,
    #[value(name = "2")]
    V2,
    Auto,
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
    /// Send the keys by the same names as every attack before (by default
    /// each attack tags them on the wire, customer-0003-1a2b3c: nothing
    /// the limiter remembers is this attack's).
    #[arg(long)]
    pub same_keys: bool,
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
    #[command(flatten)]
    pub tls: super::tls::TlsArgs,
    /// No progress lines; the summary table and errors still print.
    #[arg(long, short)]
    pub quiet: bool,
    /// What stdout carries: the text (default), or one JSON document
    /// (everything else goes to stderr).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
}
