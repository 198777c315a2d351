//! What a limiter's response headers advertise, parsed from any of the
//! conventions in use: the IETF draft's structured fields `RateLimit-Policy`
//! and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-10, and the older
//! dictionary form; see `ietf`), draft-03's `RateLimit-Limit` /
//! `-Remaining` / `-Reset`, the common `X-RateLimit-*` (reset as delta
//! seconds or as a Unix time), and `Retry-After` (seconds or an HTTP date).
//! A header that does not parse is ignored and remembered as malformed,
//! never an error: it becomes a finding in the report.

use hyper::header::{HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The conventions, as bits of [`Advertised::present`] and `malformed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Convention {
    /// `RateLimit` / `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers).
    Ietf,
    /// `RateLimit-Limit` / `-Remaining` / `-Reset` (draft-03).
    Draft03,
    /// `X-RateLimit-Limit` / `-Remaining` / `-Reset`.
    XRateLimit,
    RetryAfter,
}

impl Convention {
    pub(crate) const ALL: [Convention; 4] = [
        Convention::Ietf,
        Convention::Draft03,
        Convention::XRateLimit,
        Convention::RetryAfter,
    ];

    fn bit(self) -> u8 {
        match self {
            Convention::Ietf => 1,
            Convention::Draft03 => 2,
            Convention::XRateLimit => 4,
            Convention::RetryAfter => 8,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Convention::Ietf => "ratelimit",
            Convention::Draft03 => "ratelimit_draft03",
            Convention::XRateLimit => "x_ratelimit",
            Convention::RetryAfter => "retry_after",
        }
    }

    /// The header names, as a person would look for them.
    pub(crate) fn headers(self) -> &'static str {
        match self {
            Convention::Ietf => "RateLimit / RateLimit-Policy",
            Convention::Draft03 => "RateLimit-Limit / -Remaining / -Reset",
            Convention::XRateLimit => "X-RateLimit-Limit / -Remaining / -Reset",
            Convention::RetryAfter => "Retry-After",
        }
    }
}

/// One response's rate-limit headers. The first convention present (in
/// the order of [`Convention::ALL`]) supplies each figure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Advertised {
    /// The quota (requests per window).
    pub limit: Option<u64>,
    /// The quota's window, in seconds.
    pub window_s: Option<u64>,
    pub remaining: Option<u64>,
    /// Until the quota resets, in ms.
    pub reset_ms: Option<u64>,
    /// `Retry-After`, in ms.
    pub retry_after_ms: Option<u64>,
    /// Conventions present, as bits.
    pub present: u8,
    /// Conventions present that did not parse, as bits.
    pub malformed: u8,
}

impl Advertised {
    pub(crate) fn has(&self, c: Convention) -> bool {
        self.present & c.bit() != 0
    }

    pub(crate) fn is_malformed(&self, c: Convention) -> bool {
        self.malformed & c.bit() != 0
    }

    fn mark(&mut self, c: Convention, ok: bool) {
        self.present |= c.bit();
        if !ok {
            self.malformed |= c.bit();
        }
    }

    /// Fills the figures not yet known.
    fn fill(
        &mut self,
        limit: Option<u64>,
        window_s: Option<u64>,
        remaining: Option<u64>,
        reset_ms: Option<u64>,
    ) {
        self.limit = self.limit.or(limit);
        self.window_s = self.window_s.or(window_s);
        self.remaining = self.remaining.or(remaining);
        self.reset_ms = self.reset_ms.or(reset_ms);
    }
}

/// Reads the rate-limit headers of a response (`None` when it has none).
pub(crate) fn parse(headers: &HeaderMap) -> Option<Advertised> {
    parse_at(headers, SystemTime::now())
}

/// As [`parse`], with `now` for dates and Unix times.
pub(crate) fn parse_at(headers: &HeaderMap, now: SystemTime) -> Option<Advertised> {
    parse_with_at(
        |name| headers.get_all(name).iter().map(HeaderValue::as_bytes),
        now,
    )
}

/// As [`parse`], each header's values (every line of it, in order) given
/// by `get_all`, by its lower-case name: for heads read without a header map.
pub(crate) fn parse_with<'a, I>(get_all: impl Fn(&'static str) -> I) -> Option<Advertised>
where
    I: Iterator<Item = &'a [u8]>,
{
    parse_with_at(get_all, SystemTime::now())
}

