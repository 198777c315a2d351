//! The verifier: judges a recorded trace against the policy's exact
//! semantics, soundly. A crate of its own that depends on the policy
//! vocabulary (`rlbench-policy`) alone: Cargo keeps it from sharing code
//! with the limiters it judges; tests/verify_reference.rs in rlbench
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
mod false_reject;
mod fenwick;
mod gallop;
mod grid;
mod ideal;
mod positions;
mod remaining;
mod removal;
mod rules;
mod segtree;
mod trace;
mod witness;

use false_reject::start;
pub use remaining::{remaining_against_admits, Remaining};
use removal::Item;
use rlbench_policy::Policy;
pub use trace::{Decided, Obs, Options, PhaseVerdict, Verdict};
pub use witness::{Kind, Witness};

/// The policy's natural window: (limit, span µs) — what `peak_window_ratio`
/// and the admitted-vs-limit chart measure against.
pub fn window(policy: &Policy) -> (u64, i64) {
    rules::for_policy(policy, rules::Timing::default()).peak
}

/// The most admits a correct limiter may decide within any span shorter
/// than `span_us` (µs on the trace's clock, the policy's window shrunk by
/// the clocks' rate and the slack), and the rule that says so in words:
/// what the admitted-vs-allowed chart draws as the band a correct run stays
/// inside. The least of the rules that hold for any alignment and any
/// request (the grid's and those that need short intervals left out, so
/// the band is never tighter than a rule the verifier applies). `None`
/// when no such rule bounds a span that short.
pub fn band(policy: &Policy, opts: &Options) -> Option<Band> {
    let t = timing(opts);
    let rules = rules::for_policy(policy, t);
    // Admits counted in a span shorter than `span` are held, slack and
    // all, for less than `held`: a rule for spans up to `held` applies.
    let held = rules::shrink(rules.peak.1, t.rate_ppm);
    let span = held.saturating_sub(opts.slack_us.max(0)).max(1);
    let (limit, _) = rules.peak;
    rules
        .definite
        .iter()
        .filter(|r| r.shorter_than.is_none())
        .filter_map(|r| {
            let most = match r.bound {
                removal::Bound::Window { limit, span: s, .. } => (held <= s).then_some(limit),
                removal::Bound::Linear {
                    burst,
                    count,
                    per,
                    max_span,
                } => max_span
                    .map_or(true, |m| held <= m)
                    .then(|| burst + (held as u128 * count as u128 / per.max(1) as u128) as u64),
            }?;
            Some((most, r))
        })
        .min_by_key(|(most, _)| *most)
        .map(|(most, r)| Band {
            span_us: span,
            limit,
            most,
            why: r.words(policy),
        })
}

/// See [`band`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Band {
    /// Spans shorter than this (µs) hold at most `most` admits.
    pub span_us: i64,
    /// The policy's limit per its natural window.
    pub limit: u64,
    pub most: u64,
    /// The rule, with the policy's numbers.
    pub why: String,
}

/// Where answers become too slow for the policy's sharp rules: admits
/// whose interval plus slack reaches `from_us` fit in no span those rules
/// count in, and only `left` can be proven of them (a segmented window on
/// several clocks: its segments' rate; a sliding log: nothing). `None`
/// when every rule speaks of admits however slow (buckets, fixed windows).
/// [`Verdict::slow_admits`] counts them.
pub fn too_slow(policy: &Policy, opts: &Options) -> Option<TooSlow> {
    let slow = rules::for_policy(policy, timing(opts)).slow?;
    let left = match *policy {
        Policy::SlidingWindow {
            limit,
            window_us,
            segments,
        } => format!(
            "only more than {limit} per segment of {} s over long spans",
            (window_us / segments.max(1)) as f64 / 1e6
        ),
        _ => "nothing".to_string(),
    };
    Some(TooSlow {
        from_us: slow.from,
        left,
    })
}

/// See [`too_slow`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TooSlow {
    /// Interval plus slack (µs) from which an admit is too slow.
    pub from_us: i64,
    /// What can still be proven of such admits, in words.
    pub left: String,
}

fn timing(opts: &Options) -> rules::Timing {
    rules::Timing {
        aligned: opts.aligned,
        lateness_us: opts.lateness_us,
        chunked_refill: opts.chunked_refill,
        chunks_on_epoch: opts.chunks_on_epoch,
        one_clock: opts.one_clock,
        rate_ppm: opts.clock_rate_ppm,
        count_rejected: opts.count_rejected,
    }
}

