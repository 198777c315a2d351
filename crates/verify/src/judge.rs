//! Judging one key: its verdict and, when asked, the witnesses that prove
//! it; its verdict within a phase; its false rejects' times.

use crate::counts::{admit_bound, applicable, fewest_wrong, most_removals};
use crate::false_reject::start;
use crate::removal::Item;
use crate::requests::{grid_slack, items, maybe_admits, rejects, timing};
use crate::trace::{Decided, Obs, Options, PhaseVerdict, Verdict};
use crate::witness::Witness;
use crate::{attempts, false_reject, grid, ideal, removal, rules, witness};
use rlbench_policy::Policy;

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
