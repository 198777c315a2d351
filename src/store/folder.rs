//! The run folder: `reports/<scenario>/<UTC timestamp>/` by default, with a
//! `latest` symlink beside it; or the folder `--out` names. Inside: each
//! arm's trace and record under `events/`, `run.json`, the scenario's copy
//! and the reports. Arm names become file names, so a name read back from
//! a folder is held to the scenario's naming rule ([`is_name`]) before any
//! path is made of it. `--out` into a folder holding an earlier run clears
//! what rlbench wrote there ([`RunFolder::create`]).

use super::atomic;
pub(crate) use super::names::{is_name, NAME_RULE};
use super::StoreError;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Files rlbench writes at a run folder's top (besides `<arm>*.hgrm`).
const OWNED: [&str; 5] = [
    "run.json",
    "summary.json",
    "scenario.toml",
    "report.html",
    "junit.xml",
];

/// Whether rlbench wrote the file `name` at a run folder's top.
fn owned_top(name: &str) -> bool {
    OWNED.contains(&name)
        || name.ends_with(".hgrm")
        || name.ends_with(".png")
        || atomic::is_temporary(name)
}

/// Whether rlbench wrote `name` in a run folder's `events/`.
fn owned_event(name: &str) -> bool {
    [".trace", ".json", ".csv"]
        .iter()
        .any(|x| name.ends_with(x))
        || atomic::is_temporary(name)
}

pub(crate) struct RunFolder {
    pub root: PathBuf,
}

impl RunFolder {
    /// An existing run folder, for rebuilding its reports.
    pub(crate) fn open(root: &Path) -> Result<Self, StoreError> {
        if !root.join("run.json").is_file() {
            return Err(StoreError::NotRunFolder(root.to_path_buf()));
        }
        Ok(RunFolder {
            root: root.to_path_buf(),
        })
    }

    /// `latest`: the name of the link beside the folder that points at it
    /// (`latest`, or `latest-ARM+ARM` for a run of some arms only), moved
    /// only when rlbench chose the folder.
    pub(crate) fn create(
        out: Option<&Path>,
        scenario: &str,
        now: SystemTime,
        latest: &str,
    ) -> Result<Self, StoreError> {
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
        std::fs::create_dir_all(root.join("events")).map_err(|source| StoreError::Create {
            path: root.clone(),
            source,
        })?;
        if out.is_none() {
            point_latest(&root, latest);
        }
        Ok(RunFolder { root })
    }

