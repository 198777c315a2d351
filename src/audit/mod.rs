//! `rlbench audit`: a limiter judged from its access logs (or another load
//! tool's results). Each reader turns one line into a [`Logged`] request:
//! the span of wall-clock time within which the limiter decided it (what
//! the line's times allow, widened by their resolution), its status and
//! its key. Every line is someone else's bytes: a line that cannot be read
//! is an error naming it, never skipped unsaid. `app::audit` makes the
//! lines a trace and judges it like a run's.

pub(crate) mod error;
pub(crate) mod haproxy;
pub(crate) mod jsonl;
pub(crate) mod k6;
pub(crate) mod nginx;
pub(crate) mod time;
pub(crate) mod vegeta;

use error::LineError;

/// One request as a log line tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Logged {
    /// The earliest and the latest the limiter can have decided it, in
    /// wall-clock µs since the Unix epoch (on the log's clock).
    pub start_us: i64,
    pub end_us: i64,
    pub status: u16,
    /// `None`: the line carries no key ("-" or empty): the limiter had
    /// nothing to count it by.
    pub key: Option<String>,
}

/// The longest key kept (longer is refused: a log line is not a key store).
pub(crate) const MAX_KEY_BYTES: usize = 1024;

/// A key as logged: "-" and empty are none.
pub(crate) fn key_of(value: &str) -> Result<Option<String>, LineError> {
    match value {
        "" | "-" => Ok(None),
        v if v.len() > MAX_KEY_BYTES => Err(LineError::KeyTooLong {
            bytes: v.len(),
            max: MAX_KEY_BYTES,
        }),
        v => Ok(Some(v.to_string())),
    }
}

/// An HTTP status as logged.
pub(crate) fn status_of(value: &str) -> Result<u16, LineError> {
    value
        .parse::<u16>()
        .ok()
        .filter(|s| (100..=599).contains(s))
        .ok_or_else(|| LineError::NotStatus {
            value: value.into(),
        })
}

/// A span checked: start before end, both within years 1970-2200.
pub(crate) fn span(start_us: i64, end_us: i64) -> Result<(i64, i64), LineError> {
    const MAX: i64 = 7_258_118_400_000_000; // 2200-01-01
    if !(0..MAX).contains(&start_us) || !(0..MAX).contains(&end_us) {
        return Err(LineError::OutsideYears);
    }
    if start_us > end_us {
        return Err(LineError::EndedBeforeBegan);
    }
    Ok((start_us, end_us))
}

/// A duration in seconds as logged ("0.003"), in µs; at most a day.
pub(crate) fn seconds_us(value: &str) -> Result<i64, LineError> {
    let s: f64 = value.parse().map_err(|_| LineError::NotSeconds {
        value: value.into(),
    })?;
    if !(s.is_finite() && (0.0..=86_400.0).contains(&s)) {
        return Err(LineError::NotDuration {
            value: value.into(),
        });
    }
    Ok((s * 1e6).round() as i64)
}
