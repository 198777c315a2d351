//! The clocks a case is decided by: the limiter clock's resolution, the
//! deciders and how far apart their clocks are, stale readings, and the
//! slack the verifier is told (their sum).

use super::*;

pub(crate) struct Clocks {
    /// The limiter reads whole steps of this many µs.
    pub(crate) resolution: i64,
    /// Wall µs at trace time 0.
    pub(crate) epoch: i64,
    pub(crate) deciders: usize,
    /// How far apart the deciders' clocks may be (µs).
    pub(crate) spread: i64,
    /// Each decider's offset from the true wall clock.
    pub(crate) offsets: Vec<i64>,
    /// The share of decisions whose reading was taken before the state.
    pub(crate) reorder: f64,
    /// What the verifier is told: spread + resolution (+ extra).
    pub(crate) slack: i64,
}

/// Draws a case's clocks, in the order the case generator always has (the
/// seeds' cases stay the same). `asp`: one ASP.NET process.
pub(crate) fn draw_clocks(rng: &mut SmallRng, asp: bool) -> Clocks {
    // Clocks. An ASP.NET limiter is one process on one monotonic clock.
    // The resolution and the deciders' skew are drawn apart (a millisecond
    // `Date.now()` on servers 0.9 ms apart, whole seconds on servers 1 ms
    // apart: src/tests/resolution_plus_skew.rs): µs, ms, or coarse — up
    // to 20 ms, as coarse as the whole windows drawn here.
    let resolution = if asp {
        1
    } else {
        match rng.random_range(0..20) {
            0..=7 => 1,
            8..=13 => 1_000,
            14..=16 => rng.random_range(2..=2_000),
            _ => rng.random_range(2_000..=20_000),
        }
    };
    let epoch = 1_790_000_000_000_000 + rng.random_range(0..1_000_000_000_000i64);
    let deciders = if asp { 1 } else { rng.random_range(1..=3usize) };
    let spread = if deciders == 1 {
        0
    } else {
        match rng.random_range(0..5) {
            0 => 0,
            1 => 40,
            2 => 300,
            3 => 1_000,
            _ => rng.random_range(1..=5_000),
        }
    };
    // Within [base, base + spread]: pairwise within the spread, and each
    // within the spread of the true wall clock.
    let base = -rng.random_range(0..=spread);
    let offsets: Vec<i64> = (0..deciders)
        .map(|_| base + rng.random_range(0..=spread))
        .collect();
    let reorder = if asp {
        0.0
    } else {
        pick(rng, &[0.0, 0.3, 1.0])
    };
    // The slack the clocks need: the replicas' spread plus the resolution
    // (the client clock's own microsecond at least) — their sum, as the
    // contract states; rlbench floors it at 1 ms (`Options::slack_for`),
    // which only makes a verdict milder, so the suite judges the sum.
    let slack = spread
        + resolution
        + if rng.random_bool(0.3) {
            rng.random_range(0..=1_000)
        } else {
            0
        };
    Clocks {
        resolution,
        epoch,
        deciders,
        spread,
        offsets,
        reorder,
        slack,
    }
}
