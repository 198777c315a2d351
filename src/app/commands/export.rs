//! `rlbench export RUN_DIR [--arm NAME]... [--format csv|jsonl]`: a run's
//! trace in the plain forms other tools read, written to the output `main`
//! hands over (standard output).

use crate::error::Error;
use crate::events::export::{self, Format};
use crate::events::read::read;
use crate::store::records::{self, ArmRecord};
use std::io::Write;
use std::path::Path;

/// Writes the chosen arms' events, in the run's order; returns how many.
pub(crate) fn export(
    dir: &Path,
    arms: &[String],
    format: Format,
    out: &mut impl Write,
) -> Result<u64, Error> {
    let (folder, run) = crate::app::pipeline::journal::read_back(dir)?;
    if let Some(a) = arms.iter().find(|a| !run.arms.contains(a)) {
        return Err(Error::input(format!(
            "--arm {a:?}: the run has {}",
            run.arms.join(", ")
        )));
    }
    let failed = |e: std::io::Error| Error::environment(format!("cannot write the export: {e}"));
    export::start(format, out).map_err(failed)?;
    let mut written = 0;
    for arm in run
        .arms
        .iter()
        .filter(|a| arms.is_empty() || arms.contains(a))
    {
        let record: ArmRecord = records::read_arm(&folder.arm_record(arm), arm)?;
        // A damaged trace is the same error here as in `report`.
        let events = read(&folder.events(arm), record.trace_check())?;
        for event in events {
            let event = event?;
            export::line(format, arm, !record.agents.is_empty(), &event, out).map_err(failed)?;
            written += 1;
        }
    }
    out.flush().map_err(failed)?;
    Ok(written)
}

/// `rlbench export RUN_DIR`: the trace as CSV or JSON Lines on `out`.
pub(super) fn execute(
    run_dir: &Path,
    arms: &[String],
    format: Format,
    out: &mut dyn Write,
) -> Result<super::ending::Ending, Error> {
    let mut buffered = std::io::BufWriter::with_capacity(1 << 16, out);
    export(run_dir, arms, format, &mut buffered)?;
    Ok(super::ending::Ending::passed())
}
