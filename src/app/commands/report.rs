//! `rlbench report RUN_DIR`: rebuilds every report file of a run folder
//! from its events and records alone; the gate is judged again, with the
//! expectations of the scenario copy kept in the folder.

use super::ending::{self, Ending};
use crate::app::pipeline::finish;
use crate::error::{Error, Exit};
use crate::gate::Expectation;
use crate::scenario;
use crate::store::folder::RunFolder;
use crate::store::records::{self, ArmRecord};
use crate::store::summary::Summary;
use std::path::Path;

pub(crate) fn rebuild(dir: &Path) -> Result<(Summary, Exit), Error> {
    rebuild_judged(dir, &finish::Judged::new())
}

/// As [`rebuild`], with the keys of the arms in `judged` judged already,
/// in shards (`app::shard`).
pub(crate) fn rebuild_judged(
    dir: &Path,
    judged: &finish::Judged,
) -> Result<(Summary, Exit), Error> {
    let (folder, run) = crate::app::pipeline::journal::read_back(dir)?;
    let scenario = scenario_copy(&folder)?;
    let mut arms: Vec<(ArmRecord, Vec<Expectation>)> = Vec::new();
    for name in &run.arms {
        let arm: ArmRecord = records::read_arm(&folder.arm_record(name), name)?;
        let expect = expectations(scenario.as_ref(), &arm);
        arms.push((arm, expect));
    }
    let finished = finish::finish_judged(&folder, &run, &arms, judged)?;
    if let Some(e) = finished.write_error {
        return Err(e);
    }
    // A partial run never passes (summary.json's gate says so too), and
    // is not the limiter's failure: only a complete trace fails it.
    let exit = if finished.summary.partial {
        Exit::Environment
    } else if finished.summary.gate.passed {
        Exit::Passed
    } else {
        Exit::GateFailed
    };
    Ok((finished.summary, exit))
}

/// The scenario copy a run folder keeps; `rlbench attack --out` keeps
/// none (its bounds are in the arm's record).
pub(crate) fn scenario_copy(folder: &RunFolder) -> Result<Option<scenario::Scenario>, Error> {
    match folder.scenario_copy() {
        copy if copy.exists() => Ok(Some(scenario::read(&copy)?)),
        _ => Ok(None),
    }
}

/// What `arm` was expected to do: its scenario's `[arms.expect]`, else
/// the bounds its record keeps.
pub(crate) fn expectations(
    scenario: Option<&scenario::Scenario>,
    arm: &ArmRecord,
) -> Vec<Expectation> {
    scenario
        .iter()
        .flat_map(|s| &s.arms)
        .find(|a| a.name == arm.name)
        .map(|a| a.expect.clone())
        .unwrap_or_else(|| {
            arm.expect
                .iter()
                .filter_map(|(k, v)| crate::gate::named(k, *v))
                .collect()
        })
}

/// `rlbench report RUN_DIR [--shards N]`: the report as rebuilt (by
/// [`rebuild`], or from the shards' files), the verdicts printed, the
/// gate's exit; a partial run never passes.
pub(super) fn execute(
    run_dir: &Path,
    (summary, exit): (Summary, Exit),
    wide: bool,
    out: &mut dyn std::io::Write,
) -> Result<Ending, Error> {
    ending::write_out(out, &ending::verdicts(&summary, Some(run_dir), wide))?;
    let mut ended = ending::judged(&summary, exit, Vec::new());
    if summary.partial {
        ended.errors.push(format!(
            "the run is partial ({}): it never passes",
            summary.partial_reason.as_deref().unwrap_or("interrupted")
        ));
    }
    Ok(ended)
}
