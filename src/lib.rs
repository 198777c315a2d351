//! rlbench: load-test rate limiters across real replicas and prove whether
//! they admit what their policy says. The binary's `main.rs` only parses
//! arguments and maps errors to exit codes; everything else lives here.

pub mod scenario;
pub mod verify;
