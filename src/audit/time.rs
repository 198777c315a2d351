//! Timestamps as logs write them: RFC 3339 (Envoy, k6, JSON lines), Unix
//! seconds with a fraction (nginx `$msec`), and HAProxy's
//! `06/Dec/2026:13:31:58.123` (local time without a zone: read as UTC,
//! which changes nothing when every file of an audit is written the same
//! way — only the times' differences are judged).

use super::error::LineError;
use chrono::{DateTime, NaiveDateTime};

/// RFC 3339 with any offset and fraction, in µs since the epoch.
pub(crate) fn rfc3339_us(text: &str) -> Result<i64, LineError> {
    DateTime::parse_from_rfc3339(text.trim())
        .map(|t| t.timestamp_micros())
        .map_err(|source| LineError::NotRfc3339 {
            text: text.into(),
            source,
        })
}

/// Unix seconds ("1733491918.123"), in µs.
pub(crate) fn unix_seconds_us(text: &str) -> Result<i64, LineError> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| LineError::NotUnixSeconds { text: text.into() })?;
    if !(v.is_finite() && (0.0..7.2e9).contains(&v)) {
        return Err(LineError::UnixSecondsOutOfRange { text: text.into() });
    }
    // Split so the fraction keeps its µs (f64 holds 1.7e9 s to ~0.2 µs).
    let whole = v.trunc();
    let frac = text
        .trim()
        .split_once('.')
        .map(|(_, f)| f)
        .unwrap_or("")
        .chars()
        .chain(std::iter::repeat('0'))
        .take(6)
        .collect::<String>()
        .parse::<i64>()
        .map_err(|_| LineError::NotUnixSeconds { text: text.into() })?;
    Ok(whole as i64 * 1_000_000 + frac)
}

/// HAProxy's accept date, `dd/Mon/yyyy:HH:MM:SS.mmm`, in µs (as UTC).
pub(crate) fn haproxy_us(text: &str) -> Result<i64, LineError> {
    NaiveDateTime::parse_from_str(text, "%d/%b/%Y:%H:%M:%S%.3f")
        .map(|t| t.and_utc().timestamp_micros())
        .map_err(|source| LineError::NotHaproxyDate {
            text: text.into(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_reads_to_the_microsecond() {
        assert_eq!(rfc3339_us("1970-01-01T00:00:01.5Z"), Ok(1_500_000));
        assert_eq!(
            rfc3339_us("1970-01-01T01:00:01.000001+01:00"),
            Ok(1_000_001)
        );
        assert_eq!(unix_seconds_us("1733491918.123"), Ok(1_733_491_918_123_000));
        assert_eq!(unix_seconds_us("2"), Ok(2_000_000));
        assert_eq!(haproxy_us("01/Jan/1970:00:00:02.250"), Ok(2_250_000));
        for bad in ["", "x", "1e300", "-1", "NaN"] {
            assert!(unix_seconds_us(bad).is_err(), "{bad}");
        }
        assert!(rfc3339_us("2026-13-01T00:00:00Z").is_err());
        assert!(haproxy_us("32/Dec/2026:00:00:00.000").is_err());
    }
}
