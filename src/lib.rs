//! rlbench: load-test rate limiters across real replicas and prove whether
//! they admit what their policy says. The binary's `main.rs` only parses
//! arguments, calls `app::commands::execute`, writes what it said and exits.
//!
//! Data flow: scenario → (per arm) stack up → load ∥ faults → events →
//! stack down → analyze (verify, statistics) → gate → store → report.
//! Each module imports only the ones below it (tests/it/house_plan.rs
//! holds the code to this list, and this list to its `LAYERS`):
//! `app` (the commands) > `cli` (the flags) > `distributed` (load agents
//! and their controller) > `plan` (a scenario's arm into the engine's
//! inputs) > `live` (a run followed in a browser) > `report` (rendering) > `scenario` > `gate` > `analyze` >
//! `headers` > `metrics` (the limiter's own counters) > `audit` (access
//! logs) > `faults` > `stack` > `load` > `target` > `store` > `events` >
//! `verify` > `files` > `error` > `interrupt`.

// What the binary and the tests use is public; everything else is the
// crate's own (`unreachable_pub` keeps it so).
mod analyze;
pub mod app;
pub mod audit;
pub mod cli;
mod distributed;
pub mod error;
pub mod events;
mod faults;
mod files;
mod gate;
mod headers;
mod interrupt;
mod live;
mod load;
pub mod metrics;
mod plan;
mod report;
pub mod scenario;
pub mod stack;
pub mod store;
mod target;
/// The verifier, a crate of its own (crates/verify): it depends on the
/// policy vocabulary alone, never on the limiters it judges.
pub use rlbench_verify as verify;
