//! `run.json` as the run goes: written when the run starts (state
//! `running`, this process's id), again as each arm's trace opens, and a
//! last time, `finished`, with how the run ended. A folder whose run.json
//! still says `running` after its rlbench is gone is what a kill or crash
//! left; `report` rebuilds it as a partial run ([`left_behind`]).

use crate::error::Error;
use crate::store::folder::RunFolder;
use crate::store::records::{self, RunRecord, RunState};
use crate::store::StoreError;
use std::time::{Duration, SystemTime};

/// Why a folder left `running` is partial.
pub(crate) const DIED: &str = "the run did not finish: rlbench stopped before writing its end \
(killed, crashed, or its last writes failed); what reached the disk is kept";

pub(crate) struct Journal<'a> {
    folder: &'a RunFolder,
    record: RunRecord,
}

impl<'a> Journal<'a> {
    /// Writes the run's first run.json.
    pub(crate) fn open(
        folder: &'a RunFolder,
        scenario: &str,
        started: SystemTime,
        duration: Duration,
    ) -> Result<Self, StoreError> {
        let journal = Journal {
            folder,
            record: RunRecord {
                state: RunState::Running,
                pid: Some(std::process::id()),
                scenario: scenario.to_string(),
                started_at: humantime::format_rfc3339_seconds(started).to_string(),
                duration_s: duration.as_secs_f64(),
                partial: true,
                partial_reason: Some(DIED.to_string()),
                arms: Vec::new(),
            },
        };
        records::write(&folder.run_record(), &journal.record)?;
        Ok(journal)
    }

    /// An arm's trace and first record are on disk: list it.
    pub(crate) fn arm_begun(&mut self, arm: &str) -> Result<(), StoreError> {
        self.record.arms.push(arm.to_string());
        records::write(&self.folder.run_record(), &self.record)
    }

    /// The last run.json: how the run ended. When it cannot be written the
    /// record says so (partial), for the summary written after it, and
    /// the error is returned.
    /// `arms`: those that ran; `error`: what stopped the run, if anything.
    pub(crate) fn close(
        self,
        arms: Vec<String>,
        interrupted: bool,
        error: Option<&Error>,
    ) -> (RunRecord, Option<StoreError>) {
        let mut run = RunRecord {
            state: RunState::Finished,
            pid: None,
            partial: interrupted || error.is_some(),
            partial_reason: match (error, interrupted) {
                (Some(e), _) => Some(e.message.clone()),
                (None, true) => Some("interrupted (Ctrl-C or SIGTERM)".to_string()),
                (None, false) => None,
            },
            arms,
            ..self.record
        };
        let written = records::write(&self.folder.run_record(), &run).err();
        if let Some(e) = &written {
            run.partial = true;
            run.partial_reason
                .get_or_insert_with(|| format!("the run folder is incomplete: {e}"));
        }
        (run, written)
    }
}

/// A run folder as `report`, `explain` and `export` read it: its run.json
/// (see [`left_behind`]), every arm name in it held to the naming rule.
pub(crate) fn read_back(dir: &std::path::Path) -> Result<(RunFolder, RunRecord), Error> {
    let folder = RunFolder::open(dir)?;
    let path = folder.run_record();
    let run: RunRecord = records::read(&path)?;
    run.checked_arms(&path)?;
    let run = left_behind(run)?;
    Ok((folder, run))
}

/// A run.json as `report` should take it: one left `running` by a
/// process that is gone is partial, and says why; one whose process still
/// runs is refused (its folder is not complete yet).
pub(crate) fn left_behind(mut run: RunRecord) -> Result<RunRecord, StoreError> {
    if run.state == RunState::Finished {
        return Ok(run);
    }
    if let Some(pid) = run.writer_alive() {
        return Err(StoreError::StillRunning(pid));
    }
    run.partial = true;
    run.partial_reason.get_or_insert_with(|| DIED.to_string());
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(pid: Option<u32>) -> RunRecord {
        RunRecord {
            state: RunState::Running,
            pid,
            scenario: "s".into(),
            started_at: "t".into(),
            duration_s: 1.0,
            partial: true,
            partial_reason: None,
            arms: vec!["a".into()],
        }
    }

    #[test]
    fn a_run_left_running_by_a_gone_process_is_partial() {
        // Process ids are below 2^22 on Linux: this one is nobody's.
        let run = left_behind(running(Some(u32::MAX - 1))).unwrap();
        assert!(run.partial);
        assert_eq!(run.partial_reason.as_deref(), Some(DIED));
        assert_eq!(run.arms, ["a"]);
        let finished = RunRecord {
            state: RunState::Finished,
            partial: false,
            ..running(None)
        };
        assert_eq!(left_behind(finished.clone()).unwrap(), finished);
    }

    #[test]
    fn a_process_that_is_not_rlbench_does_not_hold_the_folder() {
        // pid 1 lives, but is not rlbench; this test's own process is
        // skipped by design.
        assert!(left_behind(running(Some(1))).is_ok());
        assert_eq!(running(Some(std::process::id())).writer_alive(), None);
    }
}
