//! `rlbench explain RUN_DIR`: the proof behind each arm's verdicts, from
//! the run folder alone — the events are judged again and the witnesses of
//! the arms (and keys) asked for are kept.

use crate::analyze::witnesses::Picker;
use crate::app::finish;
use crate::error::Error;
use crate::report::explain::Explained;
use crate::store::records::{self, ArmRecord};
use std::path::Path;

pub(crate) fn explain(
    dir: &Path,
    arm: Option<&str>,
    key: Option<&str>,
    limit: usize,
) -> Result<Vec<Explained>, Error> {
    let (folder, run) = crate::app::journal::read_back(dir)?;
    if let Some(a) = arm.filter(|a| !run.arms.iter().any(|n| n == a)) {
        return Err(Error::input(format!(
            "--arm {a:?}: the run has {}",
            run.arms.join(", ")
        )));
    }
    let mut out = Vec::new();
    for name in run.arms.iter().filter(|n| arm.map_or(true, |a| a == *n)) {
        let record: ArmRecord = records::read_arm(&folder.arm_record(name), name)?;
        let picker = Picker::new(limit).for_key(key.map(str::to_string));
        let figures = finish::analyze_arm(&folder, &record, picker, finish::ArmKeys::All)?;
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
