//! The command line's flags turned into the commands' checked inputs
//! (low-level args → high-level ones): nothing under `app/` but this file
//! reads clap's structs, and every bad flag is one line naming it.

use crate::app::attack::Attack;
use crate::app::run::Request;
use crate::cli::{AttackArgs, RunArgs};
use crate::error::Error;
use crate::gate::{Bound, Expectation, Figure};
use crate::load::pick::Fanout;
use crate::load::request::Template;
use crate::load::schedule::Shape;
use crate::scenario::units;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use std::time::Duration;

/// `rlbench run`'s flags.
pub fn run(args: &RunArgs) -> Result<Request, Error> {
    let duration = args
        .duration
        .as_ref()
        .map(|d| {
            units::duration(d)
                .map(|parsed| (parsed, d.clone()))
                .map_err(|e| Error::input(format!("--duration: {e}")))
        })
        .transpose()?;
    Ok(Request {
        scenario: args.scenario.clone(),
        duration,
        arms: args.arms.clone(),
        out: args.out.clone(),
        quiet: args.quiet,
    })
}

/// `rlbench attack`'s flags.
pub fn attack(args: &AttackArgs) -> Result<Attack, Error> {
    let policy = args
        .policy
        .as_deref()
        .map(crate::scenario::inline_policy)
        .transpose()
        .map_err(|e| Error::input(e.to_string()))?;
    let targets = args
        .urls
        .iter()
        .map(|u| crate::target::loopback_url(u))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Error::input)?;
    let shape = match (&args.rate, args.concurrency) {
        (Some(rate), None) => Shape::Constant {
            rate: requests_per_second(rate).map_err(Error::input)?,
        },
        (None, Some(c)) if (1..=100_000).contains(&c) => Shape::Closed {
            concurrency: c,
            think: Duration::ZERO,
        },
        (None, Some(c)) => {
            return Err(Error::input(format!(
                "--concurrency {c}: expected 1 to 100000 workers"
            )))
        }
        _ => {
            return Err(Error::input(
                "give either --rate (open loop) or --concurrency (closed loop)",
            ))
        }
    };
    let duration = positive_duration("--duration", &args.duration)?;
    let timeout = positive_duration("--timeout", &args.timeout)?;
    let method = crate::target::method(&args.method)
        .ok_or_else(|| Error::input(format!("--method {:?}: not an HTTP method", args.method)))?;
    let mut headers = HeaderMap::new();
    for h in &args.headers {
        let (name, value) = header(h).map_err(Error::input)?;
        headers.append(name, value);
    }
    let key_header = args
        .key_header
        .as_deref()
        .map(|name| {
            crate::target::header_name(name)
                .ok_or_else(|| Error::input(format!("--key-header {name:?}: not a header name")))
        })
        .transpose()?;
    if args.keys > 1 && key_header.is_none() {
        // The target would see one key; the verifier must not see several.
        return Err(Error::input(
            "--keys needs --key-header: without it every request is the same key to the limiter",
        ));
    }
    let retry = match args.retry {
        None => None,
        Some(n @ 1..=10) => Some(crate::load::retry::Retry {
            max: n,
            ..Default::default()
        }),
        Some(n) => {
            return Err(Error::input(format!(
                "--retry {n}: expected 1 to 10 retries"
            )))
        }
    };
    if args.keys == 0 || args.max_in_flight == 0 {
        return Err(Error::input(
            "--keys and --max-in-flight must be at least 1",
        ));
    }
    Ok(Attack {
        targets,
        template: Template {
            method,
            headers,
            key_header,
            key_affix: Default::default(),
            limited: limited_statuses(&args.limited_status).map_err(Error::input)?,
        },
        shape,
        duration,
        keys: args.keys,
        fanout: Fanout::from_name(&args.fanout).ok_or_else(|| {
            Error::input(format!(
                "--fanout {:?}: expected {}",
                args.fanout,
                Fanout::NAMES
            ))
        })?,
        timeout,
        max_in_flight: args.max_in_flight,
        retry,
        expect: attack_expect(args, policy.is_some())?,
        policy: policy.as_ref().map(|(p, _)| p.clone()),
        timing: policy.map(|(_, t)| t).unwrap_or_default(),
        out: args.out.clone(),
        quiet: args.quiet,
    })
}

