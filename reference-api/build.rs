//! Builds the Redis scripts: reads every `*.lua` in the repository's top-level
//! `lua/` folder, prepends `lua/prelude.lua` (the one place that reads the
//! clock) to each of the others, and writes the results to `OUT_DIR` under
//! the same names, where `src/limiter/redis_backed/lua.rs` embeds them.
//! A missing prelude or a missing script that `lua.rs` embeds is a build
//! error naming the file.

use std::fs;
use std::path::{Path, PathBuf};

const PRELUDE: &str = "prelude.lua";

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
        let script = read(&path);
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

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo did not set {name}"))
}

fn read(path: &Path) -> String {
    println!("cargo:rerun-if-changed={}", path.display());
    fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read Redis script {}: {e}", path.display()))
}
