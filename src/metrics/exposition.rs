//! Prometheus' text exposition format (and OpenMetrics' text, which reads
//! the same way for counters), as a limiter's `/metrics` answers it: each
//! sample line `name{label="value",...} value [timestamp]`; comments and
//! blank lines pass. Written here rather than taken from a crate: the
//! crates at hand (prometheus-parse) split label values on `,` and `=`
//! and skip lines they cannot read, and a sum of counters must account
//! for every line — a line that is not a sample is an error with its
//! number.

use super::error::{ExpositionError, SampleError};
use super::selector::quoted;

/// The most samples one answer may carry before it is refused.
pub(crate) const MAX_SAMPLES: usize = 1_000_000;
/// The most labels one sample may carry.
const MAX_LABELS: usize = 64;

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// Every sample of `text`; the first line that is not one is the error.
pub(crate) fn parse(text: &str) -> Result<Vec<Sample>, ExpositionError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if out.len() == MAX_SAMPLES {
            return Err(ExpositionError::TooMany { max: MAX_SAMPLES });
        }
        out.push(sample(line).map_err(|source| ExpositionError::Line {
            line: i + 1,
            source,
        })?);
    }
    Ok(out)
}

fn sample(line: &str) -> Result<Sample, SampleError> {
    let end = line
        .char_indices()
        .find(|&(i, c)| {
            !(c == '_' || c == ':' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()))
        })
        .map_or(line.len(), |(i, _)| i);
    if end == 0 {
        return Err(SampleError::NoName);
    }
    let name = line[..end].to_string();
    let mut rest = &line[end..];
    let mut labels = Vec::new();
    if let Some(body) = rest.strip_prefix('{') {
        rest = label_pairs(body, &mut labels)?;
    }
    let mut fields = rest.split_ascii_whitespace();
    let value = fields.next().ok_or(SampleError::NoValue)?;
    let value = number(value).ok_or_else(|| SampleError::NotNumber(value.into()))?;
    // The timestamp, if any, is the exporter's; one more field is not.
    if let Some(ts) = fields.next() {
        if ts.parse::<f64>().is_err() {
            return Err(SampleError::NotTimestamp(ts.into()));
        }
    }
    if fields.next().is_some() {
        return Err(SampleError::Trailing);
    }
    Ok(Sample {
        name,
        labels,
        value,
    })
}

/// `label="value",...}`: the pairs, and what follows the brace.
fn label_pairs<'a>(
    mut s: &'a str,
    labels: &mut Vec<(String, String)>,
) -> Result<&'a str, SampleError> {
    loop {
        s = s.trim_start();
        if let Some(rest) = s.strip_prefix('}') {
            return Ok(rest);
        }
        if labels.len() == MAX_LABELS {
            return Err(SampleError::TooManyLabels { max: MAX_LABELS });
        }
        let end = s
            .char_indices()
            .find(|&(i, c)| !(c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())))
            .map_or(s.len(), |(i, _)| i);
        if end == 0 {
            return Err(SampleError::NoLabel);
        }
        let label = s[..end].to_string();
        let Some(r) = s[end..].trim_start().strip_prefix('=') else {
            return Err(SampleError::NoEquals { label });
        };
        let (value, r) = match quoted(r.trim_start()) {
            Ok(read) => read,
            Err(source) => return Err(SampleError::Value { label, source }),
        };
        labels.push((label, value));
        s = r.trim_start();
        if let Some(r) = s.strip_prefix(',') {
            s = r;
        } else if !s.starts_with('}') {
            return Err(SampleError::NoSeparator);
        }
    }
}

/// A sample value: Go's float syntax as Prometheus writes it.
fn number(v: &str) -> Option<f64> {
    match v {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => v.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_reference_apis_answer_and_openmetrics() {
        let text = "# TYPE rlbench_requests_total counter\n\
            rlbench_requests_total{replica=\"r0\",decision=\"admitted\"} 99\n\
            rlbench_requests_total{replica=\"r,=0\",decision=\"rejected\"} 3 1700000000000\n\
            \n\
            up 1\n\
            # EOF\n";
        let s = parse(text).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].value, 99.0);
        assert_eq!(s[1].labels[0], ("replica".into(), "r,=0".into()));
        assert_eq!(s[2].name, "up");
        assert!(s[2].labels.is_empty());
        assert!(parse("x 1.5e3\ny{a=\"b\",} NaN").unwrap()[1].value.is_nan());
    }

    #[test]
    fn a_line_that_is_not_a_sample_is_named_by_its_number() {
        for (text, says) in [
            ("ok 1\n{a=\"b\"} 1", "line 2: expected a metric name"),
            ("x{a=\"b\" 1", "line 1: expected , or }"),
            ("x{a=\"b} 1", "not closed"),
            ("x", "without a value"),
            ("x one", "is not a number"),
            ("x 1 soon", "not a timestamp"),
            ("x 1 2 3", "more than a value"),
            ("x{a} 1", "expected = after it"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_read_or_refused_in_one_line(text in "\\PC{0,200}") {
            if let Err(e) = parse(&text) {
                let e = e.to_string();
                proptest::prop_assert!(!e.is_empty() && !e.contains('\n'));
            }
        }

        #[test]
        fn an_answer_spoiled_anywhere_never_panics(
            at in 0usize..200, byte in proptest::prelude::any::<u8>()
        ) {
            let mut text = b"# TYPE a counter\na{x=\"1\",y=\"2\"} 5 17\nb 2\n".to_vec();
            let i = at % text.len();
            text[i] = byte;
            let _ = parse(&String::from_utf8_lossy(&text));
        }
    }
}
