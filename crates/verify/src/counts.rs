//! Counting what a key's admits break: the fewest of them that must be
//! wrong (definite violations), the most that may be (possible ones), and
//! the most admits a correct limiter could have given (the bound U).

use crate::removal::Item;
use crate::requests::{grid_slack, items};
use crate::trace::{Decided, Obs, Options};
use crate::{attempts, grid, removal, rules};

/// The fewest of the admits `items` to drop so that no rule of the policy
/// is broken. With a limiter that counts every attempt, the admits the
/// attempts before them already rule out (`attempts`: every decided
/// request) are all dropped, and the rest must still keep the rules.
pub(crate) fn fewest_wrong(
    rules: &rules::Rules,
    items: &[Item],
    attempts: &[Item],
    opts: &Options,
    slack: i64,
) -> u64 {
    let Some(check) = rules.attempts else {
        return most_removals(rules, items, opts, slack);
    };
    let refused = attempts::refused(check, items, attempts, slack);
    let kept: Vec<Item> = items
        .iter()
        .zip(&refused)
        .filter(|(_, r)| r.is_none())
        .map(|(i, _)| *i)
        .collect();
    (items.len() - kept.len()) as u64 + most_removals(rules, &kept, opts, slack)
}

/// The fewest of `items` to drop so that no rule of the policy is broken.
pub(crate) fn most_removals(
    rules: &rules::Rules,
    items: &[Item],
    opts: &Options,
    slack: i64,
) -> u64 {
    let on_grid = rules.grid.map_or(0, |g| {
        grid::min_removals(
            items,
            g,
            opts.epoch_offset_us,
            grid_slack(opts, slack, items),
        )
    });
    rules
        .definite
        .iter()
        .filter(|r| r.useful(items, slack))
        .map(|r| match r.shorter_than {
            None => removal::min_removals(items, r.bound, slack),
            Some(_) => removal::min_removals(&applicable(r, items, slack).0, r.bound, slack),
        })
        .fold(on_grid, u64::max)
}

/// The items a rule speaks of (all, or those with short intervals), with
/// their index among `items`.
pub(crate) fn applicable(
    rule: &rules::Rule,
    items: &[Item],
    slack: i64,
) -> (Vec<Item>, Vec<usize>) {
    items
        .iter()
        .enumerate()
        .filter(|(_, it)| {
            rule.shorter_than
                .map_or(true, |g| (it.y - it.x).abs().saturating_add(slack) < g)
        })
        .map(|(i, it)| (*it, i))
        .unzip()
}

/// The over-admission bound U of one key: its decided requests K (admits
/// and rejects, each decided inside its `[sent, done]`) less the fewest of
/// them any rule makes us drop. A correct limiter's admits are a subset of
/// K that breaks no rule, so for each rule r they number at most
/// `|K| − minRemovals_r(K)`. And since dropping K's other requests and
/// then the admits' own excess leaves a subset that breaks no rule,
/// `minRemovals_r(K) ≤ |K| − admitted + minRemovals_r(admits)`: an arm
/// admits more than U only by at most its definite violations.
/// With a limiter that counts every attempt, a request the attempts before
/// it rule out could not have been an admit either, and U is that of the
/// rest.
pub(crate) fn admit_bound(rules: &rules::Rules, requests: &[Obs], opts: &Options) -> u64 {
    let (decided, _) = items(requests, |o| o.decided != Decided::Unknown);
    let n = decided.len() as u64;
    n - fewest_wrong(rules, &decided, &decided, opts, opts.slack_us).min(n)
}
