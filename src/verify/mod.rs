//! The verifier: judges a recorded trace against the policy's exact
//! semantics, soundly. Time truth is the generator's monotonic clock; each
//! decision happened somewhere inside its request's `[sent, done]`.
//!
//! - definite violations: admits that no timing can explain (a correct
//!   limiter scores zero, whatever the load and jitter);
//! - possible violations: the same with the most favourable timing;
//! - false rejects: 429s a correct limiter would certainly have admitted;
//! - allowed_max: an ideal limiter's admits over the same send times.

mod false_reject;
mod fenwick;
mod grid;
mod ideal;
mod removal;
mod rules;
mod segtree;

use reference_api::Policy;
use removal::Item;

/// What a request's response says about the limiter's decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decided {
    Admitted,
    Rejected,
    /// No usable answer (error, timeout): it may have been admitted.
    Unknown,
}

/// One request of one key, times in µs on the generator's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Obs {
    pub sent: i64,
    pub done: i64,
    pub decided: Decided,
}

#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Timing tolerance in the limiter's favour: its clock's resolution and
    /// rounding. Only ever makes a verdict milder.
    pub slack_us: i64,
    /// Wall-clock µs at trace time 0, to replay epoch-aligned windows.
    pub epoch_offset_us: i64,
    /// How far `epoch_offset_us` may be off: widens the grid rules' slack.
    pub epoch_uncertainty_us: i64,
    /// Every decision read this machine's wall clock, so epoch-aligned
    /// windows are known in trace time and the sharper grid rules apply.
    pub aligned: bool,
    /// The limiter may hold state from before the trace (a target rlbench
    /// did not start): rejects sent within one window (a bucket's refill
    /// time) of the start may be due to it and are never counted false.
    pub unknown_history: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            slack_us: 1_000,
            epoch_offset_us: 0,
            epoch_uncertainty_us: 0,
            aligned: false,
            unknown_history: false,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Verdict {
    pub admitted: u64,
    pub rejected: u64,
    pub unknown: u64,
    pub allowed_max: u64,
    pub definite_violations: u64,
    pub possible_violations: u64,
    pub false_rejects: u64,
    /// Max over keys and windows of admitted-in-window / limit.
    pub peak_window_ratio: f64,
}

impl Verdict {
    pub fn over_admission_ratio(&self) -> Option<f64> {
        match (self.admitted, self.allowed_max) {
            (0, _) => Some(0.0),
            (_, 0) => None,
            (a, m) => Some(a as f64 / m as f64),
        }
    }

    /// Share of the rejects that were certainly wrong.
    pub fn false_reject_ratio(&self) -> f64 {
        if self.rejected == 0 {
            0.0
        } else {
            self.false_rejects as f64 / self.rejected as f64
        }
    }

    pub fn merge(&mut self, other: &Verdict) {
        self.admitted += other.admitted;
        self.rejected += other.rejected;
        self.unknown += other.unknown;
        self.allowed_max += other.allowed_max;
        self.definite_violations += other.definite_violations;
        self.possible_violations += other.possible_violations;
        self.false_rejects += other.false_rejects;
        self.peak_window_ratio = self.peak_window_ratio.max(other.peak_window_ratio);
    }
}

/// The policy's natural window: (limit, span µs) — what `peak_window_ratio`
/// and the admitted-vs-limit chart measure against.
pub fn window(policy: &Policy) -> (u64, i64) {
    rules::for_policy(policy, false).peak
}

/// The fewest of `items` to drop so that no rule of the policy is broken.
fn most_removals(rules: &rules::Rules, items: &[Item], opts: &Options, slack: i64) -> u64 {
    let on_grid = rules.grid.map_or(0, |g| {
        grid::min_removals(items, g, opts.epoch_offset_us, slack)
    });
    rules
        .definite
        .iter()
        .map(|&b| removal::min_removals(items, b, slack))
        .fold(on_grid, u64::max)
}

/// One stretch of a run (e.g. while a fault lasted), judged soundly.
/// `definite_violations`: how many the admits sent in it add to those of
/// everything sent before it (the fewest admits to drop can only grow as
/// admits are added, so the phases of a run add up to its total, and a
/// correct limiter scores 0 in each). `false_rejects`: its rejects, judged
/// against every admit of the key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseVerdict {
    pub definite_violations: u64,
    pub false_rejects: u64,
}