    /// What `--out DIR` finds before a run: nothing (or only hidden files)
    /// is fine; an earlier run's folder is cleared of what rlbench wrote
    /// there (said in the line returned); anything else is refused, and so
    /// is a folder another rlbench is still writing.
    pub(crate) fn prepare_out(dir: &Path) -> Result<Option<String>, StoreError> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(None);
        };
        let names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        if names.iter().all(|n| n.starts_with('.')) {
            return Ok(None);
        }
        let shown = dir.display();
        let record = dir.join("run.json");
        if !record.is_file() {
            return Err(StoreError::NotOurs(dir.to_path_buf()));
        }
        let earlier: super::records::RunRecord = super::records::read(&record)?;
        if let Some(pid) = earlier.writer_alive() {
            return Err(StoreError::StillWritten {
                dir: dir.to_path_buf(),
                pid,
            });
        }
        let clear = |path: PathBuf| {
            std::fs::remove_file(&path).map_err(|source| StoreError::Clear {
                dir: dir.to_path_buf(),
                path: path.clone(),
                source,
            })
        };
        for name in names.iter().filter(|n| owned_top(n)) {
            clear(dir.join(name))?;
        }
        if let Ok(events) = std::fs::read_dir(dir.join("events")) {
            for entry in events.filter_map(|e| e.ok()) {
                if owned_event(&entry.file_name().to_string_lossy()) {
                    clear(entry.path())?;
                }
            }
        }
        Ok(Some(format!(
            "--out {shown}: cleared the earlier run kept there ({}, started {})",
            earlier.scenario, earlier.started_at
        )))
    }

    /// Where an arm's trace is written: `events/<arm>.trace`. Every path
    /// of an arm is made from a name held to [`is_name`].
    pub(crate) fn trace(&self, arm: &str) -> PathBuf {
        self.root.join("events").join(format!("{arm}.trace"))
    }

    /// Where the judgments of one shard of an arm's keys are kept
    /// (`rlbench report --shard i/n`): `events/<arm>.shard-<i>-of-<n>.json`.
    pub(crate) fn shard(&self, arm: &str, index: u32, of: u32) -> PathBuf {
        self.root
            .join("events")
            .join(format!("{arm}.shard-{index}-of-{of}.json"))
    }

    /// Where an arm's trace is read from: its `.trace`, or the `.csv` of a
    /// folder written before the binary trace.
    pub(crate) fn events(&self, arm: &str) -> PathBuf {
        let trace = self.trace(arm);
        let csv = self.root.join("events").join(format!("{arm}.csv"));
        if !trace.exists() && csv.exists() {
            csv
        } else {
            trace
        }
    }

    /// `<arm>.hgrm` for latency, `<arm>.<kind>.hgrm` otherwise.
    pub(crate) fn hgrm(&self, arm: &str, kind: &str) -> PathBuf {
        match kind {
            "latency" => self.root.join(format!("{arm}.hgrm")),
            other => self.root.join(format!("{arm}.{other}.hgrm")),
        }
    }

    /// What report.html draws over time and per key (`store::page_json`).
    pub(crate) fn page(&self) -> PathBuf {
        self.root.join("page.json")
    }

    pub(crate) fn summary(&self) -> PathBuf {
        self.root.join("summary.json")
    }

    pub(crate) fn scenario_copy(&self) -> PathBuf {
        self.root.join("scenario.toml")
    }

    pub(crate) fn run_record(&self) -> PathBuf {
        self.root.join("run.json")
    }

    /// Where the chunks load agents stream back wait, per agent, until the
    /// arm's trace is merged from them: `events/<arm>.agents/`.
    pub(crate) fn spool(&self, arm: &str) -> PathBuf {
        self.root.join("events").join(format!("{arm}.agents"))
    }

    pub(crate) fn arm_record(&self, arm: &str) -> PathBuf {
        self.root.join("events").join(format!("{arm}.json"))
    }
}

/// The link name for a run of `arms` (all of the scenario's when
/// `all`): `latest`, or `latest-` and the arms joined by `+`, any byte
/// but a letter, digit, `-` or `_` written `_`.
pub(crate) fn latest_name(arms: &[&str], all: bool) -> String {
    if all {
        return "latest".into();
    }
    let safe: Vec<String> = arms
        .iter()
        .map(|a| {
            a.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        })
        .collect();
    format!("latest-{}", safe.join("+"))
}

/// Best effort: a missing `latest` link never fails a run. Only a link is
/// replaced: a file or folder of that name is not rlbench's to remove.
fn point_latest(root: &Path, latest: &str) {
    let (Some(parent), Some(name)) = (root.parent(), root.file_name()) else {
        return;
    };
    let link = parent.join(latest);
    match std::fs::symlink_metadata(&link) {
        Ok(m) if m.file_type().is_symlink() => {
            let _ = std::fs::remove_file(&link);
        }
        Ok(_) => return,
        Err(_) => {}
    }
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
        let f = RunFolder::create(Some(&out), "demo", SystemTime::now(), "latest").unwrap();
        assert_eq!(f.root, out);
        assert!(out.join("events").is_dir());
        assert_eq!(f.events("local"), out.join("events/local.trace"));
        std::fs::write(out.join("events/old.csv"), "").unwrap();
        assert_eq!(f.events("old"), out.join("events/old.csv"));
    }

    #[test]
    fn a_run_of_some_arms_points_a_link_of_its_own() {
        assert_eq!(latest_name(&["local", "redis"], true), "latest");
        assert_eq!(latest_name(&["local"], false), "latest-local");
        assert_eq!(latest_name(&["a b", "c/d"], false), "latest-a_b+c_d");
    }

    #[test]
    fn a_latest_that_is_not_a_link_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().join("latest");
        std::fs::write(&mine, "the user's").unwrap();
        let run = dir.path().join("2026-12-04T00-00-00Z");
        std::fs::create_dir_all(&run).unwrap();
        point_latest(&run, "latest");
        assert_eq!(std::fs::read_to_string(&mine).unwrap(), "the user's");
        // A link is moved.
        point_latest(&run, "latest-local");
        point_latest(&run, "latest-local");
        assert_eq!(
            std::fs::read_link(dir.path().join("latest-local")).unwrap(),
            Path::new("2026-12-04T00-00-00Z")
        );
    }
}
