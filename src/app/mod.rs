//! The commands, each taking validated values and the interrupt handle
//! from `main`: `run` and `attack` drive arms through one pipeline
//! (`plan` → `arm` → `finish`); `report` (also in shards), `explain`, `export` and
//! `compare` read run folders; `check`, `doctor`, `probe` and `init` help before a run; `serve`
//! keeps one arm's stack up by hand; `live` follows a run in a browser;
//! `commands` carries one command line out.

pub(crate) mod arm;
pub(crate) mod attack;
pub(crate) mod audit;
pub mod commands;
pub(crate) mod compare;
pub(crate) mod distributed;
pub(crate) mod doctor;
pub(crate) mod explain;
pub(crate) mod export;
pub(crate) mod finish;
pub(crate) mod flags;
pub(crate) mod identities;
pub(crate) mod init;
pub(crate) mod journal;
pub(crate) mod limiter_metrics;
pub(crate) mod live;
pub(crate) mod plan;
pub(crate) mod preflight;
pub(crate) mod probe;
pub(crate) mod progress;
pub(crate) mod replica;
pub mod report;
pub(crate) mod run;
pub(crate) mod scenario_copy;
pub(crate) mod serve;
pub(crate) mod shard;
pub(crate) mod summarize;

#[cfg(test)]
mod hostile_tests;
