//! `rlbench check SCENARIO`: the scenario read and validated, nothing
//! started; every error of the file, one line each (exit 2).

use super::ending::{self, Ending};
use crate::cli::output::OutputFormat;
use crate::error::{Error, Exit};
use std::path::Path;

pub(super) fn execute(
    scenario: &Path,
    format: OutputFormat,
    out: &mut dyn std::io::Write,
) -> Result<Ending, Error> {
    let s = match crate::scenario::read_every(scenario) {
        Ok(s) => s,
        Err(errors) => {
            return Ok(Ending {
                exit: Exit::BadInput,
                errors: errors.iter().map(ToString::to_string).collect(),
                last: None,
            })
        }
    };
    let arms: Vec<&str> = s.arms.iter().map(|a| a.name.as_str()).collect();
    let doc = serde_json::json!({
        "file": scenario,
        "ok": true,
        "name": s.name,
        "policy": s.policy.describe(),
        "target_rps": s.load.shape.target_rate(s.duration),
        "shape": s.load.shape.name(),
        "duration_s": s.duration.as_secs_f64(),
        "arms": arms,
    });
    ending::emit(
        out,
        format,
        &format!(
            "{}: ok — {}; {:.0} requests/s ({}) for {:?}; arms: {}\n",
            scenario.display(),
            s.policy.describe(),
            s.load.shape.target_rate(s.duration),
            s.load.shape.name(),
            s.duration,
            arms.join(", ")
        ),
        &doc,
    )?;
    Ok(Ending::passed())
}
