//! `run.json`: how far a run got, its arms in order, and whether the
//! rlbench writing the folder still lives.

use crate::store::StoreError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// How far a run got. `run.json` is written when the run starts, rewritten
/// as each arm starts and ends, and says `finished` once the run folder is
/// complete; a folder still saying `running` after its rlbench is gone is
/// what a kill (or a crash) left.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RunState {
    Running,
    /// Folders written before the state existed were written at the end.
    #[default]
    Finished,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    #[serde(default)]
    pub state: RunState,
    /// The rlbench process writing the folder (while it is `running`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub scenario: String,
    pub started_at: String,
    pub duration_s: f64,
    /// Interrupted, or cut short by an environment failure.
    pub partial: bool,
    /// Why it is partial, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_reason: Option<String>,
    /// The arms that ran, in order (while running: the one under way too).
    pub arms: Vec<String>,
}

impl RunRecord {
    /// The rlbench still writing this folder, if it is `running` and its
    /// process lives (not a zombie, not a reused number, not this one).
    pub(crate) fn writer_alive(&self) -> Option<u32> {
        let pid = self.pid.filter(|_| self.state == RunState::Running)?;
        if pid == std::process::id() {
            return None;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // A zombie (killed, not yet reaped) writes nothing more.
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        let program = cmdline.split(|b| *b == 0).next().unwrap_or_default();
        (!zombie && String::from_utf8_lossy(program).contains("rlbench")).then_some(pid)
    }

    /// The arm names it lists, each one a name rlbench writes
    /// (`folder::is_name`): a name that would leave the folder is refused.
    pub(crate) fn checked_arms(&self, path: &Path) -> Result<&[String], StoreError> {
        if let Some(bad) = self.arms.iter().find(|a| !crate::store::names::is_name(a)) {
            return Err(StoreError::ArmName {
                path: path.to_path_buf(),
                name: bad.clone(),
            });
        }
        // An arm listed twice would be judged twice, or hide another.
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = self.arms.iter().find(|a| !seen.insert(a.as_str())) {
            return Err(StoreError::ArmTwice {
                path: path.to_path_buf(),
                name: twice.clone(),
            });
        }
        Ok(&self.arms)
    }
}
