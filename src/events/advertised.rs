//! What a limiter's response headers advertise, parsed from any of the
//! conventions in use: the IETF draft's structured fields `RateLimit-Policy`
//! (`"default";q=10;w=60`) and `RateLimit` (`"default";r=3;t=12`, and the
//! older dictionary form `limit=10, remaining=3, reset=12`), draft-03's
//! `RateLimit-Limit` / `-Remaining` / `-Reset`, the common `X-RateLimit-*`
//! (reset as delta seconds or as a Unix time), and `Retry-After` (seconds or
//! an HTTP date). A header that does not parse is remembered as malformed,
//! never an error: it becomes a finding in the report.

use hyper::header::{HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};
use sfv::{BareItem, ListEntry, Parameters, Parser};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The conventions, as bits of [`Advertised::present`] and `malformed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Convention {
    /// `RateLimit` / `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers).
    Ietf,
    /// `RateLimit-Limit` / `-Remaining` / `-Reset` (draft-03).
    Draft03,
    /// `X-RateLimit-Limit` / `-Remaining` / `-Reset`.
    XRateLimit,
    RetryAfter,
}

impl Convention {
    pub const ALL: [Convention; 4] = [
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

    pub fn name(self) -> &'static str {
        match self {
            Convention::Ietf => "ratelimit",
            Convention::Draft03 => "ratelimit_draft03",
            Convention::XRateLimit => "x_ratelimit",
            Convention::RetryAfter => "retry_after",
        }
    }

    /// The header names, as a person would look for them.
    pub fn headers(self) -> &'static str {
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
pub struct Advertised {
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
    pub fn has(&self, c: Convention) -> bool {
        self.present & c.bit() != 0
    }

    pub fn is_malformed(&self, c: Convention) -> bool {
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
pub fn parse(headers: &HeaderMap) -> Option<Advertised> {
    parse_at(headers, SystemTime::now())
}

/// As [`parse`], with `now` for dates and Unix times.
pub fn parse_at(headers: &HeaderMap, now: SystemTime) -> Option<Advertised> {
    parse_with_at(|name| headers.get(name).map(HeaderValue::as_bytes), now)
}

/// As [`parse`], each header's (first) value given by `get`, by its
/// lower-case name: for heads read without a header map.
pub fn parse_with<'a>(get: impl Fn(&str) -> Option<&'a [u8]>) -> Option<Advertised> {
    parse_with_at(get, SystemTime::now())
}

fn parse_with_at<'a>(
    get: impl Fn(&str) -> Option<&'a [u8]>,
    now: SystemTime,
) -> Option<Advertised> {
    let mut a = Advertised::default();
    let (policy, state) = (get("ratelimit-policy"), get("ratelimit"));
    if policy.is_some() || state.is_some() {
        let ok = ietf(policy, state, &mut a);
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

fn param(params: &Parameters, name: &str) -> Option<i64> {
    params
        .iter()
        .find(|(k, _)| k.as_str() == name)
        .and_then(|(_, v)| v.as_integer())
        .map(i64::from)
}

fn non_negative(v: Option<i64>) -> Option<u64> {
    v.and_then(|v| u64::try_from(v).ok())
}

/// The named policy of a list (`"name";q=..;w=..`), or its first member.
fn member<'a>(list: &'a [ListEntry], name: Option<&BareItem>) -> Option<&'a Parameters> {
    let items = list.iter().filter_map(|e| match e {
        ListEntry::Item(i) => Some(i),
        ListEntry::InnerList(_) => None,
    });
    let mut first = None;
    for item in items {
        if first.is_none() {
            first = Some(&item.params);
        }
        if name.is_some_and(|n| *n == item.bare_item) {
            return Some(&item.params);
        }
    }
    first
}

/// The current draft's two fields, or the older dictionary `RateLimit`.
/// False when either is present and does not parse.
fn ietf(policy: Option<&[u8]>, state: Option<&[u8]>, a: &mut Advertised) -> bool {
    let mut ok = true;
    let state_list = state.map(|s| Parser::new(s).parse::<sfv::List>());
    let named = match &state_list {
        Some(Ok(list)) => list.iter().find_map(|e| match e {
            ListEntry::Item(i) => Some(i.bare_item.clone()),
            ListEntry::InnerList(_) => None,
        }),
        _ => None,
    };
    if let Some(p) = policy {
        match Parser::new(p).parse::<sfv::List>() {
            Ok(list) => match member(&list, named.as_ref()) {
                Some(params) if param(params, "q").is_some_and(|q| q >= 0) => {
                    a.limit = non_negative(param(params, "q"));
                    a.window_s = non_negative(param(params, "w"));
                }
                _ => ok = false,
            },
            Err(_) => ok = false,
        }
    }
    match (state, state_list) {
        (Some(_), Some(Ok(list))) if !list.is_empty() => match member(&list, named.as_ref()) {
            Some(params) if param(params, "r").is_some_and(|r| r >= 0) => {
                a.remaining = non_negative(param(params, "r"));
                a.reset_ms = non_negative(param(params, "t")).map(|t| t.saturating_mul(1000));
            }
            // The older drafts' dictionary: limit=10, remaining=3, reset=12.
            _ => ok &= older_dictionary(state, a),
        },
        (Some(_), _) => ok &= older_dictionary(state, a),
        _ => {}
    }
    ok
}

fn older_dictionary(state: Option<&[u8]>, a: &mut Advertised) -> bool {
    let Some(Ok(dict)) = state.map(|s| Parser::new(s).parse::<sfv::Dictionary>()) else {
        return false;
    };
    let int = |name: &str| match dict.iter().find(|(k, _)| k.as_str() == name) {
        Some((_, ListEntry::Item(i))) => non_negative(i.bare_item.as_integer().map(i64::from)),
        _ => None,
    };
    let Some(remaining) = int("remaining") else {
        return false;
    };
    a.remaining = Some(remaining);
    a.limit = a.limit.or(int("limit"));
    a.reset_ms = int("reset").map(|t| t.saturating_mul(1000));
    true
}

#[cfg(test)]
mod tests;
