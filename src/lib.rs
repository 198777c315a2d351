//! rlbench: load-test rate limiters across real replicas and prove whether
//! they admit what their policy says. The binary's `main.rs` only parses
//! arguments, calls in here, and maps errors to exit codes.
//!
//! Data flow: scenario → (per arm) stack up → load → stack down →
//! analyze (verify + stats) → report → gate.

pub mod advertised;
pub mod analyze;
pub mod attack;
pub mod cli;
pub mod compare;
pub mod doctor;
pub mod error;
pub mod events;
pub mod explain;
pub mod faults;
pub mod gate;
pub mod header_checks;
pub mod init;
pub mod interrupt;
pub mod load;
pub mod phases;
pub mod preflight;
pub mod probe;
pub mod progress;
pub mod rebuild;
pub mod record;
pub mod report;
pub mod run;
pub mod scenario;
pub mod serve;
pub mod stack;
pub mod target;
pub mod verify;
pub mod witnesses;
