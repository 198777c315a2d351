//! `[load]`: schedules, key distributions, fanouts and the closed loop.

use super::super::super::parse;
use super::GOOD;
use crate::load::pick::{Fanout, KeyDistribution};
use crate::load::schedule::{Shape, Stage};
use std::time::Duration;

#[test]
fn schedules_take_their_own_keys() {
    let with = |load: &str| {
        let text = GOOD.replace("rate = 200\nkeys = 4\n", load);
        parse("s.toml", &text).map(|s| s.load.shape)
    };
    assert_eq!(
        with("schedule = \"poisson\"\nrate = 50\n").unwrap(),
        Shape::Poisson { rate: 50.0 }
    );
    assert_eq!(
        with("schedule = \"stages\"\n[[load.stages]]\ntarget = 100\nduration = \"2s\"\n").unwrap(),
        Shape::Stages {
            from: 0.0,
            stages: vec![Stage {
                target: 100.0,
                over: Duration::from_secs(2)
            }]
        }
    );
    match with("schedule = \"bursts\"\nburst = 30\n").unwrap() {
        Shape::Bursts {
            per_edge,
            spread,
            window,
        } => {
            assert_eq!((per_edge, spread), (30, Duration::from_millis(20)));
            assert_eq!(window, Duration::from_secs(2), "the policy's window");
        }
        other => panic!("{other:?}"),
    }
    let e = with("schedule = \"bursts\"\nrate = 5\nburst = 3\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"rate\" does not apply to the bursts schedule"),
        "{e}"
    );
    let e = with("schedule = \"poisson\"\n").unwrap_err().to_string();
    assert!(e.contains("needs \"rate\""), "{e}");
    let e = with("schedule = \"jittery\"\nrate = 5\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown schedule \"jittery\""), "{e}");
    let e = with("rate = 5\nburst = 3\n").unwrap_err().to_string();
    assert!(
        e.contains("\"burst\" does not apply to the constant schedule"),
        "{e}"
    );
}

#[test]
fn key_distributions_and_fanouts_parse_with_their_parameters() {
    let with = |extra: &str| {
        let text = GOOD.replace("keys = 4\n", &format!("keys = 4\n{extra}\n"));
        parse("s.toml", &text).map(|s| (s.load.key_distribution, s.arms[1].fanout))
    };
    assert_eq!(
        with("").unwrap(),
        (KeyDistribution::Uniform, Fanout::RoundRobin)
    );
    assert_eq!(
        with("key_distribution = \"zipf\"\nzipf_s = 1.2").unwrap().0,
        KeyDistribution::Zipf { s: 1.2 }
    );
    assert_eq!(
        with("key_distribution = \"hot\"").unwrap().0,
        KeyDistribution::Hot { share: 0.5 }
    );
    assert_eq!(
        with("key_distribution = \"sweep\"\nsweep_block = 11")
            .unwrap()
            .0,
        KeyDistribution::Sweep { block: 11 }
    );
    let e = with("sweep_block = 3").unwrap_err().to_string();
    assert!(
        e.contains("\"sweep_block\" does not apply to key_distribution = \"uniform\""),
        "{e}"
    );
    let e = with("key_distribution = \"sweep\"\nsweep_block = 0")
        .unwrap_err()
        .to_string();
    assert!(e.contains("sweep_block"), "{e}");
    assert_eq!(with("fanout = \"sticky\"").unwrap().1, Fanout::Sticky);
    assert_eq!(with("fanout = \"single\"").unwrap().1, Fanout::Single);
    let e = with("key_distribution = \"hot\"\nhot_share = 1.5")
        .unwrap_err()
        .to_string();
    assert!(e.contains("hot_share must be between 0 and 1"), "{e}");
    let e = with("zipf_s = 2.0").unwrap_err().to_string();
    assert!(
        e.contains("\"zipf_s\" does not apply to key_distribution = \"uniform\""),
        "{e}"
    );
    let e = with("key_distribution = \"pareto\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown key_distribution \"pareto\""), "{e}");
    let e = with("fanout = \"nearest\"").unwrap_err().to_string();
    assert!(
        e.contains("expected round_robin, random, sticky or single"),
        "{e}"
    );
}

#[test]
fn closed_loop_takes_workers_and_a_think_time() {
    let with = |load: &str| {
        let text = GOOD.replace("rate = 200\nkeys = 4\n", load);
        parse("s.toml", &text).map(|s| s.load.shape)
    };
    assert_eq!(
        with("schedule = \"closed\"\nconcurrency = 8\nthink_time = \"5ms\"\n").unwrap(),
        Shape::Closed {
            concurrency: 8,
            think: Duration::from_millis(5)
        }
    );
    assert_eq!(
        with("schedule = \"closed\"\nconcurrency = 1\n").unwrap(),
        Shape::Closed {
            concurrency: 1,
            think: Duration::ZERO
        }
    );
    let e = with("schedule = \"closed\"\n").unwrap_err().to_string();
    assert!(e.contains("needs \"concurrency\""), "{e}");
    let e = with("schedule = \"closed\"\nconcurrency = 2\nrate = 5\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"rate\" does not apply to the closed schedule"),
        "{e}"
    );
    let e = with("rate = 5\nconcurrency = 2\n").unwrap_err().to_string();
    assert!(
        e.contains("\"concurrency\" does not apply to the constant schedule"),
        "{e}"
    );
}

