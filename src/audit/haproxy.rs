//! HAProxy's HTTP log (`option httplog`, to a file or stdout, with or
//! without a syslog prefix): `client [date] frontend backend/server
//! TR/Tw/Tc/Tr/Ta status bytes cookies state conns queues {captured
//! request headers} {captured response headers} "request"`. The date is
//! when the request began, in milliseconds; `Ta` the time until the
//! answer's last byte. The key is a captured request header (`capture
//! request header X-Api-Key len 64`): the first one unless told which.
//! The decision lies in `[date, date + Ta]`, widened by the milliseconds
//! both are truncated to.

use super::error::LineError;
use super::{key_of, span, status_of, time, Logged};

const RESOLUTION_US: i64 = 1_000;

/// `capture`: which captured request header is the key (1 = the first).
/// `Ok(None)`: a connection that carried no request (`"<BADREQ>"`, as a
/// bare connect and close is logged).
pub(crate) fn line(line: &str, capture: usize) -> Result<Option<Logged>, LineError> {
    if line.trim_end().ends_with("\"<BADREQ>\"") {
        return Ok(None);
    }
    let (start, rest) = date(line)?;
    let mut fields = rest.split(' ').filter(|f| !f.is_empty());
    let _frontend = fields.next().ok_or(LineError::NoFrontend)?;
    let _backend = fields.next().ok_or(LineError::NoBackend)?;
    let timers = fields.next().ok_or(LineError::NoTimers)?;
    let ta = timers
        .rsplit('/')
        .next()
        .map(|t| t.trim_start_matches('+'))
        .and_then(|t| t.parse::<i64>().ok())
        .ok_or_else(|| LineError::NotTimers {
            timers: timers.into(),
        })?;
    if !(0..=86_400_000).contains(&ta) || timers.split('/').count() != 5 {
        return Err(LineError::TaOutOfRange {
            timers: timers.into(),
        });
    }
    let status = status_of(fields.next().ok_or(LineError::NoStatus)?)?;
    // bytes, request cookie, response cookie, state, conns, queues.
    for what in [
        "bytes",
        "cookies",
        "cookies",
        "termination state",
        "connections",
        "queues",
    ] {
        fields.next().ok_or(LineError::EndsBefore { what })?;
    }
    // The captured request headers follow the queues.
    let after_queues = rest_after(rest, 10).ok_or(LineError::EndsBefore { what: "captures" })?;
    let Some(captures) = after_queues.strip_prefix('{') else {
        return Err(LineError::NoCaptures);
    };
    let end = captures.find('}').ok_or(LineError::CaptureNotClosed)?;
    let values: Vec<&str> = captures[..end].split('|').collect();
    let value = values
        .get(capture.wrapping_sub(1))
        .ok_or(LineError::NoSuchCapture {
            asked: capture,
            has: values.len(),
        })?;
    let (start_us, end_us) = span(
        start - RESOLUTION_US,
        start + ta * 1_000 + 2 * RESOLUTION_US,
    )?;
    Ok(Some(Logged {
        start_us,
        end_us,
        status,
        key: key_of(value)?,
    }))
}

/// The request's date (µs) and what follows it.
fn date(line: &str) -> Result<(i64, &str), LineError> {
    let mut from = 0;
    while let Some(i) = line[from..].find('[') {
        let open = from + i;
        if let Some(close) = line[open..].find(']') {
            let inside = &line[open + 1..open + close];
            if let Ok(us) = time::haproxy_us(inside) {
                return Ok((us, &line[open + close + 1..]));
            }
        }
        from = open + 1;
    }
    Err(LineError::NoDate)
}

/// `s` after its first `n` space-separated fields.
fn rest_after(s: &str, n: usize) -> Option<&str> {
    let mut rest = s.trim_start();
    for _ in 0..n {
        let end = rest.find(' ')?;
        rest = rest[end..].trim_start();
    }
    Some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "<134>Dec  6 13:31:58 haproxy[42]: 127.0.0.1:50000 [01/Jan/1970:00:00:10.500] fe be/s1 0/0/0/1/3 429 120 - - PR-- 1/1/0/0/0 0/0 {customer-3|x} \"POST /api HTTP/1.1\"";

    #[test]
    fn a_line_gives_its_span_status_and_captured_key() {
        let l = line(LINE, 1).unwrap().unwrap();
        assert_eq!(l.status, 429);
        assert_eq!(l.key.as_deref(), Some("customer-3"));
        assert_eq!((l.start_us, l.end_us), (10_499_000, 10_505_000));
        assert_eq!(line(LINE, 2).unwrap().unwrap().key.as_deref(), Some("x"));
        let empty = LINE.replace("{customer-3|x}", "{|x}");
        assert_eq!(line(&empty, 1).unwrap().unwrap().key, None);
        let plus = LINE.replace("0/0/0/1/3", "0/0/0/1/+3");
        assert_eq!(line(&plus, 1).unwrap().unwrap().end_us, 10_505_000);
        let denied = LINE.replace("0/0/0/1/3", "0/-1/-1/-1/0");
        assert_eq!(line(&denied, 1).unwrap().unwrap().end_us, 10_502_000);
        let bare = "127.0.0.1:5 [01/Jan/1970:00:00:10.500] fe fe/<NOSRV> -1/-1/-1/-1/0 400 0 - - CR-- 1/1/0/0/0 0/0 \"<BADREQ>\"";
        assert_eq!(line(bare, 1), Ok(None));
    }

    #[test]
    fn a_damaged_line_says_what_is_wrong() {
        for (l, says) in [
            ("garbage", "no [date]"),
            (
                &LINE.replace("0/0/0/1/3", "0/0/1/3"),
                "expected TR/Tw/Tc/Tr/Ta",
            ),
            (&LINE.replace("0/0/0/1/3", "0/0/0/1/-1"), "Ta from 0"),
            (&LINE.replace(" 429 ", " 4290 "), "not an HTTP status"),
            (
                &LINE.replace("{customer-3|x} ", ""),
                "no captured request headers",
            ),
            (&LINE.replace("{customer-3|x}", "{customer-3"), "not closed"),
            (&LINE[..LINE.find(" PR--").unwrap()], "ends before"),
        ] {
            let e = line(l, 1).unwrap_err().to_string();
            assert!(e.contains(says), "{l}: {e}");
        }
        assert!(line(LINE, 3)
            .unwrap_err()
            .to_string()
            .contains("header 3 asked"));
        assert!(line(LINE, 0).is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_line_is_read_or_refused(l in "\\PC{0,160}", capture in 0usize..4) {
            let _ = line(&l, capture);
        }

        #[test]
        fn a_real_line_spoiled_anywhere_never_panics(at in 0usize..400, c in proptest::char::any()) {
            let mut chars: Vec<char> = LINE.chars().collect();
            let i = at % chars.len();
            chars[i] = c;
            let _ = line(&chars.into_iter().collect::<String>(), 1);
        }
    }
}
