//! `rlbench explain RUN_DIR`: the proof behind each arm's verdicts, from
//! the run folder alone — the events are judged again and the witnesses of
//! the arms (and keys) asked for are kept.

use super::ending::{self, Ending};
use crate::analyze::witnesses::Picker;
use crate::app::pipeline::{analysis, finish};
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
    let (folder, run) = crate::app::pipeline::journal::read_back(dir)?;
    if let Some(a) = arm.filter(|a| !run.arms.iter().any(|n| n == a)) {
        return Err(Error::input(format!(
            "--arm {a:?}: the run has {}",
            run.arms.join(", ")
        )));
    }
    let scenario = crate::app::commands::report::scenario_copy(&folder)?;
    let mut out = Vec::new();
    // Per arm explained whose trace does not name the key: why.
    let mut missing: Vec<String> = Vec::new();
    for name in run.arms.iter().filter(|n| arm.map_or(true, |a| a == *n)) {
        let record: ArmRecord = records::read_arm(&folder.arm_record(name), name)?;
        let picker = Picker::new(limit).for_key(key.map(str::to_string));
        let figures = analysis::analyze_arm(&folder, &record, picker, analysis::ArmKeys::All)?;
        // A key with nothing to prove, or one the trace never named?
        if let Some(k) = key.filter(|_| figures.witnesses.is_empty()) {
            missing.extend(no_such_key(
                &folder.events(name),
                record.trace_check(),
                name,
                k,
            )?);
        }
        let mut summary = crate::app::pipeline::summarize::arm_summary(&record, &figures, &[]);
        let checks = crate::gate::evaluate(
            &crate::app::commands::report::expectations(scenario.as_ref(), &record),
            &figures,
        );
        summary.policy_fit = finish::policy_fit(&folder, &record, &figures, &checks)?;
        let keys = crate::report::keys::sentence(&summary);
        let setup = crate::report::setup::sentence(&summary);
        let slow = crate::report::slow::sentence(&summary);
        let spoofing = crate::report::spoofing::sentence(&summary);
        let verdict = figures.verdict.unwrap_or_default();
        out.push(Explained {
            arm: name.clone(),
            mode: record.mode.clone(),
            policy: record.policy.as_ref().map(|p| p.describe()),
            definite_violations: verdict.definite_violations,
            false_rejects: verdict.false_rejects,
            witnesses: figures.witnesses,
            keys,
            setup,
            slow,
            spoofing,
        });
    }
    if !out.is_empty() && missing.len() == out.len() {
        return Err(Error::input(missing.join("; ")));
    }
    Ok(out)
}

/// When the arm's trace (`path`) never names `key`: saying so, with a few
/// of the keys it has.
fn no_such_key(
    path: &Path,
    check: crate::events::integrity::Check,
    arm: &str,
    key: &str,
) -> Result<Option<String>, Error> {
    let mut names: Vec<String> = Vec::new();
    for batch in crate::events::read::batches(path, check)? {
        for record in batch? {
            if let crate::events::read::Record::Key(name) = record {
                if name == key {
                    return Ok(None);
                }
                names.push(name);
            }
        }
    }
    names.sort();
    let shown = match names.as_slice() {
        [] => "none".to_string(),
        [one] => one.clone(),
        [first, .., last] => format!("{first} … {last}, {} in all", names.len()),
    };
    Ok(Some(format!(
        "--key {key:?}: arm {arm} has no such key (its keys: {shown})"
    )))
}

/// `rlbench explain RUN_DIR`: each violation's requests and rule, in words
/// or as JSON.
pub(super) fn execute(
    run_dir: &Path,
    which: (Option<&str>, Option<&str>),
    limit: usize,
    format: crate::cli::output::OutputFormat,
    wide: bool,
    out: &mut dyn std::io::Write,
) -> Result<Ending, Error> {
    let (arm, key) = which;
    let arms = explain(run_dir, arm, key, limit)?;
    ending::emit(
        out,
        format,
        &crate::report::fold::for_stdout(
            &crate::report::explain::render(
                &arms,
                crate::report::explain::bar_width(crate::report::fold::width(wide)),
            ),
            wide,
        ),
        &serde_json::json!({ "arms": arms }),
    )?;
    Ok(Ending::passed())
}