#[test]
fn retrying_callers_take_their_table_with_defaults_and_bounds() {
    use crate::load::retry::{Backoff, Retry};
    let with = |retry: &str| {
        let text = GOOD.replace("rate = 200\nkeys = 4\n", &format!("rate = 200\n{retry}\n"));
        parse("s.toml", &text).map(|s| s.load.retry)
    };
    assert_eq!(with("").unwrap(), None);
    assert_eq!(with("retry = {}").unwrap(), Some(Retry::default()));
    assert_eq!(
        with(
            "retry = { on = [429, 503], respect_retry_after = false, backoff = \"constant\", \
             base = \"250ms\", cap = \"1s\", max = 2 }"
        )
        .unwrap(),
        Some(Retry {
            on: vec![429, 503],
            respect_retry_after: false,
            backoff: Backoff::Constant,
            base: Duration::from_millis(250),
            cap: Duration::from_secs(1),
            max: 2,
        })
    );
    for (bad, says) in [
        (
            "retry = { max = 0 }",
            "retry.max must be between 1 and 10, got 0",
        ),
        (
            "retry = { max = 11 }",
            "retry.max must be between 1 and 10, got 11",
        ),
        ("retry = { on = [] }", "retry.on needs at least one status"),
        (
            "retry = { on = [200] }",
            "a retried status (2xx means admitted) must be between 300 and 599, got 200",
        ),
        (
            "retry = { backoff = \"linear\" }",
            "unknown retry backoff \"linear\", expected exponential or constant",
        ),
        ("retry = { base = \"soon\" }", "expected a duration like"),
        (
            "retry = { base = \"2s\", cap = \"1s\" }",
            "retry.cap must not be shorter than retry.base",
        ),
        ("retry = { tries = 3 }", "unknown field `tries`"),
    ] {
        let e = with(bad).unwrap_err().to_string();
        assert!(e.starts_with("s.toml:") && e.contains(says), "{bad}: {e}");
    }
}

