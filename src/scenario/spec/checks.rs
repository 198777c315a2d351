//! `[checks]`: what rlbench does after each arm's load to test the
//! limiter's headers, and the clock rates a scenario may state.

use std::time::Duration;

/// The fastest clock a scenario may state (simulate or declare): 10 %, far
/// beyond any slewing daemon's rate (chrony's default cap is 8.3 %).
pub(crate) const MAX_CLOCK_RATE_PPM: i64 = 100_000;

/// `[checks]`: what rlbench does after each arm's load to test the
/// limiter's headers.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Checks {
    /// Keys whose Retry-After is probed (0: none).
    pub retry_after_probes: u32,
    /// A longer advertised wait is reported, not waited for.
    pub retry_after_max_wait: Duration,
    /// Witnesses kept per kind and arm in summary.json.
    pub witnesses: usize,
    /// How long after the client gave up the server may still decide
    /// (`None`: at any time).
    pub max_server_time: Option<Duration>,
    /// How fast or slow (ppm) a clock rlbench cannot sample may run against
    /// the generator's: a target on another host. Clocks on this machine
    /// are measured during each run and need none.
    pub clock_rate_ppm: Option<i64>,
}

impl Default for Checks {
    fn default() -> Self {
        Checks {
            retry_after_probes: 2,
            retry_after_max_wait: Duration::from_secs(5),
            witnesses: crate::store::records::DEFAULT_WITNESSES,
            max_server_time: None,
            clock_rate_ppm: None,
        }
    }
}
