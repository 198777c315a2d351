//! `rlbench probe`'s flags: finding what a limiter keys on and which
//! policy explains it, with a bounded probing load.

use super::values;
use clap::Args;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Uri};
use std::time::Duration;

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
    /// X-Customer-Id, X-User-Id, X-Client-Id, X-Key, X-Tenant-Id,
    /// X-Real-IP, a bearer token, X-Forwarded-For and the client address.
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
    /// The HTTP version: 1.1, 2 (ALPN h2 over TLS, prior knowledge in
    /// cleartext) or auto (2 where the https:// target agrees to it); the
    /// starter speaks the one the probe spoke.
    #[arg(long, value_enum, default_value_t = super::attack::HttpFlag::V1)]
    pub http: super::attack::HttpFlag,
    #[command(flatten)]
    pub tls: super::tls::TlsArgs,
}
