//! rlbench: load-test rate limiters across real replicas and prove whether
//! they admit what their policy says. The binary's `main.rs` only parses
//! arguments, calls `app::commands::execute`, writes what it said and exits.
//!
//! Data flow: scenario → (per arm) stack up → load ∥ faults → events →
//! stack down → analyze (verify, statistics) → gate → store → report.
//! Each module imports only the ones below it (tests/house_plan.rs):
//! `app` (the commands) > `report` (rendering) > `scenario` > `gate` >
//! `analyze` > `headers` > `faults` > `stack` > `load` > `target` >
//! `store` > `events` > `verify` > `files` > `error`, `interrupt`, `cli`.

// What the binary and the tests use is public; everything else is the
// crate's own (`unreachable_pub` keeps it so).
mod analyze;
pub mod app;
pub mod audit;
pub mod cli;
pub mod error;
pub mod events;
mod faults;
mod files;
mod gate;
mod headers;
mod interrupt;
mod load;
pub mod metrics;
mod report;
pub mod scenario;
pub mod stack;
pub mod store;
mod target;
/// The verifier, a crate of its own (crates/verify): it depends on the
/// policy vocabulary alone, never on the limiters it judges.
pub use rlbench_verify as verify;