/// An arm may send bursts of its own (`schedule = "bursts"` on the arm)
/// while the others keep `[load]`'s steady rate: its window is its own
/// policy's; `burst` is required, `burst_spread` defaults to 20 ms; any
/// other schedule on an arm, or `burst` without it, is refused where
/// written.
#[test]
fn an_arm_may_burst_while_the_others_keep_the_steady_load() {
    let with = |arm: &str| {
        let text = GOOD.replace(
            "name = \"local\"\nmode = \"local\"\n",
            &format!("name = \"local\"\nmode = \"local\"\n{arm}"),
        );
        parse("s.toml", &text)
    };
    let s = with(
        "schedule = \"bursts\"\nburst = 40\nburst_spread = \"5ms\"\n[arms.policy]\nwindow = \"1s\"\n",
    )
    .unwrap();
    assert_eq!(s.load.shape, Shape::Constant { rate: 200.0 });
    assert_eq!(s.arms[0].schedule, None, "the other arm keeps [load]'s");
    assert_eq!(
        s.arms[1].schedule,
        Some(Shape::Bursts {
            per_edge: 40,
            spread: Duration::from_millis(5),
            window: Duration::from_secs(1),
        })
    );
    let s = with("schedule = \"bursts\"\nburst = 40\n").unwrap();
    assert_eq!(
        s.arms[1].schedule,
        Some(Shape::Bursts {
            per_edge: 40,
            spread: Duration::from_millis(20),
            window: Duration::from_secs(2),
        })
    );
    let e = with("schedule = \"bursts\"\n").unwrap_err().to_string();
    assert!(e.contains("needs \"burst\""), "{e}");
    assert!(e.starts_with("s.toml:"), "placed: {e}");
    let e = with("schedule = \"poisson\"\n").unwrap_err().to_string();
    assert!(e.contains("\"poisson\" is [load]'s to set"), "{e}");
    let e = with("burst = 3\n").unwrap_err().to_string();
    assert!(e.contains("burst goes with the arm's schedule"), "{e}");
    let e = with("schedule = \"bursts\"\nburst = 0\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("burst"), "{e}");
}

/// An arm may send its own constant rate over keys of its own (many keys
/// at once, where a limiter that forgets keys shows) while the others
/// keep `[load]`'s; `rate` needs `schedule = "constant"`; source
/// addresses are reserved for the most keys of any arm, and an arm's keys
/// are refused where they cannot be: beside principals, or where no key
/// is sent.
#[test]
fn an_arm_may_send_its_own_rate_over_keys_of_its_own() {
    let with = |load: &str, arm: &str| {
        let text = GOOD
            .replace("keys = 4\n", &format!("keys = 4\n{load}"))
            .replace(
                "name = \"local\"\nmode = \"local\"\n",
                &format!("name = \"local\"\nmode = \"local\"\n{arm}"),
            );
        parse("s.toml", &text)
    };
    let s = with("", "schedule = \"constant\"\nrate = 1500\nkeys = 300\n").unwrap();
    assert_eq!(s.arms[1].schedule, Some(Shape::Constant { rate: 1500.0 }));
    assert_eq!((s.keys_of(&s.arms[0]), s.keys_of(&s.arms[1])), (4, 300));
    // Its own key distribution too: a sweep of many keys beside the
    // uniform steady arm.
    let s = with(
        "",
        "keys = 300\nkey_distribution = \"sweep\"\nsweep_block = 11\n",
    )
    .unwrap();
    assert_eq!(
        (s.arms[0].key_distribution, s.arms[1].key_distribution),
        (None, Some(KeyDistribution::Sweep { block: 11 }))
    );
    let e = with("", "sweep_block = 11\n").unwrap_err().to_string();
    assert!(
        e.contains("sweep_block goes with the arm's own key_distribution"),
        "{e}"
    );
    let s = with("", "keys = 2\n").unwrap();
    assert_eq!(
        (s.arms[1].schedule.clone(), s.keys_of(&s.arms[1])),
        (None, 2)
    );
    for (load, arm, says) in [
        (
            "",
            "rate = 5\n",
            "rate goes with the arm's schedule = \"constant\"",
        ),
        ("", "schedule = \"constant\"\n", "needs \"rate\""),
        (
            "",
            "schedule = \"constant\"\nrate = 0\n",
            "rate must be above 0",
        ),
        (
            "",
            "schedule = \"constant\"\nrate = 5\nburst = 3\n",
            "burst goes with the arm's schedule = \"bursts\"",
        ),
        (
            "",
            "schedule = \"bursts\"\nburst = 3\nrate = 5\n",
            "rate goes with the arm's schedule = \"constant\"",
        ),
        ("", "keys = 0\n", "keys"),
    ] {
        let e = with(load, arm).unwrap_err().to_string();
        assert!(e.starts_with("s.toml:") && e.contains(says), "{arm}: {e}");
    }
    let external = |target: &str, load: &str, arm: &str| {
        parse(
            "s.toml",
            &format!(
                "name = \"x\"\nduration = \"1s\"\n[target]\nkind = \"external\"\n\
                 urls = [\"http://127.0.0.1:9/x\"]\n{target}[policy]\nalgorithm = \"sliding_log\"\n\
                 limit = 10\nwindow = \"2s\"\n[load]\nrate = 10\n{load}\
                 [[arms]]\nname = \"many\"\n{arm}"
            ),
        )
    };
    // Source addresses are reserved for the most keys of any arm.
    let sources = |cidr: &str| format!("keys = 4\nkey = {{ source_ip = \"{cidr}\" }}\n");
    let s = external("", &sources("127.0.0.0/24"), "keys = 5\n").unwrap();
    assert_eq!(
        s.load.key,
        crate::scenario::spec::KeySpec::SourceIp {
            first: "127.0.0.1".parse().unwrap(),
            count: 5
        }
    );
    for (target, load, says) in [
        (
            "",
            sources("127.0.0.0/29").as_str(),
            "7 keys need 7 addresses",
        ),
        ("", "keys = 1\n", "sends no key"),
        (
            "key_header = \"X-Key\"\n",
            "principals = 3\nspoof = [\"rotate_key\"]\nforged_keys = 10\n",
            "the keys are the principals",
        ),
    ] {
        let e = external(target, load, "keys = 7\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("s.toml:") && e.contains(says), "{load}: {e}");
    }
    // An arm too fast for a connection per request keeps its own.
    let fresh = "keep_alive = false\nkey_header = \"X-Key\"\n";
    let s = external(fresh, "", "keep_alive = true\n").unwrap();
    assert_eq!(s.arms[0].keep_alive, Some(true));
    assert!(!s.external.unwrap().template.keep_alive);
    let e = external("http = \"2\"\n", "", "keep_alive = false\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("HTTP/2 shares one by design"), "{e}");
    let e = with("", "keep_alive = true\n").unwrap_err().to_string();
    assert!(
        e.contains("keep_alive belongs to arms of a [target]"),
        "{e}"
    );
}