fn parse_with_at<'a, I>(get_all: impl Fn(&'static str) -> I, now: SystemTime) -> Option<Advertised>
where
    I: Iterator<Item = &'a [u8]>,
{
    let get = |name| get_all(name).next();
    let mut a = Advertised::default();
    // A List may be split over several lines of its field (RFC 9651 3.1).
    let (policy, state) = (
        joined(get_all("ratelimit-policy")),
        joined(get_all("ratelimit")),
    );
    if policy.is_some() || state.is_some() {
        let (f, ok) = ietf::read(policy.as_deref(), state.as_deref());
        a.fill(f.limit, f.window_s, f.remaining, f.reset_ms);
        a.mark(Convention::Ietf, ok);
    }
    for (c, [limit, remaining, reset]) in [
        (
            Convention::Draft03,
            ["ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"],
        ),
        (
            Convention::XRateLimit,
            [
                "x-ratelimit-limit",
                "x-ratelimit-remaining",
                "x-ratelimit-reset",
            ],
        ),
    ] {
        let (limit, remaining, reset) = (get(limit), get(remaining), get(reset));
        if limit.is_none() && remaining.is_none() && reset.is_none() {
            continue;
        }
        let limit = limit.map(limit_field);
        let remaining = remaining.map(integer);
        let reset = reset.map(|v| reset_field(v, now));
        let ok = [
            limit.map(|l| l.is_some()),
            remaining.map(|r| r.is_some()),
            reset.map(|r| r.is_some()),
        ]
        .iter()
        .all(|v| v.unwrap_or(true));
        a.mark(c, ok);
        let (limit, window) = limit.flatten().map_or((None, None), |(l, w)| (Some(l), w));
        a.fill(limit, window, remaining.flatten(), reset.flatten());
    }
    if let Some(v) = get("retry-after") {
        a.retry_after_ms = retry_after(v, now);
        a.mark(Convention::RetryAfter, a.retry_after_ms.is_some());
    }
    (a.present != 0).then_some(a)
}

/// A field's lines as one value, `, `-joined (copied only when there are several).
fn joined<'a>(mut lines: impl Iterator<Item = &'a [u8]>) -> Option<Cow<'a, [u8]>> {
    let first = lines.next()?;
    let Some(second) = lines.next() else {
        return Some(Cow::Borrowed(first));
    };
    let mut all = first.to_vec();
    for line in std::iter::once(second).chain(lines) {
        all.extend_from_slice(b", ");
        all.extend_from_slice(line);
    }
    Some(Cow::Owned(all))
}

fn text(v: &[u8]) -> Option<&str> {
    std::str::from_utf8(v).ok().map(str::trim)
}

/// A non-negative integer, nothing else.
fn integer(v: &[u8]) -> Option<u64> {
    let t = text(v)?;
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// `10`, or draft-03's `10, 10;w=1, 1000;w=3600`: the first quota (and its window).
fn limit_field(v: &[u8]) -> Option<(u64, Option<u64>)> {
    let t = text(v)?;
    let first = t.split(',').next()?.trim();
    let mut parts = first.split(';');
    let limit = integer(parts.next()?.as_bytes())?;
    let mut window = None;
    for p in parts {
        let (k, val) = p.split_once('=')?;
        if k.trim() == "w" {
            window = Some(integer(val.as_bytes())?);
        }
    }
    Some((limit, window))
}

/// Delta seconds, or a Unix time in seconds (or ms) when it is that large.
fn reset_field(v: &[u8], now: SystemTime) -> Option<u64> {
    let t = text(v)?;
    let secs: f64 = t
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s >= 0.0)?;
    let now_s = now.duration_since(UNIX_EPOCH).ok()?.as_secs_f64();
    let delta = if secs >= 1e12 {
        secs / 1000.0 - now_s
    } else if secs >= 1e9 {
        secs - now_s
    } else {
        secs
    };
    Some((delta.max(0.0) * 1000.0).round() as u64)
}

/// Seconds, or an HTTP date.
fn retry_after(v: &[u8], now: SystemTime) -> Option<u64> {
    if let Some(s) = integer(v) {
        return Some(s.saturating_mul(1000));
    }
    let date = httpdate::parse_http_date(text(v)?).ok()?;
    Some(
        date.duration_since(now)
            .unwrap_or(Duration::ZERO)
            .as_millis() as u64,
    )
}

mod ietf;

#[cfg(test)]
mod tests;
