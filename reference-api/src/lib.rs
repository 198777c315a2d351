//! The reference rate-limited API: the service rlbench starts as N replica
//! processes. It is a library so that rlbench can link it and re-execute
//! itself as a replica; `main.rs` is a thin standalone entry point.

pub mod clock;
pub mod config;
pub mod headers;
pub mod identity;
pub mod limiter;
pub mod listen;
pub mod metrics;
pub mod otlp;
/// The policy vocabulary, from its own crate (the verifier reads it too).
pub use rlbench_policy as policy;
pub mod redis_url;
pub mod replica;
pub mod server;

pub use config::ReplicaConfig;
pub use policy::{Policy, Rate};
