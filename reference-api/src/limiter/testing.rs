//! Helpers for the algorithms' unit tests.

use super::contract::Algorithm;

/// Runs `algorithm` over request times (µs) for one key; returns which were admitted.
pub(super) fn admits<A: Algorithm>(algorithm: &A, times: &[i64]) -> Vec<bool> {
    let mut state = algorithm.fresh(times[0]);
    times
        .iter()
        .map(|&t| algorithm.decide(&mut state, t).allowed)
        .collect()
}

pub(super) fn count(admits: &[bool]) -> usize {
    admits.iter().filter(|a| **a).count()
}
