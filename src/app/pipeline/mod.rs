//! One arm's pipeline, shared by `run`, `attack` and `audit`, from the
//! engine's inputs (`crate::plan`): `preflight` checks the machine first; `arm` brings the stack up, sends the load
//! beside the faults, reads the limiter's own counters
//! (`limiter_metrics`), takes the stack down and records; `analysis`
//! gives an arm's figures from its record and events, `finish`
//! analyzes, gates, `summarize`s and writes the report. `journal` keeps
//! run.json as the run goes, `progress` says how far it is,
//! `scenario_copy` keeps the scenario in the run folder.

pub(crate) mod analysis;
pub(crate) mod arm;
pub(crate) mod arm_record;
pub(crate) mod finish;
pub(crate) mod journal;
pub(crate) mod limiter_metrics;
pub(crate) mod preflight;
pub(crate) mod progress;
pub(crate) mod scenario_copy;
pub(crate) mod sender;
pub(crate) mod slack;
pub(crate) mod stack_up;
pub(crate) mod summarize;
