//! `[policy]`: each algorithm's parameters, inline policies and the
//! ASP.NET Core preset.

use super::super::super::parse;
use super::{error_of, GOOD};
use reference_api::{Policy, Rate};

#[test]
fn parameters_must_fit_the_algorithm() {
    let e = error_of(&GOOD.replace("window = \"2s\"", "window = \"2s\"\nburst = 3"));
    assert!(
        e.contains("\"burst\" is not a parameter of sliding_log"),
        "{e}"
    );
    let e = error_of(&GOOD.replace("limit = 10\n", ""));
    assert!(e.contains("sliding_log needs \"limit\""), "{e}");
    let e = error_of(&GOOD.replace("sliding_log", "leaky"));
    assert!(
        e.starts_with("s.toml:7:13: unknown algorithm \"leaky\""),
        "{e}"
    );
}

#[test]
fn every_algorithm_parses_its_parameters() {
    let with = |policy: &str| {
        let start = GOOD.find("[policy]").unwrap();
        let end = GOOD.find("[cluster]").unwrap();
        let text = format!("{}[policy]\n{policy}\n\n{}", &GOOD[..start], &GOOD[end..]);
        parse("s.toml", &text).map(|s| s.policy)
    };
    assert_eq!(
        with("algorithm = \"token_bucket\"\ncapacity = 5\nrefill = \"10/1s\"").unwrap(),
        Policy::TokenBucket {
            capacity: 5,
            refill: Rate {
                count: 10,
                per_us: 1_000_000
            }
        }
    );
    assert_eq!(
        with("algorithm = \"gcra\"\nrate = \"100/m\"\nburst = 2").unwrap(),
        Policy::Gcra {
            rate: Rate {
                count: 100,
                per_us: 60_000_000
            },
            burst: 2
        }
    );
    assert_eq!(
        with("algorithm = \"sliding_window\"\nlimit = 4\nwindow = \"1s\"\nsegments = 4").unwrap(),
        Policy::SlidingWindow {
            limit: 4,
            window_us: 1_000_000,
            segments: 4
        }
    );
    assert!(
        with("algorithm = \"sliding_window\"\nlimit = 4\nwindow = \"1s\"\nsegments = 7")
            .unwrap_err()
            .to_string()
            .contains("equal whole-microsecond segments")
    );
    assert!(with("algorithm = \"gcra\"\nrate = \"fast\"\nburst = 2").is_err());
}

