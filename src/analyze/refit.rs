//! When an arm expected to be correct is proven wrong against the policy
//! it declared, whether another policy explains every one of its
//! decisions: any family and parameters of the probe's grid
//! ([`super::fit`]). If one does, the declared policy is the likelier
//! mistake — a guessed `--policy`, a preset with other settings than the
//! limiter's — and the run says so beside the verdict, with the command
//! that finds the limiter's own (`rlbench probe`). A hint, never a
//! verdict: the arm stays judged against what it declared.
//!
//! Judged on the busiest keys (at most [`KEYS`], each on its first
//! [`PER_KEY`] requests) under the arm's own clock and history options; a
//! policy is named only when it fits every key judged, the likeliest
//! first (`predict`).

use super::fit::{self, Candidate};
use crate::events::read::Record;
use crate::events::{EventsError, Outcome};
use crate::store::summary::PolicyFit;
use crate::verify::{Decided, Obs, Options};
use reference_api::Policy;
use std::collections::HashMap;
use std::path::Path;

/// The keys judged: enough that a fit is no one key's accident, few
/// enough that the grid (hundreds of policies) is judged in a moment.
pub(crate) const KEYS: usize = 3;
/// Requests judged per key, the first ones.
pub(crate) const PER_KEY: usize = 20_000;

/// The tightest policy other than `declared` under which the busiest keys
/// of the trace hold no definite violation and no false reject, if any.
/// `base`: the arm's verifier options; `widen`: each load agent's clock
/// uncertainty (µs), by which its requests' intervals are widened.
pub(crate) fn refit(
    (trace, check): (&Path, crate::events::integrity::Check),
    declared: &Policy,
    base: &Options,
    widen: &[i64],
) -> Result<Option<PolicyFit>, EventsError> {
    let busiest = busiest(trace, check)?;
    if busiest.is_empty() {
        return Ok(None);
    }
    let traces = traces(trace, check, &busiest, widen)?;
    let Some(glance) = traces.first().and_then(|t| fit::glance(t)) else {
        return Ok(None);
    };
    let opts = Options {
        aligned: false,
        chunked_refill: false,
        chunks_on_epoch: false,
        ..*base
    };
    let candidates: Vec<Candidate> = fit::candidates(glance)
        .into_iter()
        .filter(|c| c.policy != *declared)
        .collect();
    // The first key's fits, likeliest first (replayed over its sends,
    // as the probe ranks them: the tightest is not the truth on a trace
    // that never met what sets them apart), kept when every other key
    // holds under them too.
    let tried: Vec<fit::Tried> = fit::judge_walking_sizes(&traces[0], &opts, candidates)
        .into_iter()
        .filter(|t| t.candidate.policy != *declared)
        .collect();
    let decided: Vec<(i64, bool)> = traces[0]
        .iter()
        .filter(|o| o.decided != Decided::Unknown)
        .map(|o| (o.sent, o.decided == Decided::Admitted))
        .collect();
    let likeliest = fit::ranked(&tried, &|c| {
        super::predict::disagreements(c, &decided, base.epoch_offset_us)
    });
    let best = likeliest.into_iter().find(|t| {
        traces[1..].iter().all(|obs| {
            fit::judge(obs, &opts, vec![t.candidate.clone()])
                .iter()
                .all(fit::Tried::fits)
        })
    });
    Ok(best.map(|t| PolicyFit {
        policy_text: t.candidate.describe(),
        inline: t.candidate.inline(),
        rate_ratio: rate(&t.candidate.policy) / rate(declared),
        keys: traces.len() as u64,
        requests: traces.iter().map(|t| t.len() as u64).sum(),
    }))
}

/// Admits a second over the long run.
fn rate(p: &Policy) -> f64 {
    let (quota, window_us) = p.quota();
    quota as f64 * 1e6 / window_us.max(1) as f64
}

/// The trace's key numbers with the most decided requests, busiest first.
fn busiest(trace: &Path, check: crate::events::integrity::Check) -> Result<Vec<u32>, EventsError> {
    let mut decided: HashMap<u32, u64> = HashMap::new();
    for record in crate::events::read::records(trace, check)? {
        if let Record::Event(key, e) = record? {
            if matches!(e.outcome, Outcome::Admitted | Outcome::Rejected) {
                *decided.entry(key).or_default() += 1;
            }
        }
    }
    let mut keys: Vec<(u32, u64)> = decided.into_iter().collect();
    keys.sort_by_key(|&(key, n)| (std::cmp::Reverse(n), key));
    Ok(keys.into_iter().take(KEYS).map(|(key, _)| key).collect())
}

/// The requests of `keys` (their first [`PER_KEY`]), in that order, each
/// sorted by send time.
fn traces(
    trace: &Path,
    check: crate::events::integrity::Check,
    keys: &[u32],
    widen: &[i64],
) -> Result<Vec<Vec<Obs>>, EventsError> {
    let mut out: Vec<Vec<Obs>> = vec![Vec::new(); keys.len()];
    for record in crate::events::read::records(trace, check)? {
        let Record::Event(key, e) = record? else {
            continue;
        };
        let Some(i) = keys.iter().position(|&k| k == key) else {
            continue;
        };
        if out[i].len() >= PER_KEY {
            continue;
        }
        let w = widen.get(e.agent as usize).copied().unwrap_or(0);
        out[i].push(Obs {
            sent: e.sent_us as i64 - w,
            done: e.done_us as i64 + w,
            decided: match e.outcome {
                Outcome::Admitted => Decided::Admitted,
                Outcome::Rejected => Decided::Rejected,
                Outcome::Error | Outcome::Timeout => Decided::Unknown,
            },
        });
    }
    for obs in &mut out {
        obs.sort_by_key(|o| o.sent);
    }
    Ok(out)
}
