//! Parsers for the units a scenario writes as strings: durations
//! ("250ms", "10s", "1m") and rates ("10/1s", "100/m").

use std::time::Duration;

pub const DURATION_HINT: &str = "expected a duration like \"250ms\", \"10s\" or \"1m\"";

/// A positive duration with a unit.
pub fn duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t.is_empty() || t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!("{text:?}: {DURATION_HINT}"));
    }
    let d = humantime::parse_duration(t).map_err(|e| format!("{text:?}: {e}; {DURATION_HINT}"))?;
    if d.is_zero() {
        return Err(format!("{text:?}: must be longer than zero"));
    }
    Ok(d)
}

/// A signed offset: "+400ms", "-1s", "0ms" or "0".
pub fn signed_micros(text: &str) -> Result<i64, String> {
    let t = text.trim();
    let (sign, rest) = match t.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, t.strip_prefix('+').unwrap_or(t)),
    };
    if rest.trim_start_matches('0').is_empty() && !rest.is_empty() {
        return Ok(0);
    }
    let d = humantime::parse_duration(rest.trim())
        .map_err(|_| format!("{text:?}: expected an offset like \"+400ms\", \"-1s\" or \"0ms\""))?;
    Ok(sign * micros(d) as i64)
}

pub fn micros(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

/// `COUNT/DURATION`, e.g. "10/1s", "100/m" (a bare unit means one of it).
pub fn rate(text: &str) -> Result<(u64, Duration), String> {
    let hint = "expected a rate like \"10/1s\" or \"100/1m\"";
    let (count, per) = text
        .split_once('/')
        .ok_or_else(|| format!("{text:?}: {hint}"))?;
    let count: u64 = count
        .trim()
        .parse()
        .map_err(|_| format!("{text:?}: {hint}"))?;
    if count == 0 {
        return Err(format!("{text:?}: the count must be at least 1"));
    }
    let per = per.trim();
    let per = if per.starts_with(|c: char| c.is_ascii_alphabetic()) {
        format!("1{per}")
    } else {
        per.to_string()
    };
    let per = duration(&per).map_err(|_| format!("{text:?}: {hint}"))?;
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
        assert!(duration("10").unwrap_err().contains("expected a duration"));
        assert!(duration("ten seconds").is_err());
        assert!(duration("0s").unwrap_err().contains("longer than zero"));
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
            .contains("expected an offset"));
    }

    #[test]
    fn rates_take_a_count_and_a_period() {
        assert_eq!(rate("10/1s").unwrap(), (10, Duration::from_secs(1)));
        assert_eq!(rate("100/m").unwrap(), (100, Duration::from_secs(60)));
        assert_eq!(rate("5 / 500ms").unwrap(), (5, Duration::from_millis(500)));
        assert!(rate("10").is_err());
        assert!(rate("0/s").unwrap_err().contains("at least 1"));
        assert!(rate("x/s").is_err());
        assert!(rate("10/forever").is_err());
    }
}
