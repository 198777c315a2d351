//! The scenario reader never panics, whatever the file: generated texts
//! (any characters; the real scenarios with a value or a line replaced
//! by another of any type — huge and negative numbers, NaN, durations of
//! any unit and size, strings, arrays, tables) are read, and every
//! rejection is one line at a place inside the file. A short pass runs
//! with the tests; `PROPTEST_CASES=1000000` is the long one
//! (docs/testing.md).

use super::every::every;
use proptest::prelude::*;

/// `PROPTEST_CASES` when set (the long pass), else `short`.
fn cases(short: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(short)
}

/// The real scenarios, as users start from them.
const SCENARIOS: &[&str] = &[
    include_str!("../../scenarios/three-replicas.toml"),
    include_str!("../../scenarios/spoofing.toml"),
    include_str!("../../scenarios/cluster.toml"),
    include_str!("../../scenarios/distributed.toml"),
    include_str!("../../scenarios/stripe-bucket.toml"),
    include_str!("../../scenarios/stripe-app-clocks.toml"),
    include_str!("../../scenarios/external-api.toml"),
    include_str!("../../scenarios/redis-outage.toml"),
    include_str!("../../scenarios/batching.toml"),
];

/// The keys scenarios have, to put where they do not belong.
const KEYS: &[&str] = &[
    "name",
    "duration",
    "seed",
    "algorithm",
    "preset",
    "limit",
    "window",
    "segments",
    "capacity",
    "refill",
    "refill_every",
    "rate",
    "burst",
    "keys",
    "timeout",
    "mode",
    "replicas",
    "urls",
    "path",
    "key",
    "principals",
    "spoof",
    "at",
    "lasts",
    "kind",
    "max_in_flight",
    "stages",
    "topology",
    "masters",
    "clock_skew",
    "count_rejected",
];

/// A TOML value of any type, often an odd one.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| if f.is_finite() {
            format!("{f:e}")
        } else {
            "nan".into()
        }),
        Just("inf".to_string()),
        Just("-inf".to_string()),
        (
            any::<u64>(),
            prop::sample::select(vec!["", "us", "ms", "s", "m", "h", "d", "r/s"])
        )
            .prop_map(|(n, u)| format!("\"{n}{u}\"")),
        (any::<u32>(), any::<u32>()).prop_map(|(a, b)| format!("\"{a}/{b}s\"")),
        "[^'\\n\\r]{0,24}".prop_map(|s| format!("'{s}'")),
        any::<bool>().prop_map(|b| b.to_string()),
        prop::collection::vec(any::<i32>(), 0..4).prop_map(|v| format!("{v:?}")),
        (prop::sample::select(KEYS), any::<i64>()).prop_map(|(k, n)| format!("{{ {k} = {n} }}")),
    ]
}

/// A real scenario with one line's value replaced, or a line of any key
/// and value put in, or a table header.
fn spoiled() -> impl Strategy<Value = String> {
    (
        prop::sample::select(SCENARIOS),
        any::<prop::sample::Index>(),
        prop::sample::select(KEYS),
        value(),
        0u8..3,
    )
        .prop_map(|(text, at, key, value, how)| {
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            let i = at.index(lines.len());
            match how {
                0 => match lines[i].split_once('=') {
                    Some((k, _)) => lines[i] = format!("{k}= {value}"),
                    None => lines.insert(i, format!("{key} = {value}")),
                },
                1 => lines.insert(i, format!("{key} = {value}")),
                _ => lines.insert(i, format!("[{key}]")),
            }
            lines.join("\n")
        })
}

/// Every error of `text` is one line at a place inside it.
fn read_soundly(text: &str) -> Result<(), TestCaseError> {
    let lines = text.lines().count() + 1;
    if let Err(errors) = every("s.toml", text) {
        prop_assert!(!errors.is_empty());
        for e in errors {
            let said = e.to_string();
            prop_assert!(!said.contains('\n'), "{said}");
            prop_assert!(e.line <= lines, "{said} (of {lines} lines)");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(2_000)))]

    #[test]
    fn any_text_is_read_or_refused_in_one_line(text in "\\PC{0,300}") {
        read_soundly(&text)?;
    }

    #[test]
    fn a_real_scenario_spoiled_anywhere_is_read_or_refused_in_one_line(text in spoiled()) {
        read_soundly(&text)?;
    }
}
