//! Adversarial property tests for the verifier, from the outside.
//!
//! The verifier promises that a *correct* limiter scores exactly zero
//! definite violations, zero false rejects and zero `remaining`
//! contradictions, whatever the load, the jitter, the history before the
//! trace, late replenishment or clocks within the stated slack. This file
//! tries hard to break that promise, and checks the other direction: a
//! limiter that really admits too much is caught, for a stated share of its
//! excess.
//!
//! The simulated limiters are written here from the algorithms' textbook
//! semantics, independently of the verifier and of `reference_api`'s
//! limiters (a shared bug would cancel itself out). They run on an event
//! clock: every request has an interval `[sent, done]` on the client clock
//! and the limiter decides it at one instant chosen adversarially (at the
//! start, at the end, or — probing a copy of the limiter first — admits late
//! and rejects early, or the reverse). The deciding replica reads its own
//! clock, possibly offset from the others by less than the slack, possibly
//! truncated to whole milliseconds, possibly some time *before* it takes the
//! lock (stamp-then-lock: the limiter then sees time go backwards and does
//! what real implementations do). Errors and timeouts are recorded as
//! `Unknown`; the server may still decide them after the client gave up, or
//! never.
//!
//! Sections: simulated limiters; the event simulation; the case generator;
//! the judge and the minimiser (a failure is shrunk to a small trace that
//! can be checked by hand and printed as code); correct limiters, one test
//! per limiter; hand-minimised regressions; mutants.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rlbench_policy::{Policy, Rate};
use rlbench_verify::{
    band, remaining_against_admits, verify_key, Decided, Obs, Options, Remaining, Verdict,
};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt::Write as _;

mod arrivals;
mod cases;
mod clocks;
mod correct;
mod judge;
mod kinds;
mod limiters;
mod mutants;
mod regressions;
mod sharpness;
mod sim;
mod stale;

/// Seeds per kind of case and limiter: 600, or `ADVERSARIAL_CASES` (the
/// long pass: `ADVERSARIAL_CASES=1500 cargo test --release -p
/// rlbench-verify --test adversarial`).
pub(crate) fn cases() -> u64 {
    std::env::var("ADVERSARIAL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600)
}

use arrivals::*;
use cases::*;
use clocks::*;
use judge::*;
use kinds::*;
use limiters::*;
use sim::*;
