//! What a load is asked to do ([`Plan`]: targets, request template,
//! schedule, keys, bounds and retries) and the live counts it keeps while it runs.

use crate::load::pick::{Fanout, KeyDistribution};
use crate::load::request::Template;
use crate::load::schedule::Shape;
use hyper::Uri;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

pub(crate) struct Plan {
    pub targets: Vec<Uri>,
    /// Method, extra headers and the key's header.
    pub template: Template,
    pub shape: Shape,
    pub duration: Duration,
    pub keys: u32,
    pub key_distribution: KeyDistribution,
    pub fanout: Fanout,
    pub seed: u64,
    pub timeout: Duration,
    pub max_in_flight: usize,
    /// Callers that retry limited answers (`[load] retry`); `None`: never.
    pub retry: Option<crate::load::retry::Retry>,
}

/// Live counts, for progress lines while the load runs.
#[derive(Default)]
pub(crate) struct Counters {
    pub done: AtomicU64,
    pub admitted: AtomicU64,
    pub rejected: AtomicU64,
    pub failed: AtomicU64,
}
