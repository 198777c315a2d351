//! What each flag's text means, as clap value parsers: a bad value is
//! clap's own error (exit 2) naming the flag and what was given, before
//! any command starts. The units are the scenario's (scenario/units.rs);
//! URLs, methods and headers follow the targets' one set of rules
//! (target.rs).

use crate::scenario::units::{self, UnitError};
use crate::target::UrlError;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Uri};
use std::net::SocketAddr;
use std::time::Duration;

/// A flag's value that does not read.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub(crate) enum FlagError {
    #[error(transparent)]
    Unit(#[from] UnitError),
    #[error(transparent)]
    Url(#[from] UrlError),
    #[error("expected requests/s like \"2000\" or \"100/10ms\"")]
    NotRate,
    #[error("{0}: must be above 0 and at most 1000000 requests/s")]
    RateOutOfRange(f64),
    #[error("not an HTTP method")]
    NotMethod,
    #[error("expected \"Name: value\"")]
    NoColon,
    #[error("{0:?} is not a header name")]
    NotHeaderName(String),
    #[error("the value is not a valid header value")]
    NotHeaderValue,
    #[error("expected a status from {from} to {to} (2xx means admitted)")]
    NotLimitedStatus { from: u16, to: u16 },
    #[error("expected a ratio from 0 to 1")]
    NotRatio,
    #[error("expected a share like \"10%\" or \"0.1\", at least 0")]
    NotShare,
    #[error("expected a loopback address like 127.0.0.1:8080, [::1]:0 or a port (put --live after the scenario, or write --live=ADDR)")]
    NotListenAddr,
    #[error("{0}: not a loopback address; the live view listens on 127.0.0.0/8 or ::1 only")]
    NotLoopbackListen(String),
}

/// Where `run --live` listens: `IP:PORT` on loopback (127.0.0.0/8, ::1),
/// `localhost:PORT`, or a bare port on 127.0.0.1 (0: a free one).
pub(crate) fn live_addr(text: &str) -> Result<SocketAddr, FlagError> {
    let text = text.trim();
    let addr = if let Ok(port) = text.parse::<u16>() {
        SocketAddr::from(([127, 0, 0, 1], port))
    } else if let Some(port) = text.strip_prefix("localhost:") {
        let port = port.parse::<u16>().map_err(|_| FlagError::NotListenAddr)?;
        SocketAddr::from(([127, 0, 0, 1], port))
    } else {
        text.parse::<SocketAddr>()
            .map_err(|_| FlagError::NotListenAddr)?
    };
    if !addr.ip().is_loopback() {
        return Err(FlagError::NotLoopbackListen(text.to_string()));
    }
    Ok(addr)
}

/// A duration above zero ("250ms", "10s", "1m").
pub(crate) fn duration(text: &str) -> Result<Duration, FlagError> {
    Ok(units::duration(text)?)
}

/// A duration of zero or more ("0s", "5ms"): a bound that may be none.
pub(crate) fn bound(text: &str) -> Result<Duration, FlagError> {
    match text.trim() {
        "0" => Ok(Duration::ZERO),
        t => match units::duration(t) {
            Err(crate::scenario::units::UnitError::Zero(_)) => Ok(Duration::ZERO),
            other => Ok(other?),
        },
    }
}

/// A duration with the text it was given in (said back in later errors).
pub(crate) fn spelled_duration(text: &str) -> Result<(Duration, String), FlagError> {
    Ok((units::duration(text)?, text.to_string()))
}

/// `2000`, `2000/s` or `100/10ms`, as requests per second.
pub(crate) fn requests_per_second(text: &str) -> Result<f64, FlagError> {
    let rps = match text.trim().parse::<f64>() {
        Ok(r) => r,
        Err(_) => {
            let (count, per) = units::rate(text).map_err(|_| FlagError::NotRate)?;
            count as f64 / per.as_secs_f64()
        }
    };
    if rps.is_finite() && rps > 0.0 && rps <= 1_000_000.0 {
        Ok(rps)
    } else {
        Err(FlagError::RateOutOfRange(rps))
    }
}

/// An `http://` URL on any host: whether it may be sent to (loopback, or
/// `--allow-remote-targets`) is `app/commands/flags.rs`'s to say.
pub(crate) fn http_url(text: &str) -> Result<Uri, FlagError> {
    Ok(crate::target::http_url(text)?)
}

/// An HTTP method, in any case.
pub(crate) fn method(text: &str) -> Result<Method, FlagError> {
    crate::target::method(text).ok_or(FlagError::NotMethod)
}

pub(crate) fn header_name(text: &str) -> Result<HeaderName, FlagError> {
    crate::target::header_name(text).ok_or_else(|| FlagError::NotHeaderName(text.to_string()))
}

/// `Name: value`.
pub(crate) fn header(text: &str) -> Result<(HeaderName, HeaderValue), FlagError> {
    let (name, value) = text.split_once(':').ok_or(FlagError::NoColon)?;
    let name = header_name(name.trim())?;
    let value = crate::target::header_value(value.trim()).ok_or(FlagError::NotHeaderValue)?;
    Ok((name, value))
}

/// A status that may mean "limited": 3xx to 5xx.
pub(crate) fn limited_status(text: &str) -> Result<u16, FlagError> {
    let range = crate::target::LIMITED_STATUSES;
    let wrong = FlagError::NotLimitedStatus {
        from: *range.start(),
        to: *range.end(),
    };
    match text.trim().parse::<u16>() {
        Ok(c) if range.contains(&c) => Ok(c),
        _ => Err(wrong),
    }
}

/// A ratio from 0 to 1.
pub(crate) fn ratio(text: &str) -> Result<f64, FlagError> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(FlagError::NotRatio),
    }
}

