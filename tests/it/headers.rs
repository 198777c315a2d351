//! Every rate-limit header convention our own replicas can send, read back
//! and checked on a real run: `ratelimit_headers = "x_ratelimit"` and
//! `"both"` on a correct replica score no header finding, and on three
//! replicas counting alone the X-RateLimit-Remaining values alone prove
//! the contradiction the IETF fields prove by default.

use crate::common;

use common::{arm, run_scenario, summary, text, wait_no_replicas};
use std::time::Duration;

const SCENARIO: &str = r#"
name = "headers"
duration = "2s"
seed = 5

[policy]
algorithm = "sliding_log"
limit = 5
window = "1s"

[cluster]
replicas = 3

[load]
rate = 300
keys = 3

[checks]
retry_after_probes = 1

[[arms]]
name = "x"
mode = "local"
replicas = 1
ratelimit_headers = "x_ratelimit"
[arms.expect]
max_definite_violations = 0
max_header_findings = 0

[[arms]]
name = "both"
mode = "local"
replicas = 1
ratelimit_headers = "both"
[arms.expect]
max_definite_violations = 0
max_header_findings = 0

[[arms]]
name = "x-local"
mode = "local"
ratelimit_headers = "x_ratelimit"
[arms.expect]
min_remaining_contradictions = 1
"#;

#[test]
fn our_replicas_send_each_convention_and_a_correct_one_has_no_header_finding() {
    let dir = tempfile::tempdir().unwrap();
    let (out, pid) = run_scenario(dir.path(), SCENARIO, &[], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(wait_no_replicas(pid, Duration::from_secs(2)).is_empty());
    let s = summary(&dir.path().join("out"));

    let x = arm(&s, "x");
    let sent = x["requests"]["sent"].as_u64().unwrap();
    assert_eq!(sent, 600);
    let h = &x["headers"];
    assert_eq!(h["conventions"]["x_ratelimit"]["present"], sent, "{h}");
    assert_eq!(h["conventions"]["x_ratelimit"]["malformed"], 0, "{h}");
    assert!(h["conventions"].get("ratelimit").is_none(), "{h}");
    // X-RateLimit-Limit says the quota; it has no window to say.
    assert_eq!(
        h["advertised_limit"],
        serde_json::json!({ "5": sent }),
        "{h}"
    );
    assert_eq!(h["advertised_window_s"], serde_json::json!({}), "{h}");
    assert!(h["remaining"]["checked"].as_u64().unwrap() > 0, "{h}");
    assert_eq!(h["remaining"]["contradicted"], 0, "{h}");
    assert_eq!(h["findings"], serde_json::json!([]), "{h}");
    let probes = h["retry_after_probes"].as_array().unwrap();
    assert_eq!(probes.len(), 1, "{h}");
    assert_eq!(probes[0]["result"], "admitted", "{h}");

    let h = &arm(&s, "both")["headers"];
    for convention in ["ratelimit", "x_ratelimit"] {
        assert_eq!(h["conventions"][convention]["present"], sent, "{h}");
        assert_eq!(h["conventions"][convention]["malformed"], 0, "{h}");
    }
    assert_eq!(
        h["advertised_window_s"],
        serde_json::json!({ "1": sent }),
        "{h}"
    );
    assert_eq!(h["findings"], serde_json::json!([]), "{h}");

    // Each replica's own X-RateLimit-Remaining, read and held against the
    // trace: the fake global limit shows in this convention too.
    let h = &arm(&s, "x-local")["headers"];
    assert!(h["conventions"].get("ratelimit").is_none(), "{h}");
    assert!(h["remaining"]["contradicted"].as_u64().unwrap() > 0, "{h}");
}
