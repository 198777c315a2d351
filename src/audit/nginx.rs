//! nginx access logs written with a `log_format` of your own. The format
//! string, as configured, is compiled into literal text and variables;
//! each variable's value runs up to the next literal (so two variables
//! need text between them). It must log `$msec` (the time of the log
//! write, seconds with milliseconds), `$request_time` (seconds since the
//! request's first bytes, milliseconds), `$status` and the variable the
//! limiter keys on (`--key '$http_x_api_key'`, `$binary_remote_addr` is
//! logged as `$remote_addr`). The decision lies in `[msec − request_time,
//! msec]`, each end widened by a millisecond (both are truncated to it).

use super::error::{LineError, LogFormatError};
use super::{key_of, seconds_us, span, status_of, time, Logged};

/// The resolution of `$msec` and `$request_time`.
const RESOLUTION_US: i64 = 1_000;

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Text(String),
    Var(String),
}

/// A compiled `log_format`.
#[derive(Clone, Debug)]
pub(crate) struct Format {
    tokens: Vec<Token>,
    key: String,
}

impl Format {
    /// `format`: the log_format string (without nginx's quotes);
    /// `key`: the variable the limiter keys on, with or without `$`.
    pub(crate) fn new(format: &str, key: &str) -> Result<Format, LogFormatError> {
        let key = key
            .trim_start_matches('$')
            .trim_matches(|c| c == '{' || c == '}');
        let tokens = tokens(format)?;
        for pair in tokens.windows(2) {
            if let [Token::Var(a), Token::Var(b)] = pair {
                return Err(LogFormatError::NoTextBetween {
                    a: a.clone(),
                    b: b.clone(),
                });
            }
        }
        let vars: Vec<&str> = tokens
            .iter()
            .filter_map(|t| match t {
                Token::Var(v) => Some(v.as_str()),
                Token::Text(_) => None,
            })
            .collect();
        for need in ["msec", "request_time", "status", key] {
            if !vars.contains(&need) {
                return Err(LogFormatError::NotLogged {
                    need: need.into(),
                    key: key.into(),
                });
            }
        }
        Ok(Format {
            tokens,
            key: key.to_string(),
        })
    }

    /// One line; `None` never (every nginx line is a request).
    pub(crate) fn line(&self, line: &str) -> Result<Logged, LineError> {
        let mut rest = line;
        let (mut msec, mut took, mut status, mut key) = (None, None, None, None);
        for (i, token) in self.tokens.iter().enumerate() {
            match token {
                Token::Text(t) => {
                    rest = rest
                        .strip_prefix(t.as_str())
                        .ok_or_else(|| LineError::Expected {
                            text: t.clone(),
                            at: cut(rest),
                        })?;
                }
                Token::Var(v) => {
                    let value = match self.tokens.get(i + 1) {
                        Some(Token::Text(next)) => {
                            let end = rest.find(next.as_str()).ok_or_else(|| {
                                LineError::ExpectedAfter {
                                    text: next.clone(),
                                    var: v.clone(),
                                }
                            })?;
                            let value = &rest[..end];
                            rest = &rest[end..];
                            value
                        }
                        _ => std::mem::take(&mut rest),
                    };
                    match v.as_str() {
                        "msec" => msec = Some(time::unix_seconds_us(value)?),
                        "request_time" => took = Some(seconds_us(value)?),
                        "status" => status = Some(status_of(value)?),
                        _ => {}
                    }
                    if *v == self.key {
                        key = Some(key_of(value)?);
                    }
                }
            }
        }
        if !rest.is_empty() {
            return Err(LineError::MoreAfterEnd { rest: cut(rest) });
        }
        let (Some(end), Some(took), Some(status), Some(key)) = (msec, took, status, key) else {
            return Err(LineError::MissingVariable);
        };
        let (start_us, end_us) = span(end - took - RESOLUTION_US, end + RESOLUTION_US)?;
        Ok(Logged {
            start_us,
            end_us,
            status,
            key,
        })
    }
}

/// The first 40 characters, for an error.
fn cut(s: &str) -> String {
    s.chars().take(40).collect()
}

fn tokens(format: &str) -> Result<Vec<Token>, LogFormatError> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            text.push(c);
            continue;
        }
        let braced = chars.peek() == Some(&'{');
        if braced {
            chars.next();
        }
        let mut name = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_ascii_alphanumeric() || c == '_' {
                name.push(c);
                chars.next();
            } else {
                break;
            }
        }
        if braced && chars.next() != Some('}') {
            return Err(LogFormatError::NotClosed { name });
        }
        if name.is_empty() {
            return Err(LogFormatError::NoName);
        }
        if !text.is_empty() {
            out.push(Token::Text(std::mem::take(&mut text)));
        }
        out.push(Token::Var(name));
    }
    if !text.is_empty() {
        out.push(Token::Text(text));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORMAT: &str =
        r#"$remote_addr [$msec] $request_time $status "$http_x_customer_id" "$request""#;

    #[test]
    fn a_line_gives_its_span_status_and_key() {
        let f = Format::new(FORMAT, "$http_x_customer_id").unwrap();
        let l = f
            .line(r#"127.0.0.1 [1733491918.250] 0.003 429 "customer-7" "GET /a b HTTP/1.1""#)
            .unwrap();
        assert_eq!(l.status, 429);
        assert_eq!(l.key.as_deref(), Some("customer-7"));
        assert_eq!(l.end_us, 1_733_491_918_251_000);
        assert_eq!(l.start_us, 1_733_491_918_246_000);
        let none = f
            .line(r#"127.0.0.1 [1733491918.250] 0.000 200 "-" "GET / HTTP/1.1""#)
            .unwrap();
        assert_eq!(none.key, None);
        let braced =
            Format::new("${msec}|$request_time|$status|$remote_addr", "remote_addr").unwrap();
        assert_eq!(
            braced.line("10.000|0.001|200|::1").unwrap().key.as_deref(),
            Some("::1")
        );
    }

    #[test]
    fn a_format_rlbench_cannot_read_is_refused_in_one_line() {
        for (format, says) in [
            ("$msec $status $http_x", "does not log $request_time"),
            ("$msec $request_time $status", "does not log $http_x"),
            ("$msec$request_time $status $http_x", "no text between"),
            ("${msec $request_time $status $http_x", "not closed"),
            (
                "$ $msec $request_time $status $http_x",
                "without a variable name",
            ),
        ] {
            let e = Format::new(format, "$http_x").unwrap_err().to_string();
            assert!(e.contains(says), "{format}: {e}");
        }
    }

    #[test]
    fn a_damaged_line_says_what_is_wrong() {
        let f = Format::new(FORMAT, "$http_x_customer_id").unwrap();
        for (line, says) in [
            ("", "expected \" [\""),
            (r#"1 [x] 0.003 200 "k" "r""#, "not Unix seconds"),
            (r#"1 [1.0] -1 200 "k" "r""#, "from 0 to a day"),
            (r#"1 [1.0] 0.003 777 "k" "r""#, "not an HTTP status"),
            (r#"1 [1.0] 0.003 200 "k" "r"x"#, "more after"),
            (r#"1 [1.0] 0.003 200 "k"#, "expected"),
            (r#"1 [0.001] 0.003 200 "k" "r""#, "outside 1970"),
        ] {
            let e = f.line(line).unwrap_err().to_string();
            assert!(e.contains(says), "{line}: {e}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_line_is_read_or_refused(line in "\\PC{0,120}") {
            let f = Format::new(FORMAT, "$http_x_customer_id").unwrap();
            let _ = f.line(&line);
        }
    }
}