/// `10%` or `0.1`: a share, at least 0.
pub(crate) fn share(text: &str) -> Result<f64, FlagError> {
    let t = text.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| FlagError::NotShare)?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(FlagError::NotShare)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_view_listens_on_loopback_only() {
        assert_eq!(live_addr("127.0.0.1:0").unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(live_addr("8080").unwrap().to_string(), "127.0.0.1:8080");
        assert_eq!(live_addr("localhost:9").unwrap().to_string(), "127.0.0.1:9");
        assert_eq!(live_addr("[::1]:7").unwrap().to_string(), "[::1]:7");
        assert_eq!(live_addr("127.3.2.1:5").unwrap().port(), 5);
        for remote in ["10.0.0.1:0", "0.0.0.0:80", "[::]:80", "192.168.1.2:8080"] {
            assert_eq!(
                live_addr(remote),
                Err(FlagError::NotLoopbackListen(remote.to_string())),
                "{remote}"
            );
        }
        for bad in ["s.toml", "localhost", "127.0.0.1", "example.com:80", ""] {
            assert_eq!(live_addr(bad), Err(FlagError::NotListenAddr), "{bad}");
        }
    }

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
        assert_eq!(limited_status("503").unwrap(), 503);
        assert_eq!(limited_status("300").unwrap(), 300);
        assert_eq!(limited_status("599").unwrap(), 599);
        for bad in ["200", "299", "600", "", "x"] {
            let e = limited_status(bad).unwrap_err().to_string();
            assert!(e.contains("2xx means admitted"), "{bad}: {e}");
        }
    }

    #[test]
    fn headers_are_name_colon_value() {
        let (n, v) = header("X-Api-Key: abc:def").unwrap();
        assert_eq!(n.as_str(), "x-api-key");
        assert_eq!(v.to_str().unwrap(), "abc:def");
        assert!(header("no colon")
            .unwrap_err()
            .to_string()
            .contains("Name: value"));
        assert!(header("bad name: 1")
            .unwrap_err()
            .to_string()
            .contains("not a header name"));
    }

    #[test]
    fn ratios_are_0_to_1_and_shares_at_least_0() {
        assert_eq!(ratio("0").unwrap(), 0.0);
        assert_eq!(ratio("1").unwrap(), 1.0);
        for bad in ["-0.1", "1.01", "NaN", "inf", "half"] {
            assert!(ratio(bad).is_err(), "{bad}");
        }
        assert_eq!(share("10%").unwrap(), 0.1);
        assert_eq!(share("0.25").unwrap(), 0.25);
        assert_eq!(share("0").unwrap(), 0.0);
        for bad in ["-1%", "ten", "NaN", ""] {
            assert!(share(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_need_a_unit_and_keep_their_text() {
        assert_eq!(
            spelled_duration("5s").unwrap(),
            (Duration::from_secs(5), "5s".to_string())
        );
        assert!(duration("5").is_err());
        assert!(duration("0s").is_err());
    }
}
