//! k6's `--out json` results: one JSON object a line, metrics' points
//! among them. Each request has one `http_req_duration` point: its `time`
//! is when the request ended (k6 stamps its samples with the end), its
//! `value` the milliseconds from sending to the last byte (connecting
//! excluded), so the decision lies in `[time − value, time]`, widened by
//! a microsecond of rounding. Its tags carry `status` and the key, a tag
//! of the script's own (`http.post(url, body, { tags: { key: id } })`).
//! Every other line (metric definitions, other points) is no request.

use super::error::LineError;
use super::{key_of, span, status_of, time, Logged};
use serde_json::Value;

/// One line: `Ok(None)` when it is not a request's duration point.
pub(crate) fn line(line: &str, key_tag: &str) -> Result<Option<Logged>, LineError> {
    if line.len() > super::jsonl::MAX_LINE_BYTES {
        return Err(LineError::TooLong { bytes: line.len() });
    }
    let v: Value =
        serde_json::from_str(line).map_err(|e| LineError::NotJson { why: e.to_string() })?;
    if v.get("type").and_then(Value::as_str) != Some("Point")
        || v.get("metric").and_then(Value::as_str) != Some("http_req_duration")
    {
        return Ok(None);
    }
    let data = v.get("data").ok_or(LineError::PointWithoutData)?;
    let end = time::rfc3339_us(
        data.get("time")
            .and_then(Value::as_str)
            .ok_or(LineError::PointWithoutTime)?,
    )?;
    let ms = data
        .get("value")
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite() && (0.0..=86_400e3).contains(v))
        .ok_or(LineError::PointDuration)?;
    let tags = data.get("tags").ok_or(LineError::PointWithoutTags)?;
    let status = match tags.get("status") {
        Some(Value::String(s)) => status_of(s)?,
        Some(Value::Number(n)) => status_of(&n.to_string())?,
        _ => return Err(LineError::PointWithoutStatus),
    };
    let key = match tags.get(key_tag) {
        Some(Value::String(s)) => key_of(s)?,
        None | Some(Value::Null) => None,
        Some(_) => {
            return Err(LineError::TagNotString {
                tag: key_tag.into(),
            })
        }
    };
    let took = (ms * 1e3).round() as i64;
    let (start_us, end_us) = span(end - took - 1, end + 1)?;
    Ok(Some(Logged {
        start_us,
        end_us,
        status,
        key,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const POINT: &str = r#"{"metric":"http_req_duration","type":"Point","data":{"time":"1970-01-01T00:00:10.5+00:00","value":2.5,"tags":{"method":"POST","status":"429","key":"c-2","url":"http://127.0.0.1/api"}}}"#;

    #[test]
    fn a_duration_point_is_a_request_and_the_rest_are_not() {
        let l = line(POINT, "key").unwrap().unwrap();
        assert_eq!((l.start_us, l.end_us), (10_497_499, 10_500_001));
        assert_eq!((l.status, l.key.as_deref()), (429, Some("c-2")));
        assert_eq!(line(POINT, "customer").unwrap().unwrap().key, None);
        let definition = r#"{"type":"Metric","data":{"name":"http_req_duration","type":"trend","contains":"time"},"metric":"http_req_duration"}"#;
        assert_eq!(line(definition, "key"), Ok(None));
        let other = POINT.replace("http_req_duration", "http_reqs");
        assert_eq!(line(&other, "key"), Ok(None));
    }

    #[test]
    fn a_damaged_point_says_what_is_wrong() {
        for (l, says) in [
            ("{", "not a JSON object"),
            (
                &POINT.replace("\"value\":2.5", "\"value\":-2"),
                "from 0 to a day",
            ),
            (
                &POINT.replace("\"status\":\"429\",", ""),
                "without a status",
            ),
            (
                &POINT.replace("1970-01-01T00:00:10.5+00:00", "soon"),
                "RFC 3339",
            ),
            (&POINT.replace("\"c-2\"", "7"), "not a string"),
        ] {
            let e = line(l, "key").unwrap_err().to_string();
            assert!(e.contains(says), "{l}: {e}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_line_is_read_or_refused(l in "\\PC{0,160}") {
            let _ = line(&l, "key");
        }
    }
}
