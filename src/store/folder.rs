//! The run folder: `reports/<scenario>/<UTC timestamp>/` by default, with a
//! `latest` symlink beside it; or the folder `--out` names. Inside: each
//! arm's trace and record under `events/`, `run.json`, the scenario's copy
//! and the reports.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub struct RunFolder {
    pub root: PathBuf,
}

impl RunFolder {
    /// An existing run folder, for rebuilding its reports.
    pub fn open(root: &Path) -> Result<Self, String> {
        if !root.join("run.json").is_file() {
            return Err(format!(
                "{}: not a run folder (no run.json); expected a folder like reports/<scenario>/<time>",
                root.display()
            ));
        }
        Ok(RunFolder {
            root: root.to_path_buf(),
        })
    }

    pub fn create(out: Option<&Path>, scenario: &str, now: SystemTime) -> Result<Self, String> {
        let root = match out {
            Some(dir) => dir.to_path_buf(),
            None => {
                let stamp = humantime::format_rfc3339_seconds(now)
                    .to_string()
                    .replace(':', "-");
                let parent = Path::new("reports").join(scenario);
                // Two runs in the same second get -2, -3, ...
                let mut root = parent.join(&stamp);
                let mut n = 2;
                while root.exists() {
                    root = parent.join(format!("{stamp}-{n}"));
                    n += 1;
                }
                root
            }
        };
        std::fs::create_dir_all(root.join("events"))
            .map_err(|e| format!("cannot create the run folder {}: {e}", root.display()))?;
        if out.is_none() {
            point_latest(&root);
        }
        Ok(RunFolder { root })
    }

    /// Where an arm's trace is written: `events/<arm>.trace`.
    pub fn trace(&self, arm: &str) -> PathBuf {
        self.root.join("events").join(format!("{arm}.trace"))
    }

    /// Where an arm's trace is read from: its `.trace`, or the `.csv` of a
    /// folder written before the binary trace.
    pub fn events(&self, arm: &str) -> PathBuf {
        let trace = self.trace(arm);
        let csv = self.root.join("events").join(format!("{arm}.csv"));
        if !trace.exists() && csv.exists() {
            csv
        } else {
            trace
        }
    }

    /// `<arm>.hgrm` for latency, `<arm>.<kind>.hgrm` otherwise.
    pub fn hgrm(&self, arm: &str, kind: &str) -> PathBuf {
        match kind {
            "latency" => self.root.join(format!("{arm}.hgrm")),
            other => self.root.join(format!("{arm}.{other}.hgrm")),
        }
    }

    pub fn summary(&self) -> PathBuf {
        self.root.join("summary.json")
    }

    pub fn scenario_copy(&self) -> PathBuf {
        self.root.join("scenario.toml")
    }

    pub fn run_record(&self) -> PathBuf {
        self.root.join("run.json")
    }

    pub fn arm_record(&self, arm: &str) -> PathBuf {
        self.root.join("events").join(format!("{arm}.json"))
    }
}

/// Best effort: a missing `latest` link never fails a run.
fn point_latest(root: &Path) {
    let (Some(parent), Some(name)) = (root.parent(), root.file_name()) else {
        return;
    };
    let link = parent.join("latest");
    let _ = std::fs::remove_file(&link);
    #[cfg(unix)]
    let _ = std::os::unix::fs::symlink(name, &link);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_folder_is_used_as_is() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run1");
        let f = RunFolder::create(Some(&out), "demo", SystemTime::now()).unwrap();
        assert_eq!(f.root, out);
        assert!(out.join("events").is_dir());
        assert_eq!(f.events("local"), out.join("events/local.trace"));
        std::fs::write(out.join("events/old.csv"), "").unwrap();
        assert_eq!(f.events("old"), out.join("events/old.csv"));
    }
}
