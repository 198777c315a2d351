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
    // Its X-RateLimit-* say the same, Reset read as delta seconds.
    let d = reference_api::limiter::Decision {
        allowed: true,
        remaining: 7,
        reset_us: 1_200_000,
        retry_after_us: 0,
    };
    let [(rn, rv), (tn, tv)] = h::x_ratelimit(&d);
    let a = of(&[
        ("X-RateLimit-Limit", &h::x_ratelimit_limit(&p)),
        (rn, &rv),
        (tn, &tv),
    ]);
    assert_eq!(
        (a.limit, a.remaining, a.reset_ms),
        (Some(10), Some(7), Some(2_000))
    );
    assert!(a.has(Convention::XRateLimit) && !a.has(Convention::Ietf));
    assert_eq!(a.malformed, 0);
}

// draft-ietf-httpapi-ratelimit-headers-10: quota units, partition keys,
// several policies, and malformed fields ignored whole.

/// Limit, window, remaining and reset, as read.
fn figures(a: &Advertised) -> (Option<u64>, Option<u64>, Option<u64>, Option<u64>) {
    (a.limit, a.window_s, a.remaining, a.reset_ms)
}

#[test]
fn a_draft_10_pair_with_unit_and_partition_key_parses() {
    let a = of(&[
        (
            "RateLimit-Policy",
            "\"peruser\";q=100;qu=\"requests\";w=60;pk=:cHsdsRa894==:",
        ),
        ("RateLimit", "\"peruser\";r=40;t=12;pk=:cHsdsRa894==:"),
    ]);
    assert_eq!(figures(&a), (Some(100), Some(60), Some(40), Some(12_000)));
    assert!(a.has(Convention::Ietf) && !a.is_malformed(Convention::Ietf));
}

#[test]
fn unknown_parameters_are_comments_and_token_names_are_read() {
    // The draft's own sliding example repeats q on RateLimit; vendors add theirs.
    let a = of(&[
        (
            "RateLimit-Policy",
            "\"sliding\";q=12;w=1;acme-burst=5;note=\"hi\"",
        ),
        ("RateLimit", "\"sliding\";q=12;r=6;t=1;acme-x=?1"),
    ]);
    assert_eq!(figures(&a), (Some(12), Some(1), Some(6), Some(1_000)));
    assert_eq!(a.malformed, 0);
    // Draft-08 and -09 named policies by Token.
    let a = of(&[
        ("RateLimit-Policy", "default;q=10;w=60"),
        ("RateLimit", "default;r=3"),
    ]);
    assert_eq!(figures(&a), (Some(10), Some(60), Some(3), None));
    assert_eq!(a.malformed, 0);
}

#[test]
fn of_several_policies_the_one_in_requests_the_limit_names_is_read() {
    let a = of(&[
        (
            "RateLimit-Policy",
            "\"bytes\";q=65535;qu=\"content-bytes\";w=10, \"perhr\";q=100;w=3600",
        ),
        ("RateLimit", "\"bytes\";r=3;t=1, \"perhr\";r=40;t=5"),
    ]);
    // The byte quota's r=3 is the lowest but counts bytes, not requests.
    assert_eq!(figures(&a), (Some(100), Some(3600), Some(40), Some(5_000)));
    assert_eq!(a.malformed, 0);
}

#[test]
fn the_request_policy_with_the_least_remaining_binds() {
    let a = of(&[
        (
            "RateLimit-Policy",
            "\"day\";q=1000;w=86400, \"burst\";q=10;w=1",
        ),
        ("RateLimit", "\"day\";r=900;t=100, \"burst\";r=2;t=1"),
    ]);
    assert_eq!(figures(&a), (Some(10), Some(1), Some(2), Some(1_000)));
    // Without RateLimit, the first policy in requests gives the quota.
    let a = of(&[(
        "RateLimit-Policy",
        "\"conc\";q=5;qu=\"concurrent-requests\", \"day\";q=1000;w=86400",
    )]);
    assert_eq!(figures(&a), (Some(1000), Some(86400), None, None));
}

