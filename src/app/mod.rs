//! The commands, each taking validated values and the interrupt handle
//! from `main`: `run` and `attack` drive arms through one pipeline
//! (`plan` → `arm` → `finish`); `report`, `explain`, `export` and
//! `compare` read run folders; `check`, `doctor` and `init` help before a run; `serve`
//! keeps one arm's stack up by hand; `commands` carries one command line out.

pub mod arm;
pub mod attack;
pub mod commands;
pub mod compare;
pub mod doctor;
pub mod explain;
pub mod export;
pub mod finish;
pub mod flags;
pub mod init;
pub mod journal;
pub mod plan;
pub mod preflight;
pub mod progress;
pub mod replica;
pub mod report;
pub mod run;
pub mod scenario_copy;
pub mod serve;
pub mod summarize;
