//! The `remaining` header held against the admits: a limited answer B
//! contradicts an earlier answer A that said `remaining = R` when fewer than
//! R requests could have been admitted between A's decision and B's. Sound
//! for any algorithm whose spare capacity only grows with time and shrinks
//! only by admits (all of the declared ones), as long as rlbench is the
//! target's only client.
//!
//! One exception is allowed for: a bucket or a GCRA whose deciders read
//! their clock before they take the state (several replicas, governor's
//! compare-and-swap loop, a store given the app's time). B may read its
//! clock at its send and reach the state at its answer, after admits that
//! read later clocks: it then sees their theoretical arrival time (or
//! `last`) "from the future", and rejects while the refill of that stretch
//! is still missing. Those readings lie between B's (≥ B's send less the
//! slack) and B's own step (≤ B's answer plus the slack), so at most
//! `x = rate·(done − sent + 2σ)` tokens are missing. A's capacity after its
//! admit was at least R, k admits at most came between, and B saw less
//! than one token: `R − k − x < 1`, so B contradicts A only when
//! `R > k + ⌈x⌉` (R and k are whole). The false-reject check allows for
//! the same stretch.
//! Without a policy nothing bounds that refill, so nothing is held
//! against the header unless every decision reads one clock.

use crate::gallop::partition_point_near;
use crate::rules::grow;
use crate::{Decided, Obs, Options};
use rlbench_policy::{Policy, Rate};

/// How many of the latest earlier answers each limited answer is held against.
const WITNESSES: usize = 4;

/// What the check found, summed over keys by the caller.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Remaining {
    /// Limited answers held against earlier `remaining` values.
    pub checked: u64,
    /// Of those, limited although an earlier answer promised spare capacity
    /// that rlbench's requests could not have used up.
    pub contradicted: u64,
    /// The first contradiction, in words.
    pub example: Option<String>,
}

/// For each limited answer of one key (`obs`, in any order), the latest few
/// earlier answers that advertised spare capacity (`witnesses`: index into
/// `obs` and the remaining it advertised): was that possibly used up in
/// between? An earlier answer counts only when it came more than the
/// verifier's slack before the limited request was sent (two deciders'
/// clocks may differ by that much), and a request without an answer may
/// have been admitted at any time after its send (or up to the declared
/// server time after the client gave up); with `count_rejected`, every
/// request may have used the capacity up. `policy`: what the limiter
/// enforces, when declared (a bucket's stale readings are allowed for; see
/// the module's words).
pub fn remaining_against_admits(
    key: &str,
    policy: Option<&Policy>,
    obs: &[Obs],
    witnesses: &[(u32, u32)],
    opts: &Options,
    out: &mut Remaining,
) {
    let slack = opts.slack_us.max(0);
    let Some(stale) = stale_refill(policy, opts) else {
        return;
    };
    let mut witnesses: Vec<(Obs, u64)> = witnesses
        .iter()
        .filter(|&&(_, r)| r > 0)
        .filter_map(|&(i, r)| Some((*obs.get(i as usize)?, u64::from(r))))
        .collect();
    if witnesses.is_empty() {
        return;
    }
    witnesses.sort_by_key(|(w, _)| w.done);
    // Requests that may have been admitted (an unanswered one may have),
    // with the latest moment each may have been decided.
    let mut sents: Vec<i64> = Vec::new();
    let mut lasts: Vec<i64> = Vec::new();
    // With a limiter that counts rejected attempts, rejects use it up too.
    for o in obs
        .iter()
        .filter(|o| opts.count_rejected || o.decided != Decided::Rejected)
    {
        sents.push(o.sent);
        lasts.push(match (o.decided, opts.max_server_time_us) {
            (Decided::Unknown, None) => i64::MAX,
            (Decided::Unknown, Some(t)) => o.done.saturating_add(t.max(0)),
            _ => o.done,
        });
    }
    sents.sort();
    lasts.sort();
    // Per witness A: the requests surely decided before A was sent (less
    // the slack), which cannot have used A's remaining up.
    let mut hint = 0;
    let witnesses: Vec<(Obs, u64, usize)> = witnesses
        .into_iter()
        .map(|(a, promised)| {
            hint = partition_point_near(&lasts, hint, |&d| d < a.sent.saturating_sub(slack));
            (a, promised, hint)
        })
        .collect();
    // A key's requests come nearly in order: each search starts where the
    // one for the limited answer before ended.
    let (mut before, mut sent_before_b) = (0, 0);
    for b in obs.iter().filter(|o| o.decided == Decided::Rejected) {
        // Witnesses decided surely before B, by more than the slack.
        before = partition_point_near(&witnesses, before, |(w, _, _)| {
            w.done.saturating_add(slack) < b.sent
        });
        if before == 0 {
            continue;
        }
        out.checked += 1;
        // Requests sent before B was done (plus slack).
        sent_before_b =
            partition_point_near(&sents, sent_before_b, |&s| s < b.done.saturating_add(slack));
        let missing = stale.map_or(0, |rate| {
            missing_refill(rate, b, slack, opts.clock_rate_ppm)
        });
        let contradiction = witnesses[before.saturating_sub(WITNESSES)..before]
            .iter()
            .rev()
            .find_map(|&(a, promised, excluded)| {
                // Possibly between A's decision and B's: sent before B was
                // done (plus slack), and not surely decided before A was
                // sent (less slack). A's own admit is in its remaining.
                let own = a.decided == Decided::Admitted;
                let maybe = (sent_before_b - excluded).saturating_sub(usize::from(own)) as u64;
                (promised > maybe.saturating_add(missing)).then_some((a, promised, maybe))
            });
        if let Some((a, promised, maybe)) = contradiction {
            out.contradicted += 1;
            if out.example.is_none() {
                let refill = if missing > 0 {
                    format!(" (and at most {missing} tokens of refill it may not have seen)")
                } else {
                    String::new()
                };
                out.example = Some(format!(
                    "{key}: an answer at {:.3} s said remaining {promised}, yet the request \
                     sent at {:.3} s was limited with at most {maybe} admitted in between{refill}",
                    a.done as f64 / 1e6,
                    b.sent as f64 / 1e6
                ));
            }
        }
    }
}

/// Whether the check may run, and with what allowance: `Some(None)` when
/// a limited answer sees every refill (a window policy; or one clock read
/// inside each atomic step), `Some(Some(rate))` for a bucket or GCRA whose
/// readings may come before its step, `None` (no check) when the policy is
/// unknown and the clocks may be read out of order.
fn stale_refill(policy: Option<&Policy>, opts: &Options) -> Option<Option<Rate>> {
    if opts.one_clock {
        return Some(None);
    }
    match policy? {
        Policy::TokenBucket { refill: rate, .. } | Policy::Gcra { rate, .. } => Some(Some(*rate)),
        _ => Some(None),
    }
}

/// The tokens a bucket refilling at `rate` gains over the stretch a stale
/// reading of the limited request `b` may miss, rounded up:
/// `⌈rate·(done − sent + 2σ)⌉`, that stretch as long as a clock running
/// `ppm` fast may make it.
fn missing_refill(rate: Rate, b: &Obs, slack: i64, ppm: i64) -> u64 {
    let stretch = (b.done - b.sent).max(0).saturating_add(2 * slack);
    let stretch = grow(stretch, ppm.max(0)) as i128;
    let per = rate.per_us.max(1) as i128;
    let tokens = (rate.count as i128 * stretch + per - 1) / per;
    u64::try_from(tokens).unwrap_or(u64::MAX)
}
