//! The house plan, checked from the code's own imports: every `crate::…`
//! and `super::…` path in `src/`, and every path through a file's own
//! child module (`mod x;` … `x::f`), is an arrow from its file to the file
//! it names. The test fails on any import circle between files, on any import
//! from a module to one listed above it in `LAYERS`, on a module missing
//! from `LAYERS`, and on `report/` importing anything but the stored
//! figures (it only renders). The other crates of the workspace
//! (reference-api, crates/verify, crates/policy) are held to the rule
//! against circles; Cargo keeps the crates themselves from importing in a
//! circle or upward. `cargo test --test it house_plan` prints the arrows
//! it found when it fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules of `src/`, from the top down: each may import
/// only modules listed after it. The data flows scenario → stack → load →
/// events → analyze → gate → report; `app` wires it together.
const LAYERS: &[&str] = &[
    "testing",     // the door for integration tests and benchmarks
    "app",         // the commands, one arm's pipeline, the finish
    "cli",         // the command line's flags, typed (only app reads it)
    "distributed", // load agents and the controller's side of `run --agents`
    "plan",        // a scenario's arm (or attack's flags) into the engine's inputs
    "live",        // `run --live`: a loopback page following the run
    "report",      // rendering: files and terminal output from stored figures
    "scenario",    // a scenario file, validated into the engine's inputs
    "gate",        // expectations judged against an arm's figures
    "analyze",     // one pass over the events: counts, histograms, verdicts
    "headers",     // rate-limit header checks and Retry-After probes
    "metrics",     // the limiter's own counters: read, and held against the trace
    "audit",       // access logs and other tools' results read as decided requests
    "faults",      // applying [[faults]] to a running stack
    "stack",       // the system under test: replicas, Redis, proxy
    "load",        // the generator: schedule, connections, answers
    "target",      // where load may go, and whether it is answered
    "store",       // the run folder, its records and summary.json's schema
    "events",      // the trace: one record per request
    "verify",      // the verifier (crates/verify, re-exported as crate::verify)
    "files",       // files read back: regular ones only, within a bound
    "error",       // errors and exit codes
    "interrupt",   // Ctrl-C and SIGTERM
];

