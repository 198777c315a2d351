//! Retrying callers (`[load] retry`) end to end through real replicas: each
//! retry is a request of its own linked to its first attempt, waits as
//! told, is judged like any other, and the summary shows what callers got.

use crate::common;

use common::{rlbench, run_single, summary, text};
use serde_json::Value;

#[test]
fn retrying_callers_wait_as_told_and_every_attempt_is_judged() {
    let dir = tempfile::tempdir().unwrap();
    // 5 per second per key, 300 requests/s: most first tries are limited,
    // and callers retry up to twice, waiting what Retry-After says.
    let scenario = common::small_scenario("3s", "").replace(
        "rate = 300\nkeys = 3\n",
        "rate = 300\nkeys = 3\nretry = { max = 2 }\n",
    );
    let out = run_single(dir.path(), &scenario);
    let s = summary(&dir.path().join("out"));
    let arm = &s["arms"][0];
    let g = &arm["goodput"];
    let (requests, retries) = (
        g["requests"].as_u64().unwrap(),
        g["retries"].as_u64().unwrap(),
    );
    let sent = arm["requests"]["sent"].as_u64().unwrap();
    assert_eq!(requests + retries, sent, "{g}");
    assert!((850..=950).contains(&requests), "300/s for 3s: {g}");
    assert!(retries > 0, "{g}");
    // The schedule's rate, not inflated by the retries.
    let achieved = arm["rate"]["achieved_rps"].as_f64().unwrap();
    assert!((285.0..=315.0).contains(&achieved), "{achieved}");
    let first = g["first_try_admitted"].as_u64().unwrap();
    let eventually = g["eventually_admitted"].as_u64().unwrap();
    assert!(first <= eventually, "{g}");
    assert_eq!(eventually, arm["requests"]["admitted"].as_u64().unwrap());
    assert_eq!(g["gave_up"].as_u64().unwrap(), requests - eventually);
    assert!(g["retry"]
        .as_str()
        .unwrap()
        .starts_with("up to 2 retries on 429"));
    // A correct limiter stays correct with every attempt judged.
    assert_eq!(arm["correctness"]["definite_violations"], 0);
    assert_eq!(arm["correctness"]["false_rejects"], 0);
    assert!(
        text(&out.stdout).contains("goodput of single: "),
        "{}",
        text(&out.stdout)
    );
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(html.contains("Goodput of retrying callers"));
    // Each retry names its first attempt, and left no earlier than the
    // Retry-After of the answer before it said.
    let checked = retries_follow_their_first(dir.path(), sent, |_, before| {
        before["retry_after_ms"].as_u64().unwrap() * 1_000
    });
    assert!(checked > 0);
}

/// Reads the run folder `dir/out` back through `rlbench export`: every seq
/// once, and each retry after a limited answer of its first attempt's key,
/// no sooner than `wait_us(attempt, answer before it)` after that answer.
/// How many retries were checked.
fn retries_follow_their_first(
    dir: &std::path::Path,
    sent: u64,
    wait_us: impl Fn(u64, &Value) -> u64,
) -> usize {
    let export = rlbench(&["export", "out", "--format", "jsonl"], dir);
    assert_eq!(export.status.code(), Some(0), "{}", text(&export.stderr));
    let events: Vec<Value> = text(&export.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len() as u64, sent);
    let by_seq: std::collections::HashMap<u64, &Value> = events
        .iter()
        .map(|e| (e["seq"].as_u64().unwrap(), e))
        .collect();
    assert_eq!(by_seq.len(), events.len(), "every seq once");
    // Each chain's attempts by number.
    let mut chains: std::collections::HashMap<u64, Vec<&Value>> = Default::default();
    for e in &events {
        let first = e["retry_of"].as_u64().unwrap_or(e["seq"].as_u64().unwrap());
        chains.entry(first).or_default().push(e);
    }
    let mut checked = 0;
    for (first, mut chain) in chains {
        chain.sort_by_key(|e| e["attempt"].as_u64().unwrap());
        assert_eq!(chain[0]["seq"].as_u64(), Some(first));
        assert_eq!(chain[0]["attempt"], 1);
        for (i, pair) in chain.windows(2).enumerate() {
            let (before, e) = (pair[0], pair[1]);
            assert_eq!(e["attempt"].as_u64(), Some(i as u64 + 2), "{e}");
            assert_eq!(before["key"], e["key"]);
            assert_eq!(
                before["outcome"], "rejected",
                "only limited answers are retried"
            );
            let attempt = e["attempt"].as_u64().unwrap();
            let waited = e["sent_us"].as_u64().unwrap() - before["done_us"].as_u64().unwrap();
            assert!(waited >= wait_us(attempt, before), "{before} then {e}");
            checked += 1;
        }
    }
    checked
}

#[test]
fn closed_loop_workers_retry_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::small_scenario("1s", "")
        .replace(
            "rate = 300",
            "schedule = \"closed\"\nconcurrency = 2\nretry = { respect_retry_after = false, \
             backoff = \"constant\", base = \"20ms\", max = 3 }",
        )
        .replace("max_over_admission_ratio = 1.05\n", "");
    run_single(dir.path(), &scenario);
    let s = summary(&dir.path().join("out"));
    let arm = &s["arms"][0];
    let g = &arm["goodput"];
    let sent = arm["requests"]["sent"].as_u64().unwrap();
    assert_eq!(
        g["requests"].as_u64().unwrap() + g["retries"].as_u64().unwrap(),
        sent,
        "{g}"
    );
    assert_eq!(arm["correctness"]["definite_violations"], 0);
    assert_eq!(arm["correctness"]["false_rejects"], 0);
    let checked = retries_follow_their_first(dir.path(), sent, |_, _| 20_000);
    assert!(checked > 10, "{checked} retries");
}