/// The `[sent, done]` intervals of the requests `keep` selects.
fn items(requests: &[Obs], keep: impl Fn(&Obs) -> bool) -> Vec<Item> {
    requests
        .iter()
        .filter(|o| keep(o))
        .map(|o| Item {
            x: o.sent,
            y: o.done,
        })
        .collect()
}

/// Rejects that can be judged: with an unknown history, those sent after
/// what happened before the trace can no longer matter.
fn judgeable(rules: &rules::Rules, opts: &Options, o: &Obs) -> bool {
    !opts.unknown_history || o.sent > false_reject::memory(rules.reject) + opts.slack_us
}

/// Admits, and errors and timeouts: what a limiter may have admitted.
fn maybe_admitted(o: &Obs) -> bool {
    o.decided != Decided::Rejected
}

/// Judges the requests of one key sent in `[from, to)` (µs).
pub fn verify_phase(
    policy: &Policy,
    requests: &[Obs],
    opts: &Options,
    from: i64,
    to: i64,
) -> PhaseVerdict {
    let rules = rules::for_policy(policy, opts.aligned);
    let admits_before = |t: i64| items(requests, |o| o.decided == Decided::Admitted && o.sent < t);
    let rejects = items(requests, |o| {
        o.decided == Decided::Rejected
            && o.sent >= from
            && o.sent < to
            && judgeable(&rules, opts, o)
    });
    let upto = most_removals(&rules, &admits_before(to), opts, opts.slack_us);
    let before = most_removals(&rules, &admits_before(from), opts, opts.slack_us);
    PhaseVerdict {
        definite_violations: upto.saturating_sub(before),
        false_rejects: false_reject::count(
            rules.reject,
            &items(requests, maybe_admitted),
            &rejects,
            opts.slack_us,
        ),
    }
}

/// The false rejects of one key as (sent, done) µs.
pub fn false_reject_times(policy: &Policy, requests: &[Obs], opts: &Options) -> Vec<(i64, i64)> {
    let rules = rules::for_policy(policy, opts.aligned);
    let rejects = items(requests, |o| {
        o.decided == Decided::Rejected && judgeable(&rules, opts, o)
    });
    false_reject::flags(
        rules.reject,
        &items(requests, maybe_admitted),
        &rejects,
        opts.slack_us,
    )
    .into_iter()
    .zip(&rejects)
    .filter(|(f, _)| *f)
    .map(|(_, r)| (r.x, r.y))
    .collect()
}

/// Judges one key's requests.
pub fn verify_key(policy: &Policy, requests: &[Obs], opts: &Options) -> Verdict {
    let rules = rules::for_policy(policy, opts.aligned);
    let admits = items(requests, |o| o.decided == Decided::Admitted);
    let maybe_admits = items(requests, maybe_admitted);
    let rejects = items(requests, |o| o.decided == Decided::Rejected);
    let judged: Vec<Item> = if opts.unknown_history {
        items(requests, |o| {
            o.decided == Decided::Rejected && judgeable(&rules, opts, o)
        })
    } else {
        rejects.clone()
    };
    let swapped: Vec<Item> = admits.iter().map(|i| Item { x: i.y, y: i.x }).collect();
    let most = |items: &[Item], slack| most_removals(&rules, items, opts, slack);
    let mut sends: Vec<i64> = requests.iter().map(|o| o.sent).collect();
    sends.sort_unstable();
    let (peak_limit, peak_span) = rules.peak;
    let peak = removal::peak(&admits, peak_span, opts.slack_us);
    Verdict {
        admitted: admits.len() as u64,
        rejected: rejects.len() as u64,
        unknown: (maybe_admits.len() - admits.len()) as u64,
        allowed_max: ideal::allowed(policy, &sends, opts.epoch_offset_us),
        definite_violations: most(&admits, opts.slack_us),
        possible_violations: most(&swapped, 0),
        false_rejects: false_reject::count(rules.reject, &maybe_admits, &judged, opts.slack_us),
        peak_window_ratio: peak as f64 / peak_limit as f64,
    }
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
