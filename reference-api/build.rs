//! Builds the Redis scripts: reads every `*.lua` in the repository's top-level
//! `lua/` folder, prepends `lua/prelude.lua` (the one place that reads the
//! clock) to each of the others, puts a shared chunk where a script has a
//! line `--#include shared/NAME.lua` (the chunk's text, from `lua/shared/`,
//! in place of that line), and writes the results to `OUT_DIR` under the
//! same names, where `src/limiter/redis_backed/lua.rs` embeds them. Each
//! result is one whole script: Redis caches and runs it by its own SHA and
//! never sees a chunk alone.
//! A missing prelude, a missing script that `lua.rs` embeds or a missing
//! chunk is a build error naming the file; so is a chunk that includes
//! another.

use std::fs;
use std::path::{Path, PathBuf};

const PRELUDE: &str = "prelude.lua";

/// The line that puts a shared chunk in a script: this, then its path
/// under `lua/`.
const INCLUDE: &str = "--#include ";

/// The scripts `lua.rs` embeds; each must exist.
const SCRIPTS: [&str; 7] = [
    "sliding_log.lua",
    "fixed_window.lua",
    "sliding_window.lua",
    "sliding_counter.lua",
    "token_bucket.lua",
    "gcra.lua",
    "fixed_window_lease.lua",
];

fn main() {
    let manifest = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env("OUT_DIR"));
    let dir = manifest.join("..").join("lua");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={}", dir.display());

    let prelude = read(&dir.join(PRELUDE));
    for name in SCRIPTS {
        let path = dir.join(name);
        if !path.is_file() {
            panic!(
                "missing Redis script {}: src/limiter/redis_backed/lua.rs embeds it",
                path.display()
            );
        }
    }

    let entries = fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "cannot read the Redis scripts' folder {}: {e}",
            dir.display()
        )
    });
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
            .path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !name.ends_with(".lua") || name == PRELUDE {
            continue;
        }
        let script = include(&dir, name, &read(&path));
        let mut full = String::with_capacity(prelude.len() + 1 + script.len());
        full.push_str(&prelude);
        if !full.ends_with('\n') {
            full.push('\n');
        }
        full.push_str(&script);
        let target = out.join(name);
        fs::write(&target, full)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", target.display()));
    }
}

/// `script` (lua/`name`) with each `--#include shared/X.lua` line replaced
/// by that chunk's text.
fn include(dir: &Path, name: &str, script: &str) -> String {
    let mut out = String::with_capacity(script.len());
    for line in script.split_inclusive('\n') {
        let Some(chunk) = line.trim_end().strip_prefix(INCLUDE) else {
            out.push_str(line);
            continue;
        };
        let chunk = chunk.trim();
        if !chunk.starts_with("shared/") || chunk.contains("..") {
            panic!("lua/{name}: {INCLUDE}{chunk}: a shared chunk is lua/shared/NAME.lua");
        }
        let text = read(&dir.join(chunk));
        if text.lines().any(|l| l.starts_with(INCLUDE)) {
            panic!(
                "lua/{chunk} includes another chunk: a shared chunk is included, never including"
            );
        }
        out.push_str(&text);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo did not set {name}"))
}

fn read(path: &Path) -> String {
    println!("cargo:rerun-if-changed={}", path.display());
    fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read Redis script {}: {e}", path.display()))
}
