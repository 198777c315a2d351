//! A Prometheus series selector as `[target] metrics` takes it:
//! `name{label="value",other!="value"}` — a metric name and equality or
//! inequality matchers (label values with PromQL's escapes `\\`, `\"`,
//! `\n`). The same text is sent to a Prometheus server as PromQL, and
//! matched here against scraped series: a label a series lacks is the
//! empty string, as in Prometheus.

use super::error::{MatcherError, QuotedError, SelectorError};
use std::fmt;

/// The most matchers one selector may carry.
const MAX_MATCHERS: usize = 32;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Selector {
    pub name: String,
    pub matchers: Vec<Matcher>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Matcher {
    pub label: String,
    /// `=` (true) or `!=` (false).
    pub equal: bool,
    pub value: String,
}

impl Selector {
    /// Does the series `name{labels}` match?
    pub(crate) fn matches(&self, name: &str, labels: &[(String, String)]) -> bool {
        name == self.name
            && self.matchers.iter().all(|m| {
                let v = labels
                    .iter()
                    .find(|(l, _)| *l == m.label)
                    .map_or("", |(_, v)| v.as_str());
                (v == m.value) == m.equal
            })
    }
}

/// PromQL text, values escaped again: what a Prometheus server is asked.
impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if self.matchers.is_empty() {
            return Ok(());
        }
        f.write_str("{")?;
        for (i, m) in self.matchers.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = if m.equal { "=" } else { "!=" };
            write!(f, "{}{op}\"{}\"", m.label, escape(&m.value))?;
        }
        f.write_str("}")
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn name_char(c: char, first: bool) -> bool {
    c == '_' || c == ':' || c.is_ascii_alphabetic() || (!first && c.is_ascii_digit())
}

fn label_char(c: char, first: bool) -> bool {
    c == '_' || c.is_ascii_alphabetic() || (!first && c.is_ascii_digit())
}

/// Reads `text`; the error says what is wrong, for one line of output.
pub(crate) fn parse(text: &str) -> Result<Selector, SelectorError> {
    let text = text.trim();
    let name_end = text
        .char_indices()
        .find(|&(i, c)| !name_char(c, i == 0))
        .map_or(text.len(), |(i, _)| i);
    if name_end == 0 {
        return Err(SelectorError::NoName { text: text.into() });
    }
    let name = text[..name_end].to_string();
    let rest = text[name_end..].trim_start();
    if rest.is_empty() {
        return Ok(Selector {
            name,
            matchers: Vec::new(),
        });
    }
    let Some(body) = rest.strip_prefix('{') else {
        return Err(SelectorError::AfterName { text: text.into() });
    };
    let (matchers, after) = matchers(body).map_err(|source| SelectorError::Matchers {
        text: text.into(),
        source,
    })?;
    if !after.trim().is_empty() {
        return Err(SelectorError::AfterBrace { text: text.into() });
    }
    Ok(Selector { name, matchers })
}

/// The matchers up to the closing brace, and what follows it.
fn matchers(mut s: &str) -> Result<(Vec<Matcher>, &str), MatcherError> {
    let mut out = Vec::new();
    loop {
        s = s.trim_start();
        if let Some(rest) = s.strip_prefix('}') {
            return Ok((out, rest));
        }
        if out.len() == MAX_MATCHERS {
            return Err(MatcherError::TooMany { max: MAX_MATCHERS });
        }
        let end = s
            .char_indices()
            .find(|&(i, c)| !label_char(c, i == 0))
            .map_or(s.len(), |(i, _)| i);
        if end == 0 {
            return Err(MatcherError::NoLabel);
        }
        let label = s[..end].to_string();
        s = s[end..].trim_start();
        let equal = if let Some(r) = s.strip_prefix("!=") {
            s = r;
            false
        } else if let Some(r) = s.strip_prefix("=~").or_else(|| s.strip_prefix("!~")) {
            let _ = r;
            return Err(MatcherError::Regex { label });
        } else if let Some(r) = s.strip_prefix('=') {
            s = r;
            true
        } else {
            return Err(MatcherError::NoOperator { label });
        };
        let (value, rest) = match quoted(s.trim_start()) {
            Ok(read) => read,
            Err(source) => return Err(MatcherError::Value { label, source }),
        };
        out.push(Matcher {
            label,
            equal,
            value,
        });
        s = rest.trim_start();
        if let Some(r) = s.strip_prefix(',') {
            s = r;
        } else if !s.starts_with('}') {
            return Err(MatcherError::NoSeparator);
        }
    }
}

