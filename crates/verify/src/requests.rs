//! A key's requests as the rules see them: the timing the rules are built
//! for, which requests are judged (decided late enough, within memory),
//! and the admits and rejects as items to count over.

use crate::removal::Item;
use crate::trace::{Decided, Obs, Options};
use crate::{false_reject, rules};

pub(crate) fn timing(opts: &Options) -> rules::Timing {
    rules::Timing {
        aligned: opts.aligned,
        lateness_us: opts.lateness_us,
        chunked_refill: opts.chunked_refill,
        chunks_on_epoch: opts.chunks_on_epoch,
        one_clock: opts.one_clock,
        rate_ppm: opts.clock_rate_ppm,
        count_rejected: opts.count_rejected,
        banked: opts.banked_tokens,
    }
}

/// The grid rules' slack: the clock's, plus how far the epoch mapping may
/// be off: its uncertainty at time 0, and how far a clock running at the
/// allowed rate drifts from it by the latest of `items`.
pub(crate) fn grid_slack(opts: &Options, slack: i64, items: &[Item]) -> i64 {
    let latest = items
        .iter()
        .flat_map(|i| [i.x.saturating_abs(), i.y.saturating_abs()])
        .max()
        .unwrap_or(0);
    let drift = (latest as i128 * opts.clock_rate_ppm.max(0) as i128).div_euclid(1_000_000) + 1;
    slack
        .saturating_add(opts.epoch_uncertainty_us.max(0))
        .saturating_add(if opts.clock_rate_ppm > 0 {
            drift as i64
        } else {
            0
        })
}

/// The `[sent, done]` intervals of the requests `keep` selects, with their
/// index among `requests`.
pub(crate) fn items(requests: &[Obs], keep: impl Fn(&Obs) -> bool) -> (Vec<Item>, Vec<usize>) {
    requests
        .iter()
        .enumerate()
        .filter(|(_, o)| keep(o))
        .map(|(i, o)| {
            (
                Item {
                    x: o.sent,
                    y: o.done,
                },
                i,
            )
        })
        .unzip()
}

/// The latest moment a request's decision may have come: its answer, or —
/// without one — any time (or `max_server_time` after the client gave up).
pub(crate) fn latest_decision(o: &Obs, opts: &Options) -> i64 {
    match (o.decided, opts.max_server_time_us) {
        (Decided::Unknown, None) => i64::MAX,
        (Decided::Unknown, Some(t)) => o.done.saturating_add(t.max(0)),
        _ => o.done,
    }
}

/// Admits, and errors and timeouts: what a limiter may have admitted (with
/// `count_rejected`, every request: each may have counted), each until the
/// latest moment it may have been decided.
pub(crate) fn maybe_admits(requests: &[Obs], opts: &Options) -> (Vec<Item>, Vec<usize>) {
    requests
        .iter()
        .enumerate()
        .filter(|(_, o)| opts.count_rejected || o.decided != Decided::Rejected)
        .map(|(i, o)| {
            (
                Item {
                    x: o.sent,
                    y: latest_decision(o, opts),
                },
                i,
            )
        })
        .unzip()
}

/// Rejects that can be judged: with an unknown history, those sent after
/// every request from before the trace was decided (`history_settles_us`)
/// and, for a window, forgotten. (A bucket's simulation starts empty then.)
pub(crate) fn judgeable(rules: &rules::Rules, opts: &Options, o: &Obs) -> bool {
    if !opts.unknown_history {
        return true;
    }
    let settled = opts.history_settles_us.max(0);
    let memory = false_reject::memory(rules.reject).unwrap_or(0);
    o.sent > settled.saturating_add(memory).saturating_add(opts.slack_us)
}

pub(crate) fn rejects(
    requests: &[Obs],
    rules: &rules::Rules,
    opts: &Options,
) -> (Vec<Item>, Vec<usize>) {
    items(requests, |o| {
        o.decided == Decided::Rejected && judgeable(rules, opts, o)
    })
}
