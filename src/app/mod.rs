//! The application, by job: `entry` (the process's way in, for main.rs),
//! `commands` (one file per subcommand, each taking validated values and
//! returning what it prints and its exit; `commands/mod.rs` dispatches) and `pipeline` (one arm's way from a plan
//! through the stack and the load to a finished, gated report, shared by
//! `run`, `attack` and `audit`).

pub(crate) mod commands;
pub(crate) mod entry;
pub(crate) mod pipeline;

#[cfg(test)]
mod hostile_tests;