#[test]
fn an_inline_policy_is_a_policy_table_on_one_line() {
    use crate::scenario::inline_policy;
    assert_eq!(
        inline_policy(r#"algorithm = "sliding_log", limit = 10, window = "1s""#)
            .unwrap()
            .0,
        Policy::SlidingLog {
            limit: 10,
            window_us: 1_000_000
        }
    );
    assert_eq!(
        inline_policy(r#"algorithm = "token_bucket", capacity = 5, refill = "10/1s""#)
            .unwrap()
            .0,
        Policy::TokenBucket {
            capacity: 5,
            refill: Rate {
                count: 10,
                per_us: 1_000_000
            }
        }
    );
    for (bad, says) in [
        (r#"limit = 10, window = "1s""#, "name the algorithm"),
        (
            r#"algorithm = "sliding_log", limit = 10"#,
            "needs \"window\"",
        ),
        (
            r#"algorithm = "sliding_log", limit = 10, window = "1s", burst = 2"#,
            "\"burst\"",
        ),
        (r#"algorithm = "sliding_log", limt = 10"#, "limt"),
        ("algorithm = sliding_log", "--policy"),
    ] {
        let e = inline_policy(bad).unwrap_err().to_string();
        assert!(e.starts_with("--policy: "), "{e}");
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn the_aspnetcore_preset_states_each_limiter_with_its_heartbeat() {
    use crate::scenario::{inline_policy, PolicyTiming};
    let (p, t) = inline_policy(
        r#"preset = "aspnetcore", limiter = "sliding_window", permit_limit = 10, window = "2s", segments_per_window = 4"#,
    )
    .unwrap();
    assert_eq!(
        p,
        Policy::SlidingWindow {
            limit: 10,
            window_us: 2_000_000,
            segments: 4
        }
    );
    assert_eq!(
        t,
        PolicyTiming {
            lateness_us: 100_000,
            chunked_refill: false,
            one_clock: true,
            count_rejected: false,
            ..PolicyTiming::default()
        }
    );
    let (p, t) = inline_policy(
        r#"preset = "aspnetcore", limiter = "token_bucket", token_limit = 10, tokens_per_period = 5, replenishment_period = "1s", replenish_lateness = "20ms""#,
    )
    .unwrap();
    assert_eq!(
        p,
        Policy::TokenBucket {
            capacity: 10,
            refill: Rate {
                count: 5,
                per_us: 1_000_000
            }
        }
    );
    assert_eq!(
        t,
        // Filled continuously at each heartbeat, banking while full: up
        // to its token limit more at once (released .NET).
        PolicyTiming {
            lateness_us: 20_000,
            chunked_refill: false,
            banked_tokens: 10,
            one_clock: true,
            count_rejected: false,
            ..PolicyTiming::default()
        }
    );
    let (_, t) = inline_policy(
        r#"algorithm = "fixed_window", limit = 3, window = "1s", replenish_lateness = "5ms""#,
    )
    .unwrap();
    assert_eq!((t.lateness_us, t.one_clock), (5_000, false));
    let (_, t) = inline_policy(
        r#"algorithm = "sliding_counter", limit = 10, window = "1s", count_rejected = true"#,
    )
    .unwrap();
    assert!(t.count_rejected);
    for bucket in [
        r#"algorithm = "token_bucket", capacity = 10, refill = "5/1s", count_rejected = true"#,
        r#"preset = "nginx_limit_req", rate = "10r/s", burst = 5, count_rejected = true"#,
    ] {
        let e = inline_policy(bucket).unwrap_err().to_string();
        assert!(e.contains("count_rejected is for window policies"), "{e}");
    }
    for (bad, says) in [
        (
            r#"preset = "aspnetcore", permit_limit = 10, window = "1s""#,
            "needs \"limiter\"",
        ),
        (
            r#"preset = "aspnetcore", limiter = "fixed_window", permit_limit = 10"#,
            "needs \"window\"",
        ),
        (
            r#"preset = "aspnetcore", limiter = "fixed_window", permit_limit = 10, window = "1s", token_limit = 3"#,
            "\"token_limit\" is not a parameter",
        ),
        (
            r#"preset = "aspnetcore", limiter = "concurrency", permit_limit = 10"#,
            "unknown ASP.NET Core limiter",
        ),
    ] {
        let e = inline_policy(bad).unwrap_err().to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

/// `refill_every`: a token bucket's refill in whole chunks (Stripe's and
/// Spring Cloud Gateway's Redis buckets count whole seconds; Envoy's
/// local limit refills from a timer), judged as `count` tokens per chunk.
#[test]
fn a_bucket_refilling_in_chunks_is_declared_in_its_own_terms() {
    use crate::scenario::inline_policy;
    let (p, t) = inline_policy(
        "algorithm = \"token_bucket\", capacity = 10, refill = \"5/s\", \
         refill_every = \"1s\", refill_aligned = \"epoch\"",
    )
    .unwrap();
    assert_eq!(
        p,
        Policy::TokenBucket {
            capacity: 10,
            refill: Rate {
                count: 5,
                per_us: 1_000_000
            }
        }
    );
    assert!(t.chunked_refill && t.chunks_on_epoch && t.lateness_us == 0);
    // 10 per second in chunks of 200 ms: 2 tokens a chunk.
    let (p, t) = inline_policy(
        "algorithm = \"token_bucket\", capacity = 4, refill = \"10/s\", refill_every = \"200ms\"",
    )
    .unwrap();
    assert!(matches!(
        p,
        Policy::TokenBucket {
            refill: Rate {
                count: 2,
                per_us: 200_000
            },
            ..
        }
    ));
    assert!(t.chunked_refill && !t.chunks_on_epoch, "timer by default");
    let e = inline_policy(
        "algorithm = \"token_bucket\", capacity = 4, refill = \"1/s\", refill_every = \"500ms\"",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("adds 0.500 tokens a chunk"), "{e}");
    let e = inline_policy(
        "algorithm = \"token_bucket\", capacity = 4, refill = \"1/s\", refill_aligned = \"epoch\"",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("refill_aligned needs refill_every"), "{e}");
    let e = inline_policy(
        "algorithm = \"token_bucket\", capacity = 4, refill = \"1/s\", refill_every = \"1s\", \
         refill_aligned = \"noon\"",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("unknown refill_aligned \"noon\""), "{e}");
    let e = inline_policy("algorithm = \"gcra\", rate = \"1/s\", burst = 2, refill_every = \"1s\"")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"refill_every\" is not a parameter of gcra"),
        "{e}"
    );
    // The reference API refills continuously: not a chunked bucket.
    let e = error_of(&GOOD.replace(
        "algorithm = \"sliding_log\"\nlimit = 10\nwindow = \"2s\"",
        "algorithm = \"token_bucket\"\ncapacity = 10\nrefill = \"5/s\"\nrefill_every = \"1s\"",
    ));
    assert!(e.contains("the reference API refills continuously"), "{e}");
}

#[test]
fn a_clock_resolution_is_a_duration_of_at_least_a_microsecond() {
    use crate::scenario::inline_policy;
    let (_, t) = inline_policy(
        "algorithm = \"sliding_log\", limit = 3, window = \"10s\", clock_resolution = \"1s\"",
    )
    .unwrap();
    assert_eq!(t.clock_resolution_us, Some(1_000_000));
    let e = inline_policy(
        "algorithm = \"sliding_log\", limit = 3, window = \"10s\", clock_resolution = \"0s\"",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("\"0s\": must be longer than zero"), "{e}");
}

/// `clock_skew` sits beside `clock_resolution` wherever it is accepted:
/// 0 is a statement (one clock), a negative or unknown value is one line
/// at its place.
#[test]
fn a_clock_skew_is_a_duration_and_zero_is_allowed() {
    use crate::scenario::inline_policy;
    let policy = |skew: &str| {
        inline_policy(&format!(
            "algorithm = \"token_bucket\", capacity = 10, refill = \"5/s\", \
             clock_resolution = \"1s\", clock_skew = \"{skew}\""
        ))
    };
    let (_, t) = policy("1ms").unwrap();
    assert_eq!(
        (t.clock_resolution_us, t.clock_skew_us),
        (Some(1_000_000), Some(1_000))
    );
    assert_eq!(policy("0s").unwrap().1.clock_skew_us, Some(0));
    for bad in ["-1ms", "soon"] {
        let e = policy(bad).unwrap_err().to_string();
        assert!(e.starts_with("--policy: "), "{e}");
        assert!(e.contains(bad) && !e.contains('\n'), "{e}");
    }
    // In a scenario file: at its line, and an arm's policy takes it over.
    let text = GOOD.replace(
        "window = \"2s\"\n",
        "window = \"2s\"\nclock_skew = \"-5ms\"\n",
    );
    let e = error_of(&text);
    assert!(e.starts_with("s.toml:10:14: clock_skew \"-5ms\""), "{e}");
    let text = GOOD.replace(
        "window = \"2s\"\n",
        "window = \"2s\"\nclock_skew = \"10ms\"\n",
    );
    let s = parse("s.toml", &text).unwrap();
    assert!(s
        .arms
        .iter()
        .all(|a| a.timing.clock_skew_us == Some(10_000)));
}