#[test]
fn quotas_in_other_units_are_not_held_against_requests() {
    for unit in ["content-bytes", "concurrent-requests", "acme-credits"] {
        let a = of(&[
            (
                "RateLimit-Policy",
                &format!("\"other\";q=300000000;qu=\"{unit}\";w=60"),
            ),
            ("RateLimit", "\"other\";r=299999000;t=60"),
        ]);
        assert_eq!(figures(&a), (None, None, None, None), "{unit}");
        assert!(a.has(Convention::Ietf), "{unit}");
        assert!(
            !a.is_malformed(Convention::Ietf),
            "a unit is not an error: {unit}"
        );
    }
}

#[test]
fn a_limit_naming_no_advertised_policy_still_says_remaining() {
    let a = of(&[
        ("RateLimit-Policy", "\"default\";q=10;w=60"),
        ("RateLimit", "\"other\";r=3;t=2"),
    ]);
    assert_eq!(figures(&a), (None, None, Some(3), Some(2_000)));
    assert_eq!(a.malformed, 0);
}

#[test]
fn a_list_split_over_several_lines_is_one_field() {
    let a = of(&[
        ("RateLimit-Policy", "\"day\";q=1000;w=86400"),
        ("RateLimit-Policy", "\"burst\";q=10;w=1"),
        ("RateLimit", "\"day\";r=900"),
        ("RateLimit", "\"burst\";r=4;t=1"),
    ]);
    assert_eq!(figures(&a), (Some(10), Some(1), Some(4), Some(1_000)));
    assert_eq!(a.malformed, 0);
}

#[test]
fn a_malformed_policy_field_is_ignored_whole() {
    for bad in [
        "\"default\";w=60",                  // q missing
        "\"default\";q=1.5;w=60",            // q not an Integer
        "\"default\";q=\"10\"",              // q a String
        "\"default\";q=-1",                  // q negative
        "\"default\";q=10;w=0",              // a window is never zero
        "\"default\";q=10;w=1.5",            // nor fractional
        "\"default\";q=10;qu=requests",      // qu is a String, not a Token
        "\"default\";q=10;pk=\"alice\"",     // pk is a Byte Sequence
        "\"default\";q=10, \"day\";w=86400", // one bad member spoils the field
        "(\"default\");q=10",                // an inner list is no policy
        "\"default\";q=99999999999999999",   // beyond an SF Integer
        "1000;w=3600",                       // the older Item form
        "",
    ] {
        let a = of(&[
            ("RateLimit-Policy", bad),
            ("RateLimit", "\"default\";r=3;t=2"),
        ]);
        assert!(a.is_malformed(Convention::Ietf), "{bad:?}");
        // Nothing of it is used; the well-formed RateLimit still is.
        assert_eq!(figures(&a), (None, None, Some(3), Some(2_000)), "{bad:?}");
    }
}

#[test]
fn a_malformed_limit_field_is_ignored_whole() {
    for bad in [
        "\"default\";t=2",          // r missing
        "\"default\";r=2.0",        // r not an Integer
        "\"default\";r=3;t=-1",     // t negative
        "\"default\";r=3;pk=1",     // pk not a Byte Sequence
        "\"default\";r=3, \"day\"", // one bad member spoils the field
        "?1;r=3",                   // a Boolean names no policy
        "remaining=3, limit=ten",   // nor is it the older dictionary
    ] {
        let a = of(&[
            ("RateLimit-Policy", "\"default\";q=10;w=60"),
            ("RateLimit", bad),
        ]);
        assert!(a.is_malformed(Convention::Ietf), "{bad:?}");
        assert_eq!(figures(&a), (Some(10), Some(60), None, None), "{bad:?}");
    }
}

#[test]
fn any_bytes_at_all_are_ignored_without_a_panic() {
    let junk: [&[u8]; 6] = [
        b"\xff\xfe\x00",
        b"\"unterminated",
        b":not base64!:",
        b"\"a\";q=1;q=2;q=\xc3\xa9",
        b";;;,,,",
        b"\"default\";r=18446744073709551616",
    ];
    for v in junk {
        for name in [
            "ratelimit",
            "ratelimit-policy",
            "x-ratelimit-reset",
            "retry-after",
        ] {
            let a = parse_with(|n| (n == name).then_some(v).into_iter())
                .expect("the header is present");
            assert_ne!(a.malformed, 0, "{name}: {v:?}");
            assert_eq!(figures(&a), (None, None, None, None), "{name}: {v:?}");
        }
    }
}