/// What `report/` may import: the figures as stored and the trace's own
/// records (what an answer advertised), nothing that computes.
const REPORT_READS: &[&str] = &["store", "events", "files"];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/a/b.rs` → ["a", "b"]; `src/a/mod.rs` → ["a"].
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The file that defines module `path` or the item it names: the longest
/// prefix of it that is a file.
fn file_of(src: &Path, path: &[String]) -> Option<PathBuf> {
    for n in (1..=path.len()).rev() {
        let base = path[..n].iter().fold(src.to_path_buf(), |p, s| p.join(s));
        for candidate in [base.with_extension("rs"), base.join("mod.rs")] {
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

/// Identifier segments after `crate::` or `super::` at `at`, with brace
/// groups (`crate::{a, b::c}`) expanded to their first segment.
fn paths_after(text: &str) -> Vec<Vec<String>> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    let mut rest = text;
    let mut segs = Vec::new();
    loop {
        let name = ident(rest);
        if !name.is_empty() {
            rest = &rest[name.len()..];
            segs.push(name);
            if let Some(r) = rest.strip_prefix("::") {
                rest = r;
                continue;
            }
            out.push(segs);
            return out;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for member in group[..end].split(',') {
                let name = ident(member.trim());
                if !name.is_empty() && name != "self" {
                    let mut s = segs.clone();
                    s.push(name);
                    out.push(s);
                }
            }
            if segs.is_empty() {
                return out;
            }
        }
        out.push(segs);
        return out;
    }
}

struct House {
    src: PathBuf,
    /// file → files it imports
    arrows: BTreeMap<PathBuf, BTreeSet<PathBuf>>,
}

/// The rlbench crate's `src/`.
fn measure() -> House {
    measure_at(Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The verifier's crate (crates/verify/src): Cargo keeps it apart from
/// everything but the policy vocabulary; inside, it is held to the same
/// rule against circles.
fn measure_verify() -> House {
    measure_at(Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/verify/src"))
}

/// The other crates: the limiters under test, and the policy vocabulary.
fn measure_others() -> Vec<House> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    ["reference-api/src", "crates/policy/src"]
        .iter()
        .map(|dir| measure_at(root.join(dir)))
        .collect()
}

fn measure_at(src: PathBuf) -> House {
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut arrows: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for file in &files {
        let module = module_of(&src, file);
        if module == ["lib"] || module == ["main"] {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        // A file's own child modules (`mod x;`), named by bare paths (`x::f`).
        let children: Vec<String> = text
            .lines()
            .filter_map(|l| {
                let l = l.trim_start();
                let l = l
                    .strip_prefix("pub ")
                    .or(l.strip_prefix("pub(crate) "))
                    .unwrap_or(l);
                let name = l.strip_prefix("mod ")?.strip_suffix(';')?;
                (name != "tests").then(|| name.to_string())
            })
            .collect();
        // `mod x;` in src/a/mod.rs or src/a.rs is src/a/x.rs either way.
        let own_dir = module.clone();
        let to = arrows.entry(file.clone()).or_default();
        // Inside an inline `mod tests { … }`, `super` is the file itself.
        let mut inline = false;
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            if code.starts_with("mod ") && code.ends_with('{') {
                inline = true;
            }
            for child in &children {
                let marker = format!("{child}::");
                let mut from = 0;
                while let Some(i) = code[from..].find(&marker) {
                    let at = from + i;
                    from = at + marker.len();
                    if at > 0
                        && code[..at]
                            .ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':')
                    {
                        continue;
                    }
                    for tail in paths_after(&code[at..]) {
                        let mut path = own_dir.clone();
                        path.extend(tail);
                        if let Some(target) = file_of(&src, &path) {
                            if &target != file {
                                to.insert(target);
                            }
                        }
                    }
                }
            }
            for (marker, relative) in [("crate::", false), ("super::", true)] {
                let mut from = 0;
                while let Some(i) = code[from..].find(marker) {
                    let at = from + i;
                    from = at + marker.len();
                    // Part of a longer name, e.g. `rlbench_crate::`.
                    if at > 0 && code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                        continue;
                    }
                    for tail in paths_after(&code[from..]) {
                        let mut path = if relative {
                            let mut base = module.clone();
                            // A file's `super` is its folder's module.
                            if !inline {
                                base.pop();
                            }
                            base
                        } else {
                            Vec::new()
                        };
                        let mut tail = tail.into_iter().peekable();
                        while tail.peek().is_some_and(|s| s == "super") {
                            path.pop();
                            tail.next();
                        }
                        path.extend(tail);
                        if let Some(target) = file_of(&src, &path) {
                            if &target != file {
                                to.insert(target);
                            }
                        }
                    }
                }
            }
        }
    }
    House { src, arrows }
}

fn name(house: &House, file: &Path) -> String {
    file.strip_prefix(&house.src).unwrap().display().to_string()
}

fn top(house: &House, file: &Path) -> String {
    module_of(&house.src, file)[0].clone()
}

#[test]
fn every_module_has_its_place_in_the_layers() {
    let house = measure();
    let placed: BTreeSet<&str> = LAYERS.iter().copied().collect();
    assert_eq!(placed.len(), LAYERS.len(), "a module is listed twice");
    let missing: BTreeSet<String> = house
        .arrows
        .keys()
        .map(|f| top(&house, f))
        .filter(|m| !placed.contains(m.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "modules not placed in LAYERS: {missing:?}"
    );
}

/// src/lib.rs's `//!` names the layers in `LAYERS`' order: the
/// documented house cannot drift from the one this test holds the code to.
#[test]
fn lib_rs_names_the_layers_in_their_order() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let doc: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("//!")).collect();
    let doc = doc.join(" ");
    let list = doc
        .split("Each module imports only the ones below it")
        .nth(1)
        .expect("src/lib.rs says which module imports which");
    let named: Vec<&str> = list
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| LAYERS.contains(w))
        .collect();
    assert_eq!(named, LAYERS, "src/lib.rs's list of layers against LAYERS");
}

/// ARCHITECTURE.md's map of `src/`, top down, lists the layers in the
/// order of `LAYERS`, each on a line of its own.
#[test]
fn architecture_md_maps_the_layers_in_their_order() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .unwrap();
    let map = text
        .split("### src/, top down")
        .nth(1)
        .and_then(|t| t.split("```text\n").nth(1))
        .and_then(|t| t.split("```").next())
        .expect("ARCHITECTURE.md maps src/, top down");
    let named: Vec<&str> = map
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .map(|w| w.trim_end_matches('/').trim_end_matches(".rs"))
        .filter(|w| LAYERS.contains(w))
        .collect();
    assert_eq!(
        named, LAYERS,
        "ARCHITECTURE.md's map of src/ against LAYERS"
    );
}

