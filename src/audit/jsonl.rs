//! JSON Lines with named fields: Envoy's JSON access log (`json_format`
//! with `%START_TIME%`, `%DURATION%`, `%RESPONSE_CODE%` and the key's
//! `%REQ(X-API-KEY)%`) or any log one object a line. A request's span is
//! its start and its duration, its start and its end, or its end and its
//! duration; times are RFC 3339 strings or Unix seconds, durations
//! milliseconds (`duration_ms`) or seconds (`duration_s`), each end
//! widened by the resolution (a millisecond unless told). A field is a
//! name, or a dotted path into nested objects (`request.headers.key`).

use super::error::LineError;
use super::{key_of, span, status_of, time, Logged};
use crate::error::{Exit, Kind};
use serde_json::Value;

/// Why `--fields` cannot be read: the user's flag (exit 2).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FieldsError {
    #[error("--fields: {0:?} is not name=field")]
    NotPair(String),
    /// `name` as written before its `=`.
    #[error("--fields: {name} names no field")]
    NoField { name: String },
    #[error("--fields: unknown {0:?}, expected start, end, duration_ms, duration_s, status, key")]
    Unknown(String),
    #[error("--fields needs status=… and key=…")]
    NoStatusOrKey,
    #[error("--fields needs two of start, end and a duration (duration_ms or duration_s)")]
    NotTwoOfSpan,
}

impl Kind for FieldsError {
    fn exit(&self) -> Exit {
        Exit::BadInput
    }
}

/// Which fields hold what.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Fields {
    pub start: Option<String>,
    pub end: Option<String>,
    pub duration_ms: Option<String>,
    pub duration_s: Option<String>,
    pub status: String,
    pub key: String,
}

/// The longest line read (more is not a log line).
pub(crate) const MAX_LINE_BYTES: usize = 1 << 20;

impl Fields {
    /// Envoy's names (as its docs' JSON examples write them), the key's given.
    pub(crate) fn envoy(key: &str) -> Fields {
        Fields {
            start: Some("start_time".into()),
            duration_ms: Some("duration".into()),
            status: "response_code".into(),
            key: key.into(),
            ..Fields::default()
        }
    }

    /// `start=…,duration_ms=…,status=…,key=…` (any of start, end,
    /// duration_ms, duration_s; status and key always).
    pub(crate) fn parse(text: &str) -> Result<Fields, FieldsError> {
        let mut f = Fields::default();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, field) = pair
                .split_once('=')
                .ok_or_else(|| FieldsError::NotPair(pair.into()))?;
            let field = Some(field.trim().to_string())
                .filter(|f| !f.is_empty())
                .ok_or_else(|| FieldsError::NoField { name: name.into() })?;
            match name.trim() {
                "start" => f.start = Some(field),
                "end" | "time" => f.end = Some(field),
                "duration_ms" => f.duration_ms = Some(field),
                "duration_s" => f.duration_s = Some(field),
                "status" => f.status = field,
                "key" => f.key = field,
                other => return Err(FieldsError::Unknown(other.into())),
            }
        }
        f.check()?;
        Ok(f)
    }

    fn check(&self) -> Result<(), FieldsError> {
        if self.status.is_empty() || self.key.is_empty() {
            return Err(FieldsError::NoStatusOrKey);
        }
        let durations =
            usize::from(self.duration_ms.is_some()) + usize::from(self.duration_s.is_some());
        let ends = usize::from(self.start.is_some()) + usize::from(self.end.is_some());
        if durations > 1 || ends + durations != 2 {
            return Err(FieldsError::NotTwoOfSpan);
        }
        Ok(())
    }

    /// One line; `resolution_us` widens each end.
    pub(crate) fn line(&self, line: &str, resolution_us: i64) -> Result<Logged, LineError> {
        if line.len() > MAX_LINE_BYTES {
            return Err(LineError::TooLong { bytes: line.len() });
        }
        let v: Value =
            serde_json::from_str(line).map_err(|e| LineError::NotJson { why: e.to_string() })?;
        if !v.is_object() {
            return Err(LineError::NotObject);
        }
        let get =
            |name: &str| field(&v, name).ok_or_else(|| LineError::NoField { name: name.into() });
        let at = |name: &Option<String>| -> Result<Option<i64>, LineError> {
            name.as_ref()
                .map(|n| {
                    instant(get(n)?).map_err(|e| LineError::Time {
                        field: n.clone(),
                        source: Box::new(e),
                    })
                })
                .transpose()
        };
        let took = |name: &Option<String>, scale: f64| -> Result<Option<i64>, LineError> {
            name.as_ref()
                .map(|n| {
                    let d = number(get(n)?)
                        .ok_or_else(|| LineError::FieldNotNumber { field: n.clone() })?;
                    let us = d * scale;
                    if !(us.is_finite() && (0.0..=86_400e6).contains(&us)) {
                        return Err(LineError::FieldNotDuration { field: n.clone() });
                    }
                    Ok(us.round() as i64)
                })
                .transpose()
        };
        let (start, end) = (at(&self.start)?, at(&self.end)?);
        let duration = took(&self.duration_ms, 1e3)?.or(took(&self.duration_s, 1e6)?);
        let (start, end) = match (start, end, duration) {
            (Some(s), Some(e), _) => (s, e),
            (Some(s), None, Some(d)) => (s, s.saturating_add(d).saturating_add(resolution_us)),
            (None, Some(e), Some(d)) => (e.saturating_sub(d).saturating_sub(resolution_us), e),
            _ => return Err(LineError::NoSpan),
        };
        let status_value = get(&self.status)?;
        let status = match status_value {
            Value::String(s) => status_of(s)?,
            Value::Number(n) => status_of(&n.to_string())?,
            _ => {
                return Err(LineError::FieldNotStatus {
                    field: self.status.clone(),
                })
            }
        };
        let key = match get(&self.key)? {
            Value::String(s) => key_of(s)?,
            Value::Null => None,
            Value::Number(n) => key_of(&n.to_string())?,
            _ => {
                return Err(LineError::FieldNotKey {
                    field: self.key.clone(),
                })
            }
        };
        let (start_us, end_us) = span(
            start.saturating_sub(resolution_us),
            end.saturating_add(resolution_us),
        )?;
        Ok(Logged {
            start_us,
            end_us,
            status,
            key,
        })
    }
}

