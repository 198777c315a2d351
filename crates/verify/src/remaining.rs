//! The `remaining` header held against the admits: a limited answer B
//! contradicts an earlier answer A that said `remaining = R` when fewer than
//! R requests could have been admitted between A's decision and B's. Sound
//! for any algorithm whose spare capacity only grows with time and shrinks
//! only by admits (all of the declared ones), as long as rlbench is the
//! target's only client.

use crate::near::partition_point_near;
use crate::{Decided, Obs, Options};

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
/// request may have used the capacity up.
pub fn remaining_against_admits(
    key: &str,
    obs: &[Obs],
    witnesses: &[(u32, u32)],
    opts: &Options,
    out: &mut Remaining,
) {
    let slack = opts.slack_us.max(0);
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
        let contradiction = witnesses[before.saturating_sub(WITNESSES)..before]
            .iter()
            .rev()
            .find_map(|&(a, promised, excluded)| {
                // Possibly between A's decision and B's: sent before B was
                // done (plus slack), and not surely decided before A was
                // sent (less slack). A's own admit is in its remaining.
                let own = a.decided == Decided::Admitted;
                let maybe = (sent_before_b - excluded).saturating_sub(usize::from(own));
                (promised > maybe as u64).then_some((a, promised, maybe))
            });
        if let Some((a, promised, maybe)) = contradiction {
            out.contradicted += 1;
            if out.example.is_none() {
                out.example = Some(format!(
                    "{key}: an answer at {:.3} s said remaining {promised}, yet the request \
                     sent at {:.3} s was limited with at most {maybe} admitted in between",
                    a.done as f64 / 1e6,
                    b.sent as f64 / 1e6
                ));
            }
        }
    }
}
