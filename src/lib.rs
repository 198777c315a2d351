//! rlbench: load-test rate limiters across real replicas and prove whether
//! they admit what their policy says. The binary's `main.rs` calls
//! `app::entry::main`, which parses the arguments, calls
//! `app::commands::execute`, writes what it said and exits.
//!
//! Data flow: scenario → (per arm) stack up → load ∥ faults → events →
//! stack down → analyze (verify, statistics) → gate → store → report.
//! Each module imports only the ones below it (tests/it/house_plan.rs
//! holds the code to this list, and this list to its `LAYERS`):
//! `testing` (what integration tests and benchmarks reach) > `app` (the
//! commands) > `cli` (the flags) > `distributed` (load agents and their
//! controller) > `plan` (a scenario's arm into the engine's inputs) >
//! `live` (a run followed in a browser) > `report` (rendering) >
//! `scenario` > `gate` > `analyze` > `headers` > `metrics` (the limiter's
//! own counters) > `audit` (access logs) > `faults` > `stack` > `load` >
//! `target` > `store` > `events` > `verify` > `files` > `error` > `interrupt`.

// Every module is the crate's own (`unreachable_pub` keeps what is not
// reached `pub(crate)`); the binary reaches `main`, the integration tests
// and benchmarks `testing`.
mod analyze;
mod app;
mod audit;
mod cli;
mod distributed;
mod error;
mod events;
mod faults;
mod files;
mod gate;
mod headers;
mod interrupt;
mod live;
mod load;
mod metrics;
mod plan;
mod report;
mod scenario;
mod stack;
mod store;
mod target;

/// What `main.rs` calls: the whole process, exit code and all.
pub use app::entry::main;

pub mod testing;
/// The verifier, a crate of its own (crates/verify): it depends on the
/// policy vocabulary alone, never on the limiters it judges.
pub use rlbench_verify as verify;