/// `a.b.c` into nested objects.
fn field<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, name| v.get(name))
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// An RFC 3339 string or Unix seconds.
fn instant(v: &Value) -> Result<i64, LineError> {
    match v {
        Value::String(s) if s.contains('T') => time::rfc3339_us(s),
        Value::String(s) => time::unix_seconds_us(s),
        Value::Number(n) => time::unix_seconds_us(&n.to_string()),
        _ => Err(LineError::NotTime),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envoys_fields_give_a_span_from_the_start_and_the_duration() {
        let f = Fields::envoy("x_customer_id");
        let l = f
            .line(
                r#"{"start_time":"1970-01-01T00:00:10.500Z","duration":3,"response_code":429,"x_customer_id":"c-1"}"#,
                1_000,
            )
            .unwrap();
        assert_eq!((l.start_us, l.end_us), (10_499_000, 10_505_000));
        assert_eq!((l.status, l.key.as_deref()), (429, Some("c-1")));
        let text = r#"{"start_time":"1970-01-01T00:00:10.500Z","duration":"3","response_code":"200","x_customer_id":null}"#;
        assert_eq!(f.line(text, 1_000).unwrap().key, None);
    }

    #[test]
    fn named_fields_take_any_two_of_start_end_and_duration() {
        let f = Fields::parse("end=t, duration_s=d, status=s, key=k.id").unwrap();
        let l = f
            .line(r#"{"t":12.5,"d":0.5,"s":200,"k":{"id":"a"}}"#, 0)
            .unwrap();
        assert_eq!((l.start_us, l.end_us), (12_000_000, 12_500_000));
        assert_eq!(l.key.as_deref(), Some("a"));
        let f = Fields::parse("start=a,end=b,status=s,key=k").unwrap();
        let l = f.line(r#"{"a":"1","b":"2","s":200,"k":7}"#, 0).unwrap();
        assert_eq!(
            (l.start_us, l.end_us, l.key.as_deref()),
            (1_000_000, 2_000_000, Some("7"))
        );
        for (text, says) in [
            ("start=a,status=s,key=k", "two of start"),
            ("start=a,end=b,duration_ms=d,status=s,key=k", "two of start"),
            ("start=a,end=b,key=k", "status=… and key=…"),
            (
                "start=a,end=b,status=s,key=k,colour=red",
                "unknown \"colour\"",
            ),
            ("start", "not name=field"),
            ("start=,end=b,status=s,key=k", "names no field"),
        ] {
            let e = Fields::parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn a_damaged_line_says_what_is_wrong() {
        let f = Fields::envoy("k");
        for (line, says) in [
            ("{", "not a JSON object"),
            ("[1]", "not a JSON object"),
            (
                r#"{"duration":1,"response_code":200,"k":"a"}"#,
                "no field \"start_time\"",
            ),
            (
                r#"{"start_time":"x","duration":1,"response_code":200,"k":"a"}"#,
                "start_time",
            ),
            (
                r#"{"start_time":"1970-01-01T00:00:01Z","duration":-1,"response_code":200,"k":"a"}"#,
                "0 to a day",
            ),
            (
                r#"{"start_time":"1970-01-01T00:00:01Z","duration":1,"response_code":true,"k":"a"}"#,
                "not a status",
            ),
            (
                r#"{"start_time":"1970-01-01T00:00:01Z","duration":1,"response_code":200,"k":[1]}"#,
                "not a key",
            ),
        ] {
            let e = f.line(line, 1_000).unwrap_err().to_string();
            assert!(e.contains(says), "{line}: {e}");
        }
        let ended_first = Fields::parse("start=a,end=b,status=s,key=k").unwrap();
        let e = ended_first
            .line(r#"{"a":2,"b":1,"s":200,"k":"x"}"#, 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("ended before"), "{e}");
    }

    proptest::proptest! {
        #[test]
        fn any_line_is_read_or_refused(line in "\\PC{0,160}") {
            let _ = Fields::envoy("k").line(&line, 1_000);
        }
    }
}
