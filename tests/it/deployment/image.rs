//! deploy/Dockerfile: what its last stage (the image that runs) holds —
//! its working folder, the repository's paths it copies there, the
//! binaries, its entry point.

use super::ledger::{Ledger, IMAGE_ROOT};
use std::collections::BTreeSet;

const AT: &str = "deploy/Dockerfile";

/// The repository paths the image holds at the same path under its
/// working folder.
pub(super) struct Image {
    copied: Vec<String>,
}

/// What the last stage says, line by line.
#[derive(Default)]
struct Stage {
    workdir: Option<String>,
    copied: Vec<String>,
    binaries: BTreeSet<String>,
    entrypoint: Option<Vec<String>>,
}

impl Image {
    pub(super) fn read(l: &mut Ledger) -> Image {
        let text = std::fs::read_to_string(l.path(AT)).unwrap_or_default();
        if text.is_empty() {
            l.fail(AT, "missing");
        }
        let stage = last_stage(l, &text);
        if stage.workdir.as_deref() != Some(IMAGE_ROOT) {
            let w = stage.workdir.as_deref().unwrap_or("none");
            l.fail(
                AT,
                format!("WORKDIR is {w}, not {IMAGE_ROOT} (the commands' relative paths)"),
            );
        }
        if stage.entrypoint != Some(vec!["rlbench".to_string()]) {
            l.fail(
                AT,
                format!(
                    "ENTRYPOINT is {:?}, not [\"rlbench\"] (the agents' and controller's args)",
                    stage.entrypoint
                ),
            );
        }
        for binary in ["rlbench", "reference-api"] {
            if !stage.binaries.contains(binary) {
                l.fail(AT, format!("{binary} is not copied from the build stage"));
            }
        }
        Image {
            copied: stage.copied,
        }
    }

    /// `rel`, a path relative to the working folder, is in the repository
    /// and copied into the image.
    pub(super) fn holds(&self, l: &mut Ledger, rel: &str, at: &str) {
        if !l.path(rel).is_file() {
            l.fail(at, format!("{rel}: no such file in the repository"));
        } else if !(self.copied.iter()).any(|c| rel == c || rel.starts_with(&format!("{c}/"))) {
            l.fail(at, format!("{rel} is not copied into the image ({AT})"));
        }
    }
}

/// The last stage's instructions (what runs): from its last `FROM` on.
fn last_stage(l: &mut Ledger, text: &str) -> Stage {
    let mut stage = Stage::default();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(op) = words.first() else { continue };
        match op.to_uppercase().as_str() {
            "FROM" => stage = Stage::default(),
            "WORKDIR" => stage.workdir = words.get(1).map(|w| w.to_string()),
            "COPY" if words[1..].iter().any(|w| w.starts_with("--from")) => {
                let sources = &words[1..words.len() - 1];
                stage.binaries.extend(
                    (sources.iter())
                        .filter(|w| !w.starts_with("--"))
                        .filter_map(|w| w.rsplit('/').next().map(str::to_string)),
                );
            }
            "COPY" if words.len() == 3 && words[1] == words[2] => {
                stage
                    .copied
                    .push(words[1].trim_end_matches('/').to_string());
            }
            "COPY" if words.len() == 3 => l.fail(
                AT,
                format!(
                    "{:?}: the image keeps the repository's paths (COPY P P)",
                    line.trim()
                ),
            ),
            "ENTRYPOINT" => {
                let form = line.trim_start()[op.len()..].trim();
                stage.entrypoint = serde_json::from_str(form).ok();
            }
            _ => {}
        }
    }
    stage
}
