//! Scenarios: what a run does. A TOML file is parsed into raw types
//! (`raw`), then validated into the engine types below (`validate`); every
//! error names the file, line and column and says what was expected.

mod every;
#[cfg(test)]
mod hostile_tests;
mod raw;
pub(crate) mod spec;
pub(crate) mod units;
mod validate;

use reference_api::Policy;
pub(crate) use spec::*;
use std::path::Path;

/// Reads and validates a scenario file.
pub(crate) fn read(path: &Path) -> Result<Scenario, ScenarioError> {
    let (file, text) = text_of(path)?;
    parse(&file, &text)
}

/// Reads a scenario file as [`read`] does, but on a file with errors
/// returns every error it can place, not only the first (`rlbench check`);
/// the first is the one [`read`] reports.
pub(crate) fn read_every(path: &Path) -> Result<Scenario, Vec<ScenarioError>> {
    let (file, text) = text_of(path).map_err(|e| vec![e])?;
    every::every(&file, &text)
}

/// The file's name as errors give it, and its text.
fn text_of(path: &Path) -> Result<(String, String), ScenarioError> {
    let file = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => Ok((file, text)),
        Err(e) => Err(ScenarioError {
            file,
            line: 0,
            column: 0,
            message: format!("cannot read the scenario: {e}"),
        }),
    }
}

/// A coordinator's Redis URL (`[distributed] coordinator`, `--coordinator`),
/// or what is wrong with it, its password hidden.
pub(crate) fn coordinator_url(url: &str) -> Result<String, validate::CoordinatorError> {
    validate::coordinator(url)
}

/// Validates scenario text; `file` names it in errors.
pub(crate) fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    validate::scenario(file, text)
}

/// A policy given inline, as the keys of a `[policy]` table separated by
/// commas: `algorithm = "sliding_log", limit = 10, window = "1s"` (for
/// `rlbench attack --policy`). Errors read like a scenario's, located in
/// the text given.
pub(crate) fn inline_policy(text: &str) -> Result<(Policy, PolicyTiming), ScenarioError> {
    validate::inline_policy(text)
}

/// Where the key goes, given inline as the keys of `[load] key`
/// (`source_ip = "127.0.0.0/16"`, `query = "api_key"`, ...; for `rlbench
/// attack --key-in`), put into `template` for `keys` keys.
pub(crate) fn inline_key(
    text: &str,
    template: crate::load::request::Template,
    keys: u32,
) -> Result<(crate::load::request::Template, KeySpec), ScenarioError> {
    validate::inline_key(text, template, keys)
}
