//! `rlbench report --shard i/n` and `--shards n`: a run's keys judged in
//! shards, on as many machines, add up to exactly the report of judging
//! them at once — summary.json byte for byte, the same gate — on a run
//! with violations and their witnesses, false rejects across a fault's
//! phases, and a leased arm judged against its bound too; and so does a
//! trace judged from spill traces when it does not fit in memory.

use crate::common::{self, rlbench, text};
use std::path::Path;

/// Two arms on two replicas against a real redis-server: `local` counts
/// alone (violations, witnesses), `leased` leases admits through Redis
/// (a fixed window, so the lease bound is judged too), and Redis is
/// paused mid-run (phases before, during and after; fail_closed rejects
/// are false rejects).
const SCENARIO: &str = r#"
name = "shards"
duration = "3s"
seed = 11

[redis]
timeout = "50ms"

[policy]
algorithm = "fixed_window"
limit = 10
window = "1s"

[cluster]
replicas = 2

[load]
rate = 300
keys = 23
fanout = "round_robin"

[[faults]]
at = "1s"
for = "700ms"
action = "redis_down"
variant = "pause"

[[arms]]
name = "local"
mode = "local"

[[arms]]
name = "leased"
mode = "redis_batched"
lease = 3
lease_ttl = "1s"
on_redis_error = "fail_closed"
"#;

fn report(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["report"];
    all.extend_from_slice(args);
    rlbench(&all, dir)
}

#[test]
fn shards_add_up_to_exactly_the_whole_report() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (out, _) = common::run_scenario(d, SCENARIO, &[], &[]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    let run = d.join("out");
    let run_s = run.to_str().unwrap();
    let whole = report(d, &[run_s]);
    let whole_summary = std::fs::read(run.join("summary.json")).unwrap();
    // What this run must show for the comparison to mean something.
    let s: serde_json::Value = serde_json::from_slice(&whole_summary).unwrap();
    let local = common::arm(&s, "local");
    assert!(
        local["correctness"]["definite_violations"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(!local["correctness"]["witnesses"]
        .as_array()
        .unwrap()
        .is_empty());
    let leased = common::arm(&s, "leased");
    assert!(leased["lease_bound"].is_object(), "{leased}");
    assert_eq!(leased["phases"].as_array().unwrap().len(), 3, "{leased}");
    for n in [1u32, 2, 5] {
        for i in 0..n {
            let shard = format!("{i}/{n}");
            let o = report(d, &[run_s, "--shard", &shard]);
            assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
            let said = text(&o.stdout);
            assert!(
                said.contains(&format!("shard {shard} of local: ")),
                "{said}"
            );
        }
        let o = report(d, &[run_s, "--shards", &n.to_string()]);
        assert_eq!(o.status.code(), whole.status.code(), "{}", text(&o.stderr));
        let got = std::fs::read(run.join("summary.json")).unwrap();
        assert!(
            got == whole_summary,
            "{n} shards differ:\n{}\n---\n{}",
            text(&whole_summary),
            text(&got)
        );
        assert_eq!(text(&o.stdout), text(&whole.stdout), "{n} shards");
    }
    // Too little memory for the trace: split to spill traces on disk and
    // judged a shard at a time, to the same bytes; nothing left behind.
    let spilled = std::process::Command::new(common::bin())
        .args(["report", run_s])
        .env("RLBENCH_JUDGE_MEMORY", "20000")
        .env("RLBENCH_LOG", "info")
        .current_dir(d)
        .output()
        .unwrap();
    assert_eq!(spilled.status.code(), whole.status.code());
    let err = text(&spilled.stderr);
    assert!(
        err.contains("judged in ") && err.contains("shards spilled to disk"),
        "{err}"
    );
    assert!(
        std::fs::read(run.join("summary.json")).unwrap() == whole_summary,
        "spilled: {}",
        text(&std::fs::read(run.join("summary.json")).unwrap())
    );
    let left: Vec<String> = std::fs::read_dir(run.join("events"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("spill"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // `explain` of one key, spilled or not: the same proofs.
    let explain = |memory: Option<&str>| {
        let mut cmd = std::process::Command::new(common::bin());
        cmd.args(["explain", run_s, "--arm", "local", "--key", "customer-0003"])
            .current_dir(d);
        if let Some(m) = memory {
            cmd.env("RLBENCH_JUDGE_MEMORY", m);
        }
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    let whole_explained = explain(None);
    assert!(
        whole_explained.contains("customer-0003"),
        "{whole_explained}"
    );
    assert_eq!(explain(Some("20000")), whole_explained);
    // Every key in exactly one shard: the shards' keys add up to all.
    let keys: u64 = (0..5)
        .map(|i| {
            let f: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(run.join(format!("events/local.shard-{i}-of-5.json")))
                    .unwrap(),
            )
            .unwrap();
            f["judgments"]["keys"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(keys, 23);
}

#[test]
fn a_missing_or_foreign_shard_is_refused_naming_it() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-v1");
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    common::copy_dir(&fixture, &run);
    let run_s = run.to_str().unwrap();
    // Bad shards: one line, exit 2, before anything is judged.
    for bad in ["3/3", "x", "1/0"] {
        let o = report(dir.path(), &[run_s, "--shard", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let err = text(&o.stderr);
        assert!(err.contains("expected I/N"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let o = report(dir.path(), &[run_s, "--shard", "0/2"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // Shard 1/2 was never judged.
    let o = report(dir.path(), &[run_s, "--shards", "2"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("shard 1/2 of arm local was not judged") && err.contains("--shard 1/2"),
        "{err}"
    );
    // A shard of another trace (its seal differs) does not add.
    let o = report(dir.path(), &[run_s, "--shard", "1/2"]);
    assert_eq!(o.status.code(), Some(0));
    let path = run.join("events/local.shard-1-of-2.json");
    let mut f: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    f["trace"] = serde_json::json!({ "events": 1, "crc32": 1 });
    std::fs::write(&path, serde_json::to_string(&f).unwrap()).unwrap();
    let o = report(dir.path(), &[run_s, "--shards", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("judged another trace"),
        "{}",
        text(&o.stderr)
    );
}
