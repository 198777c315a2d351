//! Step 5, confirm: the starter's own load (its keys, its rate) for a few
//! seconds on fresh keys, each key's trace judged under every fit; what a
//! run of the starter would disprove goes now, not in the user's first run.

use super::asked::interrupted;
use super::fitting::Trace;
use super::grid::{decisions, observations_of, proposal};
use super::keys;
use super::probing::{Probing, Step, Stop};
use super::starter;
use crate::analyze::{fit, predict};
use crate::events::Event;
use crate::verify::{self, Obs};
use std::collections::BTreeMap;

/// The fits the confirmation left.
pub(super) struct Confirmed<'t> {
    /// Likeliest first.
    pub fits: Vec<&'t fit::Tried>,
    /// The requests it sent (0 when it was not sent).
    pub requests: usize,
}

/// Sends the best fit's starter load, when the budget allows it, and
/// keeps the fits that explain it too.
pub(super) async fn confirm<'t>(
    pr: &mut Probing<'_>,
    trace: &Trace,
    fits: Vec<&'t fit::Tried>,
    glance: Option<fit::Glance>,
    key: Option<&keys::Candidate>,
) -> Step<Confirmed<'t>> {
    // The starter's policy: the proposal.
    let Some(best) = proposal(&fits, &trace.events, trace.epoch_offset) else {
        return Ok(Confirmed { fits, requests: 0 });
    };
    let load = starter::starter_load(&best.candidate, glance, key.is_some());
    let window_s = best.candidate.policy.quota().1 as f64 / 1e6;
    let secs = (3.0 * window_s).clamp(3.0, 8.0);
    let rate = load.rate as f64;
    let count = ((rate * secs) as u64).min(pr.budget.requests);
    if pr.interrupt.fired() || count < load.rate || !pr.budget.allows(count, rate) {
        pr.say("  confirm: the budget ends before the starter's load is tried (--max-time)")?;
        return Ok(Confirmed { fits, requests: 0 });
    }
    let (tag, no) = pr.next_tag();
    let phase = pr.phase(pr.sending(key, &tag, no, load.keys), rate, count, load.keys);
    let s = pr.send(phase, trace.start).await;
    if s.interrupted {
        return Err(Stop::Concluded(interrupted()));
    }
    let before = fits.len();
    let fits = narrow(fits, &s.events, trace);
    pr.say(&format!(
        "  confirm: {} requests at {rate:.0}/s over {} fresh key{}, as the starter \
         sends them: {} of {before} fits left",
        s.events.len(),
        load.keys,
        if load.keys == 1 { "" } else { "s" },
        fits.len()
    ))?;
    Ok(Confirmed {
        fits,
        requests: s.events.len(),
    })
}

/// The `fits` that explain each fresh key's trace in `events` too, ranked
/// again on every trace's replays.
fn narrow<'t>(
    mut fits: Vec<&'t fit::Tried>,
    events: &[Event],
    trace: &Trace,
) -> Vec<&'t fit::Tried> {
    let mut by_key: BTreeMap<&str, Vec<Event>> = BTreeMap::new();
    for e in events {
        by_key.entry(e.key.as_str()).or_default().push(e.clone());
    }
    let traces: Vec<Vec<Obs>> = by_key.values().map(|e| observations_of(e)).collect();
    fits.retain(|t| {
        let opts = t.candidate.options(&trace.opts);
        traces.iter().all(|obs| {
            let v = verify::verify_key(&t.candidate.policy, obs, &opts);
            v.definite_violations == 0 && v.false_rejects == 0
        })
    });
    // Ranked again on every trace's replays.
    let decided: Vec<Vec<(i64, bool)>> = std::iter::once(decisions(&trace.events))
        .chain(by_key.values().map(|e| decisions(e)))
        .collect();
    fit::rerank(fits, &|c| {
        decided
            .iter()
            .map(|d| predict::disagreements(c, d, trace.epoch_offset))
            .sum()
    })
}
