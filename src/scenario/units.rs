//! Parsers for the units a scenario writes as strings: durations
//! ("250ms", "10s", "1m") and rates ("10/1s", "100/m"); the command line's
//! flags read the same units (cli/values.rs).

use std::time::Duration;

pub(crate) const DURATION_HINT: &str = "expected a duration like \"250ms\", \"10s\" or \"1m\"";
const OFFSET_HINT: &str = "expected an offset like \"+400ms\", \"-1s\" or \"0ms\"";
const RATE_HINT: &str = "expected a rate like \"10/1s\" or \"100/1m\"";

/// A unit that did not read; always the writer's mistake (exit 2).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum UnitError {
    #[error("{0:?}: {DURATION_HINT}")]
    NoUnit(String),
    #[error("{0:?}: {1}; {DURATION_HINT}")]
    NotDuration(String, String),
    #[error("{0:?}: must be longer than zero")]
    Zero(String),
    #[error("{0:?}: {OFFSET_HINT}")]
    NotOffset(String),
    #[error("{0:?}: {RATE_HINT}")]
    NotRate(String),
    #[error("{0:?}: the count must be at least 1")]
    NoCount(String),
}

impl crate::error::Kind for UnitError {
    fn exit(&self) -> crate::error::Exit {
        crate::error::Exit::BadInput
    }
}

/// A positive duration with a unit.
pub(crate) fn duration(text: &str) -> Result<Duration, UnitError> {
    let t = text.trim();
    if t.is_empty() || t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(UnitError::NoUnit(text.to_string()));
    }
    let d = humantime::parse_duration(t)
        .map_err(|e| UnitError::NotDuration(text.to_string(), e.to_string()))?;
    if d.is_zero() {
        return Err(UnitError::Zero(text.to_string()));
    }
    Ok(d)
}

/// A signed offset: "+400ms", "-1s", "0ms" or "0".
pub(crate) fn signed_micros(text: &str) -> Result<i64, UnitError> {
    let t = text.trim();
    let (sign, rest) = match t.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, t.strip_prefix('+').unwrap_or(t)),
    };
    if rest.trim_start_matches('0').is_empty() && !rest.is_empty() {
        return Ok(0);
    }
    let d = humantime::parse_duration(rest.trim())
        .map_err(|_| UnitError::NotOffset(text.to_string()))?;
    Ok(sign * micros(d) as i64)
}

pub(crate) fn micros(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

/// `COUNT/DURATION`, e.g. "10/1s", "100/m" (a bare unit means one of it).
pub(crate) fn rate(text: &str) -> Result<(u64, Duration), UnitError> {
    let not_rate = || UnitError::NotRate(text.to_string());
    let (count, per) = text.split_once('/').ok_or_else(not_rate)?;
    let count: u64 = count.trim().parse().map_err(|_| not_rate())?;
    if count == 0 {
        return Err(UnitError::NoCount(text.to_string()));
    }
    let per = per.trim();
    let per = if per.starts_with(|c: char| c.is_ascii_alphabetic()) {
        format!("1{per}")
    } else {
        per.to_string()
    };
    let per = duration(&per).map_err(|_| not_rate())?;
    Ok((count, per))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_a_unit_and_must_be_positive() {
        assert_eq!(duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(duration("1m").unwrap(), Duration::from_secs(60));
        assert!(duration("10")
            .unwrap_err()
            .to_string()
            .contains("expected a duration"));
        assert!(duration("ten seconds").is_err());
        assert!(duration("0s")
            .unwrap_err()
            .to_string()
            .contains("longer than zero"));
        assert!(duration("-5s").is_err());
        assert!(duration("").is_err());
    }

    #[test]
    fn offsets_take_a_sign() {
        assert_eq!(signed_micros("+400ms").unwrap(), 400_000);
        assert_eq!(signed_micros("-400ms").unwrap(), -400_000);
        assert_eq!(signed_micros("1s").unwrap(), 1_000_000);
        assert_eq!(signed_micros("0ms").unwrap(), 0);
        assert_eq!(signed_micros("0").unwrap(), 0);
        assert!(signed_micros("+").is_err());
        assert!(signed_micros("soon")
            .unwrap_err()
            .to_string()
            .contains("expected an offset"));
    }

    #[test]
    fn rates_take_a_count_and_a_period() {
        assert_eq!(rate("10/1s").unwrap(), (10, Duration::from_secs(1)));
        assert_eq!(rate("100/m").unwrap(), (100, Duration::from_secs(60)));
        assert_eq!(rate("5 / 500ms").unwrap(), (5, Duration::from_millis(500)));
        assert!(rate("10").is_err());
        assert!(rate("0/s").unwrap_err().to_string().contains("at least 1"));
        assert!(rate("x/s").is_err());
        assert!(rate("10/forever").is_err());
    }
}
