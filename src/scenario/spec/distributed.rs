//! `[distributed]`'s settings: how many load agents split an arm's
//! schedule, where they coordinate, how long and how far off they may be.

use std::time::Duration;

/// `[distributed]` (or `run --agents`): how many load agents split each
/// arm's schedule, the Redis they coordinate through, and how long the
/// controller waits for them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Distributed {
    pub agents: usize,
    /// A `redis://` URL; `None` in the file means `--coordinator` must say it.
    pub coordinator: Option<String>,
    pub wait: Duration,
    /// The most an agent's times may be off on the controller's time line
    /// before nothing is judged (the gate fails): a wider bound only ever
    /// makes a verdict milder, so an unbounded one could forge a pass.
    pub max_clock_uncertainty: Duration,
}

/// How far an agent's times may be off unless the scenario says more.
pub(crate) const DEFAULT_MAX_CLOCK_UNCERTAINTY: Duration = Duration::from_millis(10);

/// The most agents one run may split a schedule over.
pub(crate) const MAX_AGENTS: usize = 256;

/// How long the controller waits for its agents unless told otherwise.
pub(crate) const DEFAULT_AGENTS_WAIT: Duration = Duration::from_secs(60);
