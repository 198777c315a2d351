//! The scenario text being validated, and the checks every table's keys
//! share: errors located by line and column, durations, counts, rates,
//! names and clock skews.

use crate::scenario::spec::ScenarioError;
use crate::scenario::units::{self, micros};
use reference_api::Rate;
use std::ops::Range;
use std::time::Duration;
use toml::Spanned;

pub(super) const MAX_REPLICAS: i64 = 64;

pub(super) const MAX_RATE: f64 = 1_000_000.0;

pub(super) const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

pub(super) struct Source<'a> {
    pub(super) file: &'a str,
    pub(super) text: &'a str,
}

pub(super) type Result<T> = std::result::Result<T, ScenarioError>;

impl Source<'_> {
    pub(super) fn error(
        &self,
        span: Option<Range<usize>>,
        message: impl Into<String>,
    ) -> ScenarioError {
        let (line, column) = match span {
            Some(span) => line_col(self.text, span.start),
            None => (0, 0),
        };
        ScenarioError {
            file: self.file.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    pub(super) fn at<T>(&self, value: &Spanned<T>, message: impl Into<String>) -> ScenarioError {
        self.error(Some(value.span()), message)
    }

    pub(super) fn duration(&self, value: &Spanned<String>) -> Result<Duration> {
        let d = units::duration(value.get_ref()).map_err(|e| self.at(value, e.to_string()))?;
        if d > MAX_DURATION {
            return Err(self.at(value, format!("{:?}: at most 24h", value.get_ref())));
        }
        Ok(d)
    }

    pub(super) fn count(
        &self,
        value: &Spanned<i64>,
        what: &str,
        min: i64,
        max: i64,
    ) -> Result<u64> {
        let v = *value.get_ref();
        if v < min || v > max {
            return Err(self.at(
                value,
                format!("{what} must be between {min} and {max}, got {v}"),
            ));
        }
        Ok(v as u64)
    }

    pub(super) fn rate(&self, value: &Spanned<String>) -> Result<Rate> {
        let (count, per) =
            units::rate(value.get_ref()).map_err(|e| self.at(value, e.to_string()))?;
        if micros(per) == 0 {
            return Err(self.at(
                value,
                format!(
                    "{:?}: the period is below the verifier's 1 µs resolution",
                    value.get_ref()
                ),
            ));
        }
        Ok(Rate {
            count,
            per_us: micros(per),
        })
    }

    /// A policy's span: a duration of at least 1 µs (the trace's resolution).
    pub(super) fn span_us(&self, value: &Spanned<String>, key: &str) -> Result<u64> {
        match micros(self.duration(value)?) {
            0 => Err(self.at(
                value,
                format!(
                    "{key} {:?}: must be at least 1 µs (the trace's resolution)",
                    value.get_ref()
                ),
            )),
            us => Ok(us),
        }
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

pub(super) fn skews(src: &Source, list: &Spanned<Vec<Spanned<String>>>) -> Result<Vec<i64>> {
    if list.get_ref().len() > MAX_REPLICAS as usize {
        return Err(src.at(
            list,
            format!("at most {MAX_REPLICAS} clock skews, one per replica"),
        ));
    }
    list.get_ref()
        .iter()
        .map(|s| {
            let us = units::signed_micros(s.get_ref()).map_err(|e| src.at(s, e.to_string()))?;
            if us.unsigned_abs() > 3_600_000_000 {
                return Err(src.at(
                    s,
                    format!("{:?}: a skew of at most one hour either way", s.get_ref()),
                ));
            }
            Ok(us)
        })
        .collect()
}

/// Names become folder and file names: letters, digits, `-`, `_`, `.`.
pub(super) fn identifier(src: &Source, value: &Spanned<String>, what: &str) -> Result<String> {
    let v = value.get_ref();
    if !crate::store::folder::is_name(v) {
        return Err(src.at(
            value,
            format!("{what} {v:?}: expected {}", crate::store::folder::NAME_RULE),
        ));
    }
    Ok(v.clone())
}
