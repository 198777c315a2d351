//! How a Redis URL is shown without its secret: the password (in the
//! userinfo, or a query parameter such as the `pass` redis-rs reads for
//! sockets) becomes `***`, and a URL that does not parse as a Redis URL is
//! never echoed at all. Everything that prints, logs or stores a Redis URL goes through
//! here; only the clients that connect ever see the URL whole.

/// What is shown for a URL that does not parse: it may hold a password
/// in a place no parser can find.
pub const UNPARSABLE: &str = "<redis url that does not parse>";

/// What stands for a password.
pub const HIDDEN: &str = "***";

/// `url` with its password (if any) replaced by `***`.
pub fn redact(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return UNPARSABLE.to_string();
    };
    // Whatever a Redis client would not read as host, port, database or
    // TLS flag is a typo at best, and may be a password in the wrong place.
    if !(plain_path(&parsed) && matches!(parsed.fragment(), None | Some("insecure"))) {
        return UNPARSABLE.to_string();
    }
    if parsed.password().is_some() && parsed.set_password(Some(HIDDEN)).is_err() {
        return UNPARSABLE.to_string();
    }
    if parsed.query().is_some() {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(k, v)| {
                let v = if harmless(&k) {
                    v.into()
                } else {
                    HIDDEN.into()
                };
                (k.into_owned(), v)
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}

/// `host:port` of `url` (the default port when it names none): where it
/// points, without credentials; [`UNPARSABLE`] when it does not parse.
pub fn address(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) if plain_path(&parsed) => match parsed.host_str() {
            Some(host) => format!("{host}:{}", parsed.port().unwrap_or(6379)),
            // A socket file.
            None => parsed.path().to_string(),
        },
        _ => UNPARSABLE.to_string(),
    }
}

/// `url` (its scheme, credentials and settings) pointed at `host:port`
/// instead: another node of the same cluster. `None` when either does
/// not parse.
pub fn at(url: &str, host_port: &str) -> Option<String> {
    let mut parsed = url::Url::parse(url).ok()?;
    let (host, port) = host_port.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let host = match host.contains(':') && !host.starts_with('[') {
        true => format!("[{host}]"),
        false => host.to_string(),
    };
    parsed.set_host(Some(&host)).ok()?;
    parsed.set_port(Some(port)).ok()?;
    Some(parsed.to_string())
}

/// A server's path is a database number; a socket's is the socket file.
fn plain_path(url: &url::Url) -> bool {
    let path = url.path();
    if url.has_host() {
        let db = path.trim_start_matches('/');
        path.len() - db.len() <= 1 && db.bytes().all(|b| b.is_ascii_digit())
    } else {
        matches!(url.scheme(), "unix" | "redis+unix" | "valkey+unix") && !path.contains('@')
    }
}

/// Query parameters that are settings, not secrets (anything else is hidden).
fn harmless(key: &str) -> bool {
    matches!(key, "db" | "protocol")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_alone_is_hidden() {
        assert_eq!(
            redact("redis://:pa55w0rd@127.0.0.1:6379"),
            "redis://:***@127.0.0.1:6379"
        );
    }

    #[test]
    fn a_user_stays_and_the_password_is_hidden() {
        assert_eq!(
            redact("redis://alice:s3cret@10.0.0.7:7000/2"),
            "redis://alice:***@10.0.0.7:7000/2"
        );
    }

    #[test]
    fn a_url_without_password_is_unchanged() {
        for url in ["redis://127.0.0.1:6379", "redis://alice@127.0.0.1:6379"] {
            assert_eq!(redact(url), url);
        }
    }

    #[test]
    fn tls_urls_are_hidden_too() {
        assert_eq!(
            redact("rediss://user:p%40ss@redis.example.com:6380"),
            "rediss://user:***@redis.example.com:6380"
        );
    }

    #[test]
    fn a_password_with_an_at_sign_in_it_is_hidden_whole() {
        // The last '@' ends the userinfo: both halves are the password.
        let shown = redact("redis://:p@ss@127.0.0.1:1");
        assert_eq!(shown, "redis://:***@127.0.0.1:1");
    }

    #[test]
    fn a_password_in_the_query_is_hidden() {
        let shown = redact("redis+unix:///run/redis.sock?db=1&pass=s3cret");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("db=1"), "{shown}");
        let shown = redact("redis://127.0.0.1:1/0?protocol=resp3&token=s3cret");
        assert_eq!(shown, "redis://127.0.0.1:1/0?protocol=resp3&token=***");
    }

    #[test]
    fn what_does_not_parse_is_never_echoed_and_never_panics() {
        for bad in [
            "",
            "pa55w0rd",
            "redis://:pa55w0rd@[::1",
            "redis://:pa55w0rd@host:99999",
            "://:pa55w0rd@",
            "redis://:pa55w0rd@exa mple.com",
            "\u{0}:pa55w0rd@\u{7f}",
            "redis:/:pa55w0rd@host",
            "redis::pa55w0rd@host",
            "redis://host/:pa55w0rd@x",
            "redis://host:1#pa55w0rd",
        ] {
            assert_eq!(redact(bad), UNPARSABLE, "{bad:?}");
            assert!(!address(bad).contains("pa55w0rd"), "{bad:?}");
        }
    }

    #[test]
    fn the_address_is_host_and_port_without_credentials() {
        assert_eq!(
            address("redis://:pa55w0rd@127.0.0.1:41234"),
            "127.0.0.1:41234"
        );
        assert_eq!(address("rediss://u:p@example.com"), "example.com:6379");
        assert_eq!(address("redis://[::1]:7000"), "[::1]:7000");
    }

    #[test]
    fn another_node_keeps_the_credentials() {
        let url = "redis://:pa55w0rd@127.0.0.1:30001";
        assert_eq!(
            at(url, "127.0.0.2:30002").as_deref(),
            Some("redis://:pa55w0rd@127.0.0.2:30002")
        );
        assert_eq!(
            at(url, "::1:30003").as_deref(),
            Some("redis://:pa55w0rd@[::1]:30003")
        );
        assert_eq!(at(url, "no port"), None);
        assert_eq!(at("nonsense", "127.0.0.1:1"), None);
    }
}
