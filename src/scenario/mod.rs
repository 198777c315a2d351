//! Scenarios: what a run does. A TOML file is parsed into raw types
//! (`raw`), then validated into the engine types below (`validate`); every
//! error names the file, line and column and says what was expected.

mod raw;
pub(crate) mod spec;
pub(crate) mod units;
mod validate;

use reference_api::Policy;
pub use spec::*;
use std::path::Path;

/// Reads and validates a scenario file.
pub fn read(path: &Path) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        file: file.clone(),
        line: 0,
        column: 0,
        message: format!("cannot read the scenario: {e}"),
    })?;
    parse(&file, &text)
}

/// A coordinator's Redis URL (`[distributed] coordinator`, `--coordinator`),
/// or what is wrong with it, its password hidden.
pub fn coordinator_url(url: &str) -> Result<String, String> {
    validate::coordinator(url)
}

/// Validates scenario text; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    validate::scenario(file, text)
}

/// A policy given inline, as the keys of a `[policy]` table separated by
/// commas: `algorithm = "sliding_log", limit = 10, window = "1s"` (for
/// `rlbench attack --policy`). Errors read like a scenario's, located in
/// the text given.
pub fn inline_policy(text: &str) -> Result<(Policy, PolicyTiming), ScenarioError> {
    validate::inline_policy(text)
}

/// Where the key goes, given inline as the keys of `[load] key`
/// (`source_ip = "127.0.0.0/16"`, `query = "api_key"`, ...; for `rlbench
/// attack --key-in`), put into `template` for `keys` keys.
pub fn inline_key(
    text: &str,
    template: crate::load::request::Template,
    keys: u32,
) -> Result<(crate::load::request::Template, KeySpec), ScenarioError> {
    validate::inline_key(text, template, keys)
}
