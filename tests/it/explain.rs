//! `rlbench explain` and the witnesses in summary.json and report.html, on
//! a real run: the fake global's violations come with the admits that prove
//! them, the correct arm has nothing to prove.

use crate::common;

use common::{rlbench, run_small, text};
use serde_json::Value;

#[test]
fn every_violation_of_the_fake_global_has_a_witness_the_correct_arm_none() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_small(dir.path(), "3s");
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let arms = s["arms"].as_array().unwrap();
    let local = arms.iter().find(|a| a["name"] == "local").unwrap();
    let single = arms.iter().find(|a| a["name"] == "single").unwrap();
    assert!(single["correctness"].get("witnesses").is_none());
    let c = &local["correctness"];
    assert!(c["definite_violations"].as_u64().unwrap() > 0);
    let ws = c["witnesses"].as_array().unwrap();
    assert!(!ws.is_empty() && ws.len() <= 5, "{ws:?}");
    for w in ws {
        assert_eq!(w["kind"], "violation");
        let rule = w["rule"].as_str().unwrap();
        assert!(rule.contains("admits, all decided between"), "{rule}");
        assert!(rule.contains("the policy allows 5"), "{rule}");
        let reqs = w["requests"].as_array().unwrap();
        // More than the limit, all admitted, all of the witness's key.
        assert!(reqs.len() > 5, "{w}");
        assert!(reqs.iter().all(|r| r["outcome"] == "admitted"));
        // Their decisions fit inside less than the window: 1 s.
        let from = reqs
            .iter()
            .map(|r| r["sent_s"].as_f64().unwrap())
            .fold(f64::MAX, f64::min);
        let to = reqs
            .iter()
            .map(|r| r["done_s"].as_f64().unwrap())
            .fold(0.0, f64::max);
        assert!(to - from < 1.0, "{w}");
    }
    // The same seqs are in the trace (exported as CSV: arm,seq,key,...),
    // for the witness's key.
    let export = rlbench(
        &["export", out.to_str().unwrap(), "--arm", "local"],
        dir.path(),
    );
    assert!(export.status.success(), "{}", text(&export.stderr));
    let events = text(&export.stdout);
    let w = &ws[0];
    for r in w["requests"].as_array().unwrap() {
        let seq = r["seq"].as_u64().unwrap();
        let line = events
            .lines()
            .find(|l| l.split(',').nth(1) == Some(&seq.to_string()))
            .unwrap_or_else(|| panic!("seq {seq} not in the events"));
        assert!(line.starts_with("local,"), "{line}");
        assert_eq!(line.split(',').nth(2), w["key"].as_str(), "{line}");
        assert!(line.contains(",admitted,"), "{line}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("href=\"#witnesses-1\""),
        "the verdict links its proof"
    );
    assert!(html.contains("id=\"witnesses-1\""));

    let key = w["key"].as_str().unwrap();
    let shown = rlbench(
        &[
            "explain",
            out.to_str().unwrap(),
            "--arm",
            "local",
            "--key",
            key,
        ],
        dir.path(),
    );
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    let stdout = text(&shown.stdout);
    assert!(stdout.starts_with("arm local: "), "{stdout}");
    assert!(stdout.contains(&format!("violation: {key}: ")), "{stdout}");
    assert!(stdout.contains("admitted  |"), "a timeline row: {stdout}");
    // Each replica alone keeps the policy: the proof's admits come from
    // several, and explain says what that means.
    assert!(stdout.contains("    admits from replicas "), "{stdout}");
    assert!(stdout.contains("each replica counts alone"), "{stdout}");
    assert!(!stdout.contains("arm single"), "{stdout}");
    let correct = rlbench(
        &["explain", out.to_str().unwrap(), "--arm", "single"],
        dir.path(),
    );
    assert!(text(&correct.stdout).contains("nothing to prove"));
    let wrong = rlbench(
        &["explain", out.to_str().unwrap(), "--arm", "nope"],
        dir.path(),
    );
    assert_eq!(wrong.status.code(), Some(2), "{}", text(&wrong.stderr));
    // A key the run never sent is an error naming the keys it has, not
    // "nothing to prove"; a key of the correct arm with nothing to prove
    // is not an error.
    let unknown = rlbench(
        &["explain", out.to_str().unwrap(), "--key", "nope"],
        dir.path(),
    );
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown.stderr));
    let said = text(&unknown.stderr);
    assert!(said.contains("--key \"nope\": arm "), "{said}");
    assert!(
        said.contains("has no such key (its keys: customer-"),
        "{said}"
    );
    assert!(!text(&unknown.stdout).contains("nothing to prove"));
    let quiet = rlbench(
        &[
            "explain",
            out.to_str().unwrap(),
            "--arm",
            "single",
            "--key",
            key,
        ],
        dir.path(),
    );
    assert_eq!(quiet.status.code(), Some(0), "{}", text(&quiet.stderr));
    assert!(text(&quiet.stdout).contains("nothing to prove"));
}
