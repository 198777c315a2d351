//! Every convention, well-formed and not, and the boundaries between.

use super::*;
use std::time::Duration;

fn at(pairs: &[(&str, &str)], now: SystemTime) -> Option<Advertised> {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            hyper::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    parse_at(&h, now)
}

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_780_000_000)
}

fn of(pairs: &[(&str, &str)]) -> Advertised {
    at(pairs, now()).expect("headers present")
}

#[test]
fn no_rate_limit_headers_is_none() {
    assert_eq!(at(&[("content-type", "text/plain")], now()), None);
}

#[test]
fn the_current_draft_reads_policy_and_state() {
    let a = of(&[
        ("RateLimit-Policy", "\"default\";q=10;w=60"),
        ("RateLimit", "\"default\";r=3;t=12"),
    ]);
    assert_eq!(
        (a.limit, a.window_s, a.remaining, a.reset_ms),
        (Some(10), Some(60), Some(3), Some(12_000))
    );
    assert!(a.has(Convention::Ietf) && !a.is_malformed(Convention::Ietf));
}

#[test]
fn the_state_names_which_policy_applies() {
    let a = of(&[
        (
            "RateLimit-Policy",
            "\"burst\";q=100;w=60, \"day\";q=1000;w=86400",
        ),
        ("RateLimit", "\"day\";r=50;t=30"),
    ]);
    assert_eq!(
        (a.limit, a.window_s, a.remaining),
        (Some(1000), Some(86400), Some(50))
    );
}

#[test]
fn the_older_dictionary_form_reads_too() {
    let a = of(&[("RateLimit", "limit=10, remaining=4, reset=7")]);
    assert_eq!(
        (a.limit, a.remaining, a.reset_ms),
        (Some(10), Some(4), Some(7_000))
    );
    assert!(!a.is_malformed(Convention::Ietf));
}

#[test]
fn broken_structured_fields_are_malformed_not_errors() {
    for (name, value) in [
        ("RateLimit", "r=3;;"),
        ("RateLimit", "\"default\";t=12"),
        ("RateLimit-Policy", "\"default\";w=60"),
        ("RateLimit-Policy", "q=\"ten\""),
        ("RateLimit", "\"default\";r=-1"),
    ] {
        let a = of(&[(name, value)]);
        assert!(a.is_malformed(Convention::Ietf), "{name}: {value}");
        assert_eq!(a.remaining, None, "{name}: {value}");
    }
}

#[test]
fn draft_03_reads_the_first_quota_and_its_window() {
    let a = of(&[
        ("RateLimit-Limit", "10, 10;w=1, 1000;w=3600"),
        ("RateLimit-Remaining", "9"),
        ("RateLimit-Reset", "1"),
    ]);
    assert_eq!(
        (a.limit, a.window_s, a.remaining, a.reset_ms),
        (Some(10), None, Some(9), Some(1_000))
    );
    let a = of(&[
        ("RateLimit-Limit", "10;w=1"),
        ("RateLimit-Remaining", "nine"),
    ]);
    assert_eq!((a.limit, a.window_s), (Some(10), Some(1)));
    assert!(a.is_malformed(Convention::Draft03));
}

#[test]
fn x_ratelimit_reset_is_a_delta_or_a_unix_time() {
    let delta = of(&[("X-RateLimit-Limit", "60"), ("X-RateLimit-Reset", "30")]);
    assert_eq!(delta.reset_ms, Some(30_000));
    // One second below the threshold is still a delta (a very long one).
    let long = of(&[("X-RateLimit-Reset", "999999999")]);
    assert_eq!(long.reset_ms, Some(999_999_999_000));
    let unix = of(&[("X-RateLimit-Reset", "1780000042")]);
    assert_eq!(unix.reset_ms, Some(42_000));
    let unix_ms = of(&[("X-RateLimit-Reset", "1780000001500")]);
    assert_eq!(unix_ms.reset_ms, Some(1_500));
    // A Unix time already past means "now".
    let past = of(&[("X-RateLimit-Reset", "1779999000")]);
    assert_eq!(past.reset_ms, Some(0));
    let bad = of(&[("X-RateLimit-Remaining", "-2")]);
    assert!(bad.is_malformed(Convention::XRateLimit));
}

#[test]
fn the_ietf_fields_win_over_the_older_ones() {
    let a = of(&[
        ("RateLimit", "\"default\";r=3;t=12"),
        ("X-RateLimit-Remaining", "99"),
        ("X-RateLimit-Limit", "100"),
    ]);
    assert_eq!((a.remaining, a.limit), (Some(3), Some(100)));
    assert!(a.has(Convention::XRateLimit) && a.has(Convention::Ietf));
}

#[test]
fn retry_after_is_seconds_or_an_http_date() {
    assert_eq!(of(&[("Retry-After", "12")]).retry_after_ms, Some(12_000));
    let date = httpdate::fmt_http_date(now() + Duration::from_secs(5));
    assert_eq!(of(&[("Retry-After", &date)]).retry_after_ms, Some(5_000));
    let past = httpdate::fmt_http_date(now() - Duration::from_secs(5));
    assert_eq!(of(&[("Retry-After", &past)]).retry_after_ms, Some(0));
    for bad in ["soon", "-1", "1.5", ""] {
        let a = of(&[("Retry-After", bad)]);
        assert!(a.is_malformed(Convention::RetryAfter), "{bad:?}");
        assert_eq!(a.retry_after_ms, None);
    }
}

#[test]
fn the_reference_api_headers_parse() {
    use reference_api::headers as h;
    let p = reference_api::Policy::SlidingLog {
        limit: 10,
        window_us: 2_000_000,
    };
    let a = of(&[
        ("RateLimit-Policy", &h::ratelimit_policy(&p)),
        ("RateLimit", "\"default\";r=0;t=2"),
        ("Retry-After", "2"),
    ]);
    assert_eq!(a.limit, Some(10));
    assert_eq!(a.window_s, Some(2));
    assert_eq!(a.retry_after_ms, Some(2_000));
    assert_eq!(a.malformed, 0);
}
