//! `rlbench report RUN_DIR`: rebuilds every report file of a run folder
//! from its events and records alone; the gate is judged again, with the
//! expectations of the scenario copy kept in the folder.

use crate::app::finish;
use crate::error::{Error, Exit};
use crate::gate::Expectation;
use crate::scenario;
use crate::store::records::{self, ArmRecord};
use crate::store::summary::Summary;
use std::path::Path;

pub fn rebuild(dir: &Path) -> Result<(Summary, Exit), Error> {
    rebuild_judged(dir, &finish::Judged::new())
}

/// As [`rebuild`], with the keys of the arms in `judged` judged already,
/// in shards (`app::shard`).
pub(crate) fn rebuild_judged(
    dir: &Path,
    judged: &finish::Judged,
) -> Result<(Summary, Exit), Error> {
    let (folder, run) = crate::app::journal::read_back(dir)?;
    // `rlbench attack --out` keeps no scenario: its bounds are in the
    // arm's record.
    let scenario = match folder.scenario_copy() {
        copy if copy.exists() => Some(scenario::read(&copy)?),
        _ => None,
    };
    let mut arms: Vec<(ArmRecord, Vec<Expectation>)> = Vec::new();
    for name in &run.arms {
        let arm: ArmRecord = records::read_arm(&folder.arm_record(name), name)?;
        let expect = scenario
            .iter()
            .flat_map(|s| &s.arms)
            .find(|a| &a.name == name)
            .map(|a| a.expect.clone())
            .unwrap_or_else(|| {
                arm.expect
                    .iter()
                    .filter_map(|(k, v)| crate::gate::named(k, *v))
                    .collect()
            });
        arms.push((arm, expect));
    }
    let finished = finish::finish_judged(&folder, &run, &arms, judged)?;
    if let Some(e) = finished.write_error {
        return Err(e);
    }
    // A partial run never passes (summary.json's gate says so too).
    let exit = if finished.summary.gate.passed {
        Exit::Passed
    } else {
        Exit::GateFailed
    };
    Ok((finished.summary, exit))
}
