//! What comes from outside into a trace never panics its readers: the
//! rate-limit headers of any answer (the IETF `RateLimit` and
//! `RateLimit-Policy` structured fields, `X-RateLimit-*`, `Retry-After`
//! as seconds or a date, at any moment of the clock), and a trace file
//! read back (any bytes; a real trace cut, flipped or spliced), whose
//! every error is one line. A short pass runs with the tests;
//! `PROPTEST_CASES=1000000` is the long one (docs/testing.md).

use super::advertised::parse_at;
use super::integrity::Check;
use super::write::EventWriter;
use super::{Event, Outcome};
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use proptest::prelude::*;
use std::time::{Duration, SystemTime};

/// `PROPTEST_CASES` when set (the long pass), else `short`.
fn cases(short: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(short)
}

const NAMES: &[&str] = &[
    "ratelimit",
    "ratelimit-policy",
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "retry-after",
];

/// A header value of the shapes limiters write, often broken: structured
/// fields with odd parameters, numbers of any size, HTTP dates, bytes.
fn header_value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string().into_bytes()),
        any::<i64>().prop_map(|n| n.to_string().into_bytes()),
        (any::<u64>(), any::<u64>(), any::<i64>()).prop_map(|(q, w, r)| {
            format!("\"default\";q={q};w={w}, \"x\";r={r};t={w}").into_bytes()
        }),
        (any::<u64>(), any::<u64>())
            .prop_map(|(l, w)| format!("{l}, {l};w={w};comment=\"x\"").into_bytes()),
        (0u32..400_000, 0u32..60).prop_map(|(d, s)| {
            let t = SystemTime::UNIX_EPOCH + Duration::from_secs(d as u64 * 86_400 + s as u64);
            httpdate::fmt_http_date(t).into_bytes()
        }),
        "[ -~]{0,60}".prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 0..60),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(5_000)))]

    #[test]
    fn any_rate_limit_headers_at_any_moment_are_read_or_left(
        headers in prop::collection::vec((prop::sample::select(NAMES), header_value()), 0..6),
        now_s in prop_oneof![Just(0u64), any::<u32>().prop_map(u64::from), Just(u64::MAX / 4)],
    ) {
        let mut map = HeaderMap::new();
        for (name, value) in &headers {
            if let Ok(v) = HeaderValue::from_bytes(value) {
                map.append(HeaderName::from_static(name), v);
            }
        }
        let now = SystemTime::UNIX_EPOCH
            .checked_add(Duration::from_secs(now_s))
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let _ = parse_at(&map, now);
    }
}

/// A small sealed trace as rlbench writes it, and its check.
fn real_trace(dir: &std::path::Path) -> (Vec<u8>, Check) {
    let path = dir.join("real.trace");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let writer = EventWriter::create(&path).unwrap();
    let tx = writer.sender();
    let events: Vec<Event> = (0..40u64)
        .map(|seq| Event {
            seq,
            key: format!("customer-{}", seq % 3),
            replica: (seq % 2) as u32,
            intended_us: seq * 1_000,
            sent_us: seq * 1_000 + 5,
            done_us: seq * 1_000 + 700,
            status: if seq % 4 == 0 { 429 } else { 200 },
            outcome: if seq % 4 == 0 {
                Outcome::Rejected
            } else {
                Outcome::Admitted
            },
            error: None,
            advertised: None,
            retry_of: None,
            agent: 0,
        })
        .collect();
    rt.block_on(tx.send(events)).unwrap();
    drop(tx);
    let seal = writer.finish().unwrap();
    let check = Check {
        seal: Some(seal),
        unfinished: false,
    };
    (std::fs::read(&path).unwrap(), check)
}

/// Reads `bytes` as a trace every way rlbench does: each error one line.
fn read_soundly(dir: &std::path::Path, bytes: &[u8], check: Check) -> Result<(), TestCaseError> {
    let path = dir.join("t.trace");
    std::fs::write(&path, bytes).unwrap();
    if let Ok(events) = super::read::read(&path, check) {
        for e in events {
            if let Err(e) = e {
                prop_assert!(!e.to_string().contains('\n'), "{e}");
                break;
            }
        }
    }
    match super::read::records(&path, check) {
        Ok(records) => {
            for r in records {
                if let Err(e) = r {
                    prop_assert!(!e.to_string().contains('\n'), "{e}");
                    break;
                }
            }
        }
        Err(e) => prop_assert!(!e.to_string().contains('\n'), "{e}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(1_000)))]

    #[test]
    fn any_bytes_as_a_trace_are_read_or_refused_in_one_line(
        bytes in prop::collection::vec(any::<u8>(), 0..2_000),
        sealed in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (_, real) = real_trace(dir.path());
        let check = if sealed { real } else { Check { seal: None, unfinished: true } };
        read_soundly(dir.path(), &bytes, check)?;
    }

    #[test]
    fn a_real_trace_cut_flipped_or_spliced_is_read_or_refused_in_one_line(
        cut in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        splice in prop::collection::vec(any::<u8>(), 0..64),
        how in 0u8..3,
        trust_seal in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (mut bytes, check) = real_trace(dir.path());
        match how {
            0 => bytes.truncate(cut.index(bytes.len() + 1)),
            1 => {
                for (at, b) in &flips {
                    let i = at.index(bytes.len());
                    bytes[i] ^= b | 1;
                }
            }
            _ => {
                let i = cut.index(bytes.len() + 1);
                bytes.splice(i..i, splice.iter().copied());
            }
        }
        let check = if trust_seal { check } else { Check { seal: None, unfinished: true } };
        read_soundly(dir.path(), &bytes, check)?;
    }
}
