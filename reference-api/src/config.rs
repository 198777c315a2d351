//! What one replica is told at start: who it is, which policy it enforces,
//! where the key comes from. rlbench passes it as JSON on the command line.

use crate::policy::Policy;
use serde::{Deserialize, Serialize};

pub const DEFAULT_KEY_HEADER: &str = "X-Customer-Id";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaConfig {
    /// Name echoed in `X-Replica`, e.g. `r0`.
    pub replica: String,
    pub policy: Policy,
    #[serde(default = "default_key_header")]
    pub key_header: String,
    /// Longer keys get a 400: a key is an identifier, not a payload.
    #[serde(default = "default_max_key_len")]
    pub max_key_len: usize,
    /// Shift of this replica's clock against the wall clock.
    #[serde(default)]
    pub clock_skew_us: i64,
    /// Bound on live per-key states; new keys beyond it are rejected (the
    /// safe direction) rather than evicting live counts.
    #[serde(default = "default_max_keys")]
    pub max_keys: usize,
}

fn default_key_header() -> String {
    DEFAULT_KEY_HEADER.to_string()
}

fn default_max_key_len() -> usize {
    256
}

fn default_max_keys() -> usize {
    1_000_000
}

impl ReplicaConfig {
    pub fn new(replica: impl Into<String>, policy: Policy) -> Self {
        ReplicaConfig {
            replica: replica.into(),
            policy,
            key_header: default_key_header(),
            max_key_len: default_max_key_len(),
            clock_skew_us: 0,
            max_keys: default_max_keys(),
        }
    }
}
