//! vegeta's results as CSV (`vegeta encode --to csv`): `timestamp` (Unix
//! nanoseconds, when the request started), `code`, `latency` (ns),
//! `bytes out`, `bytes in`, `error`, `body` (base64), `attack`, `seq`,
//! `method`, `url`, `headers`. The request carries no key column of its
//! own, so the key is read from its URL: a query parameter
//! (`query:api_key`), a path segment counted from 1 (`path:2`, or
//! `path:last`), or the whole URL (`url`). The decision lies in
//! `[timestamp, timestamp + latency]`, widened by a microsecond of
//! rounding. A row with code 0 got no answer (an error).

use super::error::{LineError, UrlKeyError};
use super::{key_of, span, Logged};

/// Where in the URL the key is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum UrlKey {
    Whole,
    Query(String),
    /// 1 = the first segment; 0 = the last.
    Segment(usize),
}

impl UrlKey {
    /// `url`, `query:NAME`, `path:N` or `path:last`.
    pub(crate) fn parse(text: &str) -> Result<UrlKey, UrlKeyError> {
        let bad = || UrlKeyError { text: text.into() };
        match text.split_once(':') {
            None if text == "url" => Ok(UrlKey::Whole),
            Some(("query", name)) if !name.is_empty() => Ok(UrlKey::Query(name.to_string())),
            Some(("path", "last")) => Ok(UrlKey::Segment(0)),
            Some(("path", n)) => n
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=64).contains(n))
                .map(UrlKey::Segment)
                .ok_or_else(bad),
            _ => Err(bad()),
        }
    }

    fn of(&self, url: &str) -> Result<Option<String>, LineError> {
        let parsed = url::Url::parse(url).map_err(|source| LineError::NotUrl {
            url: url.into(),
            source,
        })?;
        let value = match self {
            UrlKey::Whole => Some(url.to_string()),
            UrlKey::Query(name) => parsed
                .query_pairs()
                .find(|(k, _)| k == name.as_str())
                .map(|(_, v)| v.into_owned()),
            UrlKey::Segment(n) => {
                let segments: Vec<&str> = parsed
                    .path_segments()
                    .map(|s| s.filter(|s| !s.is_empty()).collect())
                    .unwrap_or_default();
                match n {
                    0 => segments.last().map(|s| s.to_string()),
                    n => segments.get(n - 1).map(|s| s.to_string()),
                }
            }
        };
        match value {
            Some(v) => key_of(&v),
            None => Ok(None),
        }
    }
}

/// One CSV row.
pub(crate) fn row(record: &csv::StringRecord, key: &UrlKey) -> Result<Logged, LineError> {
    if record.len() < 11 {
        return Err(LineError::TooFewColumns {
            columns: record.len(),
        });
    }
    let number = |i: usize, what: &'static str| -> Result<i64, LineError> {
        record[i]
            .parse::<i64>()
            .ok()
            .filter(|v| *v >= 0)
            .ok_or_else(|| LineError::NotNanoseconds {
                what,
                value: record[i].into(),
            })
    };
    let start_ns = number(0, "timestamp")?;
    let latency_ns = number(2, "latency")?;
    if latency_ns > 86_400_000_000_000 {
        return Err(LineError::LatencyTooLong);
    }
    let code: u16 = record[1]
        .parse()
        .ok()
        .filter(|c| *c == 0 || (100..=599).contains(c))
        .ok_or_else(|| LineError::NotCode {
            value: record[1].into(),
        })?;
    let start_us = start_ns / 1_000;
    let (start_us, end_us) = span(start_us - 1, start_us + latency_ns / 1_000 + 2)?;
    Ok(Logged {
        start_us,
        end_us,
        status: code,
        key: key.of(&record[10])?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(line: &str) -> csv::StringRecord {
        csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(line.as_bytes())
            .records()
            .next()
            .unwrap()
            .unwrap()
    }

    const ROW: &str = "1000000000500000,429,2500000,0,20,,eyJ9,,3,GET,http://127.0.0.1:8080/api/c-7/x?api_key=k1&z=2,";

    #[test]
    fn a_row_gives_its_span_status_and_the_key_from_its_url() {
        let l = row(&record(ROW), &UrlKey::Query("api_key".into())).unwrap();
        assert_eq!(
            (l.start_us, l.end_us),
            (1_000_000_000_499, 1_000_000_003_002)
        );
        assert_eq!((l.status, l.key.as_deref()), (429, Some("k1")));
        assert_eq!(
            row(&record(ROW), &UrlKey::Segment(2))
                .unwrap()
                .key
                .as_deref(),
            Some("c-7")
        );
        assert_eq!(
            row(&record(ROW), &UrlKey::Segment(0))
                .unwrap()
                .key
                .as_deref(),
            Some("x")
        );
        assert_eq!(row(&record(ROW), &UrlKey::Segment(9)).unwrap().key, None);
        assert!(row(&record(ROW), &UrlKey::Whole)
            .unwrap()
            .key
            .unwrap()
            .ends_with("z=2"));
        let failed = ROW.replacen(",429,", ",0,", 1).replacen(
            ",,eyJ9",
            ",\"dial tcp: refused, twice\",eyJ9",
            1,
        );
        assert_eq!(row(&record(&failed), &UrlKey::Whole).unwrap().status, 0);
    }

    #[test]
    fn keys_and_rows_that_are_not_vegetas_are_named() {
        assert_eq!(UrlKey::parse("path:last"), Ok(UrlKey::Segment(0)));
        assert_eq!(UrlKey::parse("query:k"), Ok(UrlKey::Query("k".into())));
        for bad in ["", "query:", "path:0", "path:x", "header:X"] {
            assert!(UrlKey::parse(bad).is_err(), "{bad}");
        }
        for (line, says) in [
            ("1,200,3", "3 columns"),
            (&ROW.replacen("1000000000500000", "-5", 1), "timestamp"),
            (&ROW.replacen(",429,", ",999,", 1), "not an HTTP status"),
            (&ROW.replacen("2500000", "x", 1), "latency"),
            (&ROW.replacen("http://127.0.0.1:8080", "::", 1), "url"),
        ] {
            let e = row(&record(line), &UrlKey::Whole).unwrap_err().to_string();
            assert!(e.contains(says), "{line}: {e}");
        }
    }
}
