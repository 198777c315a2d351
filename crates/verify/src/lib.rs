//! The verifier: judges a recorded trace against the policy's exact
//! semantics, soundly. A crate of its own that depends on the policy
//! vocabulary (`rlbench-policy`) alone: Cargo keeps it from sharing code
//! with the limiters it judges; tests/it/verify_reference.rs in rlbench
//! holds the checks that run it against the reference API's limiters; its
//! adversarial suite (tests/adversarial) simulates limiters of its own.
//! Time truth is the generator's monotonic clock; each decision happened
//! somewhere inside its request's `[sent, done]`.
//!
//! - definite violations: admits that no timing can explain (a correct
//!   limiter scores zero, whatever the load and jitter);
//! - possible violations: the same with the most favourable timing;
//! - false rejects: 429s a correct limiter would certainly have admitted;
//! - allowed_max, the over-admission bound U: the most admits any correct
//!   limiter could have given the key's decided requests, so that
//!   `admitted / U > 1` is itself a proof;
//! - replay_admits: an ideal limiter's admits over the same send times (a
//!   yardstick only: correct limiters deciding later can pass it).

mod attempts;
mod bounds;
mod counts;
mod false_reject;
mod fenwick;
mod gallop;
mod grid;
mod ideal;
mod judge;
mod positions;
mod remaining;
mod removal;
mod requests;
mod rules;
mod segtree;
mod trace;
mod witness;

pub use bounds::{band, too_slow, Band, TooSlow};
pub use judge::{false_reject_times, judge_key, verify_phase};
pub use remaining::{remaining_against_admits, Remaining};
use rlbench_policy::Policy;
pub use trace::{Decided, Obs, Options, PhaseVerdict, Verdict, MIN_SLACK_US};
pub use witness::{Kind, Witness};

/// The policy's natural window: (limit, span µs) — what `peak_window_ratio`
/// and the admitted-vs-limit chart measure against.
pub fn window(policy: &Policy) -> (u64, i64) {
    rules::for_policy(policy, rules::Timing::default()).peak
}

/// Judges one key's requests.
pub fn verify_key(policy: &Policy, requests: &[Obs], opts: &Options) -> Verdict {
    judge_key(policy, requests, opts, false).0
}

/// Judges every key and adds the verdicts up.
pub fn verify<'a>(
    policy: &Policy,
    keys: impl IntoIterator<Item = &'a [Obs]>,
    opts: &Options,
) -> Verdict {
    let mut total = Verdict::default();
    for requests in keys {
        total.merge(&verify_key(policy, requests, opts));
    }
    total
}

#[cfg(test)]
mod tests;