/// A double-quoted value with `\\`, `\"` and `\n`; and what follows it.
pub(super) fn quoted(s: &str) -> Result<(String, &str), QuotedError> {
    let Some(body) = s.strip_prefix('"') else {
        return Err(QuotedError::NoQuote);
    };
    let mut value = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((value, &body[i + 1..])),
            '\\' => match chars.next() {
                Some((_, '\\')) => value.push('\\'),
                Some((_, '"')) => value.push('"'),
                Some((_, 'n')) => value.push('\n'),
                Some((_, other)) => return Err(QuotedError::UnknownEscape(other)),
                None => break,
            },
            c => value.push(c),
        }
    }
    Err(QuotedError::NotClosed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn a_name_and_matchers_are_read_and_written_back() {
        let s = parse(r#" rlbench_requests_total{decision="admitted", replica!="r\"1"} "#).unwrap();
        assert_eq!(s.name, "rlbench_requests_total");
        assert_eq!(s.matchers.len(), 2);
        assert_eq!(s.matchers[1].value, "r\"1");
        assert!(!s.matchers[1].equal);
        assert_eq!(
            s.to_string(),
            r#"rlbench_requests_total{decision="admitted",replica!="r\"1"}"#
        );
        assert_eq!(parse(&s.to_string()).unwrap(), s);
        assert_eq!(parse("up").unwrap().matchers, vec![]);
        assert_eq!(parse("a{}").unwrap().to_string(), "a");
    }

    #[test]
    fn matching_treats_a_missing_label_as_empty() {
        let s = parse(r#"x{decision="admitted",zone!="b"}"#).unwrap();
        assert!(s.matches("x", &labels(&[("decision", "admitted")])));
        assert!(s.matches("x", &labels(&[("decision", "admitted"), ("zone", "a")])));
        assert!(!s.matches("x", &labels(&[("decision", "admitted"), ("zone", "b")])));
        assert!(!s.matches("x", &labels(&[("decision", "rejected")])));
        assert!(!s.matches("y", &labels(&[("decision", "admitted")])));
        let empty = parse(r#"x{zone=""}"#).unwrap();
        assert!(empty.matches("x", &[]));
        assert!(!empty.matches("x", &labels(&[("zone", "a")])));
    }

    #[test]
    fn what_is_not_a_selector_is_named() {
        for (text, says) in [
            ("", "expected a metric name"),
            ("{a=\"b\"}", "expected a metric name"),
            ("9x", "expected a metric name"),
            ("x y", "only {label"),
            ("x{a=\"b\"", "expected , or }"),
            ("x{a=\"b}", "not closed"),
            ("x{a=b}", "double quotes"),
            ("x{a=~\"b.*\"}", "regular-expression"),
            ("x{a}", "expected = or !="),
            ("x{a=\"b\"} junk", "nothing may follow"),
            ("x{a=\"\\q\"}", "unknown escape"),
            ("sum(x)", "only {label"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
        }
        let many = format!(
            "x{{{}}}",
            (0..40)
                .map(|i| format!("l{i}=\"v\""))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert!(parse(&many)
            .unwrap_err()
            .to_string()
            .contains("more than 32"));
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_read_or_refused_in_one_line(text in "\\PC{0,80}") {
            if let Err(e) = parse(&text) {
                let e = e.to_string();
                proptest::prop_assert!(!e.is_empty());
            }
        }
    }
}