#[test]
fn modules_import_only_downward() {
    let house = measure();
    let layer = |m: &str| LAYERS.iter().position(|l| *l == m).unwrap_or(usize::MAX);
    let mut upward = Vec::new();
    for (from, tos) in &house.arrows {
        for to in tos {
            let (a, b) = (top(&house, from), top(&house, to));
            if a != b && layer(&a) >= layer(&b) {
                upward.push(format!("{} -> {}", name(&house, from), name(&house, to)));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that do not run down the layers:\n{}",
        upward.join("\n")
    );
}

#[test]
fn report_only_renders_what_is_stored() {
    let house = measure();
    let mut wrong = Vec::new();
    for (from, tos) in &house.arrows {
        if top(&house, from) != "report" {
            continue;
        }
        for to in tos {
            let m = top(&house, to);
            if m != "report" && !REPORT_READS.contains(&m.as_str()) {
                wrong.push(format!("{} -> {}", name(&house, from), name(&house, to)));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "report/ imports what computes:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_file_imports_itself_through_others() {
    for house in [measure(), measure_verify()]
        .into_iter()
        .chain(measure_others())
    {
        no_circles(&house);
    }
}

fn no_circles(house: &House) {
    // Depth-first search; a grey node met again closes a circle.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        White,
        Grey,
        Black,
    }
    let mut mark: BTreeMap<&PathBuf, Mark> =
        house.arrows.keys().map(|f| (f, Mark::White)).collect();
    let mut circles = Vec::new();
    fn visit<'a>(
        house: &'a House,
        file: &'a PathBuf,
        mark: &mut BTreeMap<&'a PathBuf, Mark>,
        stack: &mut Vec<&'a PathBuf>,
        circles: &mut Vec<String>,
    ) {
        mark.insert(file, Mark::Grey);
        stack.push(file);
        for to in house.arrows.get(file).into_iter().flatten() {
            match mark.get(to).copied().unwrap_or(Mark::Black) {
                Mark::White => visit(house, to, mark, stack, circles),
                Mark::Grey => {
                    let start = stack.iter().position(|f| *f == to).unwrap();
                    let names: Vec<String> =
                        stack[start..].iter().map(|f| name(house, f)).collect();
                    circles.push(format!("{} -> {}", names.join(" -> "), name(house, to)));
                }
                Mark::Black => {}
            }
        }
        stack.pop();
        mark.insert(file, Mark::Black);
    }
    let files: Vec<&PathBuf> = house.arrows.keys().collect();
    for file in files {
        if mark[file] == Mark::White {
            visit(house, file, &mut mark, &mut Vec::new(), &mut circles);
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_reader_sees_imports_in_all_their_forms() {
    // The checker itself: grouped, nested and relative paths.
    assert_eq!(
        paths_after("report::{self, folder::RunFolder, summary::Summary};"),
        vec![
            vec!["report".to_string(), "folder".to_string()],
            vec!["report".to_string(), "summary".to_string()],
            vec!["report".to_string()],
        ]
    );
    assert_eq!(
        paths_after("{analyze, gate};"),
        vec![vec!["analyze".to_string()], vec!["gate".to_string()]]
    );
    assert_eq!(
        paths_after("load::client::Template::new(x)"),
        vec![vec![
            "load".to_string(),
            "client".to_string(),
            "Template".to_string(),
            "new".to_string()
        ]]
    );
    let house = measure();
    // A known arrow is seen, so a test that finds none cannot pass by
    // reading nothing.
    let src = &house.src;
    let main_arrows: usize = house.arrows.values().map(BTreeSet::len).sum();
    assert!(main_arrows > 50, "only {main_arrows} arrows read");
    assert!(
        house.arrows[&src.join("app/commands/run.rs")].contains(&src.join("app/pipeline/arm.rs"))
    );
    // Through a file's own child module (`pub use managed::…`).
    assert!(house.arrows[&src.join("stack/mod.rs")].contains(&src.join("stack/managed.rs")));
    // In the verifier's crate, `super::` from a top-level file.
    let verify = measure_verify();
    let vsrc = &verify.src;
    assert!(verify.arrows[&vsrc.join("witness.rs")].contains(&vsrc.join("rules.rs")));
    assert!(verify.arrows[&vsrc.join("removal.rs")].contains(&vsrc.join("fenwick.rs")));
    // In the reference API: an algorithm imports the limiter contract.
    let api = &measure_others()[0];
    let asrc = &api.src;
    assert!(api.arrows[&asrc.join("limiter/fixed_window.rs")]
        .contains(&asrc.join("limiter/contract.rs")));
}