/// The grid rules' slack: the clock's, plus how far the epoch mapping may
/// be off: its uncertainty at time 0, and how far a clock running at the
/// allowed rate drifts from it by the latest of `items`.
fn grid_slack(opts: &Options, slack: i64, items: &[Item]) -> i64 {
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

/// The fewest of the admits `items` to drop so that no rule of the policy
/// is broken. With a limiter that counts every attempt, the admits the
/// attempts before them already rule out (`attempts`: every decided
/// request) are all dropped, and the rest must still keep the rules.
fn fewest_wrong(
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
fn most_removals(rules: &rules::Rules, items: &[Item], opts: &Options, slack: i64) -> u64 {
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
fn applicable(rule: &rules::Rule, items: &[Item], slack: i64) -> (Vec<Item>, Vec<usize>) {
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
fn admit_bound(rules: &rules::Rules, requests: &[Obs], opts: &Options) -> u64 {
    let (decided, _) = items(requests, |o| o.decided != Decided::Unknown);
    let n = decided.len() as u64;
    n - fewest_wrong(rules, &decided, &decided, opts, opts.slack_us).min(n)
}

/// The `[sent, done]` intervals of the requests `keep` selects, with their
/// index among `requests`.
fn items(requests: &[Obs], keep: impl Fn(&Obs) -> bool) -> (Vec<Item>, Vec<usize>) {
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
fn latest_decision(o: &Obs, opts: &Options) -> i64 {
    match (o.decided, opts.max_server_time_us) {
        (Decided::Unknown, None) => i64::MAX,
        (Decided::Unknown, Some(t)) => o.done.saturating_add(t.max(0)),
        _ => o.done,
    }
}

/// Admits, and errors and timeouts: what a limiter may have admitted (with
/// `count_rejected`, every request: each may have counted), each until the
/// latest moment it may have been decided.
fn maybe_admits(requests: &[Obs], opts: &Options) -> (Vec<Item>, Vec<usize>) {
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
fn judgeable(rules: &rules::Rules, opts: &Options, o: &Obs) -> bool {
    if !opts.unknown_history {
        return true;
    }
    let settled = opts.history_settles_us.max(0);
    let memory = false_reject::memory(rules.reject).unwrap_or(0);
    o.sent > settled.saturating_add(memory).saturating_add(opts.slack_us)
}

fn rejects(requests: &[Obs], rules: &rules::Rules, opts: &Options) -> (Vec<Item>, Vec<usize>) {
    items(requests, |o| {
        o.decided == Decided::Rejected && judgeable(rules, opts, o)
    })
}

/// Judges the requests of one key sent in `[from, to)` (µs).
pub fn verify_phase(
    policy: &Policy,
    requests: &[Obs],
    opts: &Options,
    from: i64,
    to: i64,
) -> PhaseVerdict {
    let rules = rules::for_policy(policy, timing(opts));
    let admits_before =
        |t: i64| items(requests, |o| o.decided == Decided::Admitted && o.sent < t).0;
    let (all_rejects, _) = rejects(requests, &rules, opts);
    let in_phase: Vec<Item> = all_rejects
        .into_iter()
        .filter(|r| r.x >= from && r.x < to)
        .collect();
    let (decided, _) = items(requests, |o| o.decided != Decided::Unknown);
    let wrong = |t: i64| fewest_wrong(&rules, &admits_before(t), &decided, opts, opts.slack_us);
    let (upto, before) = (wrong(to), wrong(from));
    PhaseVerdict {
        definite_violations: upto.saturating_sub(before),
        false_rejects: false_reject::count(
            rules.reject,
            &maybe_admits(requests, opts).0,
            &in_phase,
            opts.slack_us,
            start(opts),
        ),
    }
}

/// The false rejects of one key as (sent, done) µs.
pub fn false_reject_times(policy: &Policy, requests: &[Obs], opts: &Options) -> Vec<(i64, i64)> {
    let rules = rules::for_policy(policy, timing(opts));
    let (rejects, _) = rejects(requests, &rules, opts);
    false_reject::flags(
        rules.reject,
        &maybe_admits(requests, opts).0,
        &rejects,
        opts.slack_us,
        start(opts),
    )
    .into_iter()
    .zip(&rejects)
    .filter(|(f, _)| f.is_some())
    .map(|(_, r)| (r.x, r.y))
    .collect()
}

/// Judges one key's requests.
pub fn verify_key(policy: &Policy, requests: &[Obs], opts: &Options) -> Verdict {
    judge_key(policy, requests, opts, false).0
}

/// Judges one key's requests and, when `witness`, proves its verdicts: the
/// first and the largest violation and false reject of the key.
pub fn judge_key(
    policy: &Policy,
    requests: &[Obs],
    opts: &Options,
    witness: bool,
) -> (Verdict, Vec<Witness>) {
    let rules = rules::for_policy(policy, timing(opts));
    let (admits, admit_at) = items(requests, |o| o.decided == Decided::Admitted);
    let (maybe, maybe_at) = maybe_admits(requests, opts);
    let rejected = requests
        .iter()
        .filter(|o| o.decided == Decided::Rejected)
        .count() as u64;
    let (judged, judged_at) = rejects(requests, &rules, opts);
    let swapped: Vec<Item> = admits.iter().map(|i| Item { x: i.y, y: i.x }).collect();
    let mut sends: Vec<i64> = requests.iter().map(|o| o.sent).collect();
    sends.sort();
    let (peak_limit, peak_span) = rules.peak;
    let peak = removal::peak(&admits, peak_span, opts.slack_us);
    let admitted = admits.len() as u64;
    let unknown = requests
        .iter()
        .filter(|o| o.decided == Decided::Unknown)
        .count() as u64;
    let mut found = Vec::new();
    // Admits the attempts before them rule out (count_rejected): wrong
    // one by one; the rules then judge the rest.
    let (decided, decided_at) = items(requests, |o| o.decided != Decided::Unknown);
    let refused = rules.attempts.map_or_else(
        || vec![None; admits.len()],
        |check| attempts::refused(check, &admits, &decided, opts.slack_us),
    );
    let refused_count = refused.iter().filter(|r| r.is_some()).count() as u64;
    if witness && refused_count > 0 {
        found.extend(witness::attempts(
            &admits,
            &admit_at,
            (&decided, &decided_at),
            &refused,
            opts.slack_us,
        ));
    }
    let (admits, admit_at): (Vec<Item>, Vec<usize>) = admits
        .iter()
        .zip(&admit_at)
        .zip(&refused)
        .filter(|(_, r)| r.is_none())
        .map(|((i, at), _)| (*i, *at))
        .unzip();
    let definite = refused_count
        + if witness {
            let mut most = 0;
            if let Some(g) = rules.grid {
                let (n, breaks) = grid::witnessed(
                    &admits,
                    g,
                    opts.epoch_offset_us,
                    grid_slack(opts, opts.slack_us, &admits),
                );
                most = most.max(n);
                found.extend(witness::grid(g, opts, &admits, &admit_at, breaks));
            }
            for r in rules
                .definite
                .iter()
                .filter(|r| r.useful(&admits, opts.slack_us))
            {
                let (items, at) = applicable(r, &admits, opts.slack_us);
                let at: Vec<usize> = at.iter().map(|&i| admit_at[i]).collect();
                let (n, breaks) = removal::witnessed(&items, r.bound, opts.slack_us);
                most = most.max(n);
                found.extend(witness::bound(
                    r.bound,
                    &r.words(policy),
                    &items,
                    &at,
                    breaks,
                    opts.slack_us,
                ));
            }
            most
        } else {
            most_removals(&rules, &admits, opts, opts.slack_us)
        };
    let flags = false_reject::flags(rules.reject, &maybe, &judged, opts.slack_us, start(opts));
    let false_rejects = flags.iter().filter(|f| f.is_some()).count() as u64;
    if witness && false_rejects > 0 {
        found.extend(witness::false_rejects(
            &rules,
            opts,
            (&maybe, &maybe_at),
            (&judged, &judged_at),
            &flags,
        ));
    }
    let slow_admits = rules.slow.map_or(0, |slow| {
        requests
            .iter()
            .filter(|o| o.decided == Decided::Admitted)
            .filter(|o| (o.done - o.sent).abs().saturating_add(opts.slack_us) >= slow.from)
            .count() as u64
    });
    let verdict = Verdict {
        admitted,
        slow_admits,
        rejected,
        unknown,
        allowed_max: admit_bound(&rules, requests, opts),
        replay_admits: ideal::allowed(policy, &sends, opts.epoch_offset_us),
        definite_violations: definite,
        possible_violations: most_removals(&rules, &swapped, opts, 0),
        false_rejects,
        peak_window_ratio: peak as f64 / peak_limit as f64,
    };
    (verdict, witness::keep_per_key(found))
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
