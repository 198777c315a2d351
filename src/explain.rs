//! `rlbench explain RUN_DIR`: the proof behind each arm's verdicts, from
//! the run folder alone — the events are judged again and the witnesses of
//! the arms (and keys) asked for are kept.

use crate::error::Error;
use crate::record::{self, ArmRecord, RunRecord};
use crate::report::{self, folder::RunFolder};
use crate::witnesses::{ArmWitness, Picker};
use std::path::Path;

/// One arm's verdict counts and the witnesses kept.
#[derive(Debug)]
pub struct Explained {
    pub arm: String,
    pub policy: Option<String>,
    pub definite_violations: u64,
    pub false_rejects: u64,
    pub witnesses: Vec<ArmWitness>,
}

pub fn explain(
    dir: &Path,
    arm: Option<&str>,
    key: Option<&str>,
    limit: usize,
) -> Result<Vec<Explained>, Error> {
    let folder = RunFolder::open(dir).map_err(Error::input)?;
    let run: RunRecord = record::read(&folder.run_record()).map_err(Error::input)?;
    if let Some(a) = arm.filter(|a| !run.arms.iter().any(|n| n == a)) {
        return Err(Error::input(format!(
            "--arm {a:?}: the run has {}",
            run.arms.join(", ")
        )));
    }
    let mut out = Vec::new();
    for name in run.arms.iter().filter(|n| arm.map_or(true, |a| a == *n)) {
        let record: ArmRecord = record::read(&folder.arm_record(name)).map_err(Error::input)?;
        let picker = Picker::new(limit).for_key(key.map(str::to_string));
        let figures = report::analyze_arm(&folder, &record, picker).map_err(Error::environment)?;
        let verdict = figures.verdict.unwrap_or_default();
        out.push(Explained {
            arm: name.clone(),
            policy: record.policy.as_ref().map(|p| p.describe()),
            definite_violations: verdict.definite_violations,
            false_rejects: verdict.false_rejects,
            witnesses: figures.witnesses,
        });
    }
    Ok(out)
}
