//! Where load may go, what it may look like, and whether it is answered:
//! a target URL must be `http://` or `https://` on this machine (127.0.0.0/8, ::1,
//! localhost) unless the user opted in to others (`--allow-remote-targets`,
//! `[target] allow_remote = true`), which the report then says; methods, header names and values and the statuses that
//! mean "limited" follow one set of rules; before any load each target
//! must accept connections. Used by the scenario's `[target]`, `attack`'s
//! flags, `init` and the preflight alike; each caller words the error for
//! where the value was written.

use crate::error::Error;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Uri};
use std::net::IpAddr;
use std::time::Duration;

/// A target URL that rlbench will not send load to; the writer's mistake
/// (exit 2), worded for wherever the URL was written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum UrlError {
    #[error("{0:?}: not a URL ({1})")]
    NotUrl(String, String),
    #[error("{0:?}: only http:// and https:// targets are supported, not {1}://")]
    NotHttp(String, String),
    #[error("{0:?}: expected a URL like http://127.0.0.1:8080/")]
    NoScheme(String),
    #[error("{0:?}: the URL has no host")]
    NoHost(String),
    #[error(
        "{0:?}: rlbench only sends load to loopback targets (127.0.0.0/8, ::1, localhost), not {1}, \
         unless told to (--allow-remote-targets, [target] allow_remote = true)"
    )]
    NotLoopback(String, String),
}

impl crate::error::Kind for UrlError {
    fn exit(&self) -> crate::error::Exit {
        crate::error::Exit::BadInput
    }
}

/// An `http://` URL whose host is a loopback address (127.0.0.0/8, ::1)
/// or `localhost`: without an opt-in, rlbench only sends load to this machine.
pub(crate) fn loopback_url(text: &str) -> Result<Uri, UrlError> {
    let uri = http_url(text)?;
    if !is_loopback(&uri) {
        let host = uri.host().unwrap_or_default().to_string();
        return Err(UrlError::NotLoopback(text.to_string(), host));
    }
    Ok(uri)
}

/// A target URL as the user allows it: any `http://` host with `remote`,
/// else a loopback one ([`loopback_url`]).
pub(crate) fn target_url(text: &str, remote: bool) -> Result<Uri, UrlError> {
    if remote {
        http_url(text)
    } else {
        loopback_url(text)
    }
}

/// Whether the URL's host is this machine: 127.0.0.0/8, ::1 or `localhost`.
pub(crate) fn is_loopback(uri: &Uri) -> bool {
    let host = uri.host().unwrap_or_default();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// An `http://` or `https://` URL with a host, on any machine; "/" when
/// it has no path.
pub(crate) fn http_url(text: &str) -> Result<Uri, UrlError> {
    let not_url =
        |e: hyper::http::uri::InvalidUri| UrlError::NotUrl(text.to_string(), e.to_string());
    let uri: Uri = text.parse().map_err(not_url)?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => return Err(UrlError::NotHttp(text.to_string(), other.to_string())),
        None => return Err(UrlError::NoScheme(text.to_string())),
    }
    if uri.host().map_or(true, str::is_empty) {
        return Err(UrlError::NoHost(text.to_string()));
    }
    // A URL without a path gets "/", as curl would send.
    if uri.path_and_query().is_none() {
        return format!("{text}/").parse().map_err(not_url);
    }
    Ok(uri)
}

/// An HTTP method, in any case (`get` is GET).
pub(crate) fn method(text: &str) -> Option<Method> {
    Method::from_bytes(text.to_ascii_uppercase().as_bytes()).ok()
}

pub(crate) fn header_name(text: &str) -> Option<HeaderName> {
    HeaderName::from_bytes(text.as_bytes()).ok()
}

pub(crate) fn header_value(text: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(text).ok()
}

/// The statuses that may mean "limited": anything but a 2xx (an admit)
/// and the informational 1xx.
pub(crate) const LIMITED_STATUSES: std::ops::RangeInclusive<u16> = 300..=599;

/// The URL's port, or its scheme's (443 for `https://`, else 80).
pub(crate) fn port(uri: &Uri) -> u16 {
    uri.port_u16()
        .unwrap_or(if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        })
}

/// Fails with one line when a target does not accept connections.
pub(crate) async fn reachable(targets: &[Uri]) -> Result<(), Error> {
    for uri in targets {
        let host = uri.host().unwrap_or_default();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let connect = tokio::net::TcpStream::connect((host, port(uri)));
        match tokio::time::timeout(Duration::from_secs(2), connect).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                return Err(Error::environment(format!("cannot reach {uri}: {e}")));
            }
            Err(_) => {
                return Err(Error::environment(format!(
                    "cannot reach {uri}: no connection within 2 s"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_http_urls_are_targets() {
        for ok in [
            "http://127.0.0.1:8080/api",
            "http://127.1.2.3/",
            "http://[::1]:9000/x?y=1",
            "http://localhost:80/",
            "https://127.0.0.1:8443/",
        ] {
            assert!(loopback_url(ok).is_ok(), "{ok}");
        }
        assert_eq!(port(&loopback_url("https://localhost/").unwrap()), 443);
        assert_eq!(port(&loopback_url("http://localhost/").unwrap()), 80);
        assert_eq!(port(&loopback_url("https://[::1]:9/").unwrap()), 9);
        assert_eq!(
            loopback_url("http://127.0.0.1:8080").unwrap().to_string(),
            "http://127.0.0.1:8080/"
        );
        for (bad, why) in [
            ("http://10.0.0.1/", "loopback"),
            ("http://example.com/", "loopback"),
            ("http://128.0.0.1/", "loopback"),
            ("ftp://127.0.0.1/", "only http:// and https://"),
            ("127.0.0.1:8080", "expected a URL"),
            ("http://", "not a URL"),
        ] {
            let e = loopback_url(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn other_hosts_only_when_allowed_and_never_other_schemes() {
        let remote = "http://192.0.2.1:8080/api";
        let refused = target_url(remote, false).unwrap_err().to_string();
        assert!(refused.contains("only sends load to loopback"), "{refused}");
        assert!(refused.contains("--allow-remote-targets"), "{refused}");
        let allowed = target_url(remote, true).unwrap();
        assert!(!is_loopback(&allowed));
        assert_eq!(allowed.to_string(), remote);
        assert_eq!(
            target_url("http://api.example.com", true)
                .unwrap()
                .to_string(),
            "http://api.example.com/"
        );
        assert!(is_loopback(&target_url("http://[::1]:9/", true).unwrap()));
        assert!(target_url("https://192.0.2.1/", false).is_err());
        for bad in ["ftp://192.0.2.1/", "192.0.2.1:80", "http://"] {
            assert!(target_url(bad, true).is_err(), "{bad}");
        }
    }
}