/// The attack's gate: the `--max-…` flags as an arm's expectations; with
/// `--policy`, no definite violation by default (a judged attack that
/// proves the limiter wrong is a failure, as in `run`).
fn attack_expect(args: &AttackArgs, judged: bool) -> Result<Vec<Expectation>, Error> {
    let ratio = |flag: &str, v: f64| {
        if v.is_finite() && (0.0..=1.0).contains(&v) {
            Ok(v)
        } else {
            Err(Error::input(format!(
                "--{flag} {v}: expected a ratio from 0 to 1"
            )))
        }
    };
    let mut out = Vec::new();
    let definite = args.max_definite_violations.or(judged.then_some(0));
    if let Some(n) = definite {
        out.push(Expectation {
            key: "max_definite_violations",
            figure: Figure::DefiniteViolations,
            bound: Bound::AtMost,
            value: n as f64,
        });
    }
    if let Some(v) = args.max_false_reject_ratio {
        out.push(Expectation {
            key: "max_false_reject_ratio",
            figure: Figure::FalseRejectRatio,
            bound: Bound::AtMost,
            value: ratio("max-false-reject-ratio", v)?,
        });
    }
    if let Some(v) = args.max_error_ratio {
        out.push(Expectation {
            key: "max_error_ratio",
            figure: Figure::ErrorRatio,
            bound: Bound::AtMost,
            value: ratio("max-error-ratio", v)?,
        });
    }
    Ok(out)
}

/// `--limited-status`: HTTP statuses other than 2xx (a 2xx is an admit).
pub fn limited_statuses(codes: &[u16]) -> Result<Vec<u16>, String> {
    if codes.is_empty() {
        return Err("--limited-status: give at least one status".to_string());
    }
    let range = crate::target::LIMITED_STATUSES;
    match codes.iter().find(|&&c| !range.contains(&c)) {
        Some(c) => Err(format!(
            "--limited-status {c}: expected a status from {} to {} (2xx means admitted)",
            range.start(),
            range.end()
        )),
        None => Ok(codes.to_vec()),
    }
}

fn positive_duration(flag: &str, text: &str) -> Result<Duration, Error> {
    match units::duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err(Error::input(format!("{flag} {text:?}: must be above 0"))),
        Err(e) => Err(Error::input(format!("{flag}: {e}"))),
    }
}

/// `2000`, `2000/s` or `100/10ms`, as requests per second.
pub fn requests_per_second(text: &str) -> Result<f64, String> {
    let rps = match text.trim().parse::<f64>() {
        Ok(r) => r,
        Err(_) => {
            let (count, per) = units::rate(text).map_err(|_| {
                format!("--rate {text:?}: expected requests/s like \"2000\" or \"100/10ms\"")
            })?;
            count as f64 / per.as_secs_f64()
        }
    };
    if rps.is_finite() && rps > 0.0 && rps <= 1_000_000.0 {
        Ok(rps)
    } else {
        Err(format!(
            "--rate {text:?}: must be above 0 and at most 1000000 requests/s"
        ))
    }
}

/// `Name: value`.
pub fn header(text: &str) -> Result<(HeaderName, HeaderValue), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("--header {text:?}: expected \"Name: value\""))?;
    let name = crate::target::header_name(name.trim())
        .ok_or_else(|| format!("--header {text:?}: {:?} is not a header name", name.trim()))?;
    let value = crate::target::header_value(value.trim())
        .ok_or_else(|| format!("--header {text:?}: the value is not a valid header value"))?;
    Ok((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_as_requests_per_second() {
        assert_eq!(requests_per_second("2000").unwrap(), 2000.0);
        assert_eq!(requests_per_second("2000/s").unwrap(), 2000.0);
        assert_eq!(requests_per_second("100/10ms").unwrap(), 10_000.0);
        assert_eq!(requests_per_second("1.5").unwrap(), 1.5);
        for bad in ["0", "-3", "fast", "2000000", "NaN"] {
            assert!(requests_per_second(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn limited_statuses_are_3xx_to_5xx() {
        assert_eq!(limited_statuses(&[503, 429]).unwrap(), [503, 429]);
        assert_eq!(limited_statuses(&[300, 599]).unwrap(), [300, 599]);
        for bad in [&[200][..], &[299], &[600], &[]] {
            assert!(limited_statuses(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn headers_are_name_colon_value() {
        let (n, v) = header("X-Api-Key: abc:def").unwrap();
        assert_eq!(n.as_str(), "x-api-key");
        assert_eq!(v.to_str().unwrap(), "abc:def");
        assert!(header("no colon").unwrap_err().contains("Name: value"));
        assert!(header("bad name: 1")
            .unwrap_err()
            .contains("not a header name"));
    }
}
