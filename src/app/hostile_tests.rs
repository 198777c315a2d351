//! A run folder read back is hostile until read: its JSON files (run.json,
//! an arm's record, summary.json) with any value anywhere replaced — by
//! huge, negative or fractional numbers, strings, nulls, arrays — or a key
//! taken out, are read by `report`, `compare` and `explain` without a
//! panic, and every refusal is one line. A short pass runs with the
//! tests; `PROPTEST_CASES=1000000` is the long one (docs/testing.md).

use proptest::prelude::*;
use serde_json::Value;
use std::path::Path;

/// `PROPTEST_CASES` when set (the long pass), else `short`.
fn cases(short: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(short)
}

/// The kept run folder (tests/fixtures/report-v1).
fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-v1")
}

/// A JSON value of any type, often an odd one for where it lands.
fn json() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON has no NaN", |f| f.is_finite())
            .prop_map(Value::from),
        Just(Value::from(u64::MAX)),
        Just(Value::from(1e300)),
        "[ -~]{0,16}".prop_map(Value::from),
        Just(Value::Array(Vec::new())),
        Just(serde_json::json!({})),
    ]
}

/// `doc` with the `pick`-th node (in a walk of the tree) replaced by
/// `with`, or taken out of its object when `remove`.
fn spoil(doc: &mut Value, pick: usize, with: Value, remove: bool) {
    fn walk(v: &mut Value, left: &mut usize, with: &mut Option<Value>, remove: bool) -> bool {
        let children: Vec<String> = match v {
            Value::Object(m) => m.keys().cloned().collect(),
            Value::Array(a) => (0..a.len()).map(|i| i.to_string()).collect(),
            _ => Vec::new(),
        };
        for k in children {
            if *left == 0 {
                match v {
                    Value::Object(m) if remove => {
                        m.remove(&k);
                    }
                    Value::Object(m) => {
                        m.insert(k, with.take().unwrap_or(Value::Null));
                    }
                    Value::Array(a) => {
                        let i: usize = k.parse().unwrap_or(0);
                        a[i] = with.take().unwrap_or(Value::Null);
                    }
                    _ => {}
                }
                return true;
            }
            *left -= 1;
            let child = match v {
                Value::Object(m) => m.get_mut(&k),
                Value::Array(a) => a.get_mut(k.parse::<usize>().unwrap_or(0)),
                _ => None,
            };
            if let Some(c) = child {
                if walk(c, left, with, remove) {
                    return true;
                }
            }
        }
        false
    }
    let nodes = count(doc).max(1);
    let mut left = pick % nodes;
    walk(doc, &mut left, &mut Some(with), remove);
}

fn count(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.values().map(|c| 1 + count(c)).sum(),
        Value::Array(a) => a.iter().map(|c| 1 + count(c)).sum(),
        _ => 0,
    }
}

/// A copy of the fixture with `file` spoiled.
fn spoiled_folder(file: &str, pick: usize, with: Value, remove: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    copy(&fixture(), &run);
    let path = run.join(file);
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    spoil(&mut doc, pick, with, remove);
    std::fs::write(&path, doc.to_string()).unwrap();
    dir
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn one_line<T, E: std::fmt::Display>(r: Result<T, E>) -> Result<(), TestCaseError> {
    if let Err(e) = r {
        let said = e.to_string();
        prop_assert!(!said.contains('\n'), "{said}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(300)))]

    #[test]
    fn a_spoiled_summary_is_compared_or_refused_in_one_line(
        pick in any::<usize>(), with in json(), remove in any::<bool>(),
    ) {
        let dir = spoiled_folder("summary.json", pick, with, remove);
        one_line(super::commands::compare::read_summary(&dir.path().join("run")))?;
    }

    #[test]
    fn a_spoiled_record_is_read_or_refused_in_one_line(
        pick in any::<usize>(), with in json(), remove in any::<bool>(),
        which in prop::sample::select(vec!["run.json", "events/local.json", "events/lua.json"]),
    ) {
        let dir = spoiled_folder(which, pick, with, remove);
        let run = dir.path().join("run");
        one_line(super::pipeline::journal::read_back(&run))?;
        one_line(crate::store::records::read_arm(&run.join("events/local.json"), "local"))?;
    }
}

proptest! {
    // The whole report judged again per case: fewer.
    #![proptest_config(ProptestConfig::with_cases(cases(40)))]

    #[test]
    fn a_spoiled_folder_is_reported_or_refused_in_one_line(
        pick in any::<usize>(), with in json(), remove in any::<bool>(),
        which in prop::sample::select(vec!["run.json", "events/local.json", "events/lua.json"]),
    ) {
        let dir = spoiled_folder(which, pick, with, remove);
        one_line(super::commands::report::rebuild(&dir.path().join("run")))?;
    }
}

/// The spoiling reaches every node, and what it spoils is refused: the
/// properties above see refusals, not only the kept folder read again.
#[test]
fn spoiling_reaches_every_node_and_a_spoiled_record_is_refused() {
    let text = std::fs::read_to_string(fixture().join("run.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let nodes = count(&doc);
    assert!(nodes > 5, "{nodes}");
    for pick in 0..nodes {
        let mut spoiled = doc.clone();
        spoil(&mut spoiled, pick, Value::from("x"), false);
        assert_ne!(spoiled, doc, "node {pick} of {nodes}");
    }
    // run.json's arms as a string: refused, in one line.
    let arms = (0..nodes)
        .find(|&pick| {
            let mut d = doc.clone();
            spoil(&mut d, pick, Value::from("x"), false);
            d["arms"] == "x"
        })
        .expect("the arms are a node");
    let dir = spoiled_folder("run.json", arms, Value::from("x"), false);
    let Err(e) = super::pipeline::journal::read_back(&dir.path().join("run")) else {
        panic!("run.json with its arms a string was read");
    };
    assert!(!e.to_string().contains('\n'), "{e}");
}
