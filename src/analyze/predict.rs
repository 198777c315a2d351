//! Which of the fits the probe (and a run's policy hint) proposes: each one replayed over the trace's
//! send times as the plainest limiter of its writing would decide, and the
//! one whose admits agree most with the limiter's first (half second by
//! half second). This ranks,
//! never judges: every candidate it ranks already fits (the verifier found
//! no definite violation and no false reject under it), and the verifier
//! judges the starter that the proposal goes into. It matters because the
//! tightest fit is not the truth when the trace never met what sets the
//! two apart: a fixed window anchored at the key's first hit fits a
//! segmented window twice as long on a short trace, yet a run at three
//! times the rate proves the longer window wrong at once.
//!
//! Written here and not shared with the verifier's replay (`allowed_max`)
//! on purpose: that one stays the verifier's own, and this one also
//! counts rejected attempts and anchors fixed windows at the first hit.

use crate::analyze::fit::Candidate;
use reference_api::{Policy, Rate};
use std::collections::VecDeque;

/// Windows on a grid, trace time 0 being this many µs past a grid line
/// (the wall clock's, for limiters that align on it); or, for fixed
/// windows, each beginning at the first request after the last one ended
/// (the `limits` library, rate-limiter-flexible, express-rate-limit's
/// memory store).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Anchor {
    Epoch(i64),
    FirstHit,
}

/// Admits are compared per this span: a replay that admits a request a
/// few milliseconds later than the limiter did (a clock's tick, a bucket
/// of one slipping by one send) still agrees.
const SPAN_US: i64 = 500_000;

/// How far the candidate, replayed over `decided` (send time µs on the
/// trace clock, admitted), is from the limiter: over every half second,
/// the admits it gives that the limiter did not, and those it refuses
/// that the limiter gave — the fewer of both anchorings for a fixed
/// window. `epoch_offset`: wall-clock µs at trace time 0.
pub(crate) fn disagreements(c: &Candidate, decided: &[(i64, bool)], epoch_offset: i64) -> usize {
    let count = |anchor| {
        let replayed = replay(c, decided, anchor);
        let mut per_span: std::collections::BTreeMap<i64, i64> = Default::default();
        for (p, (t, a)) in replayed.iter().zip(decided) {
            *per_span.entry(t.div_euclid(SPAN_US)).or_default() += i64::from(*p) - i64::from(*a);
        }
        per_span
            .values()
            .map(|d| d.unsigned_abs() as usize)
            .sum::<usize>()
    };
    // Windows and segments on a grid of unknown phase (HAProxy's periods
    // start at its own start, not at the epoch's): eight phases tried.
    let grid = |span_us: u64| {
        (0..PHASES)
            .map(|k| count(Anchor::Epoch(epoch_offset + (span_us * k / PHASES) as i64)))
            .min()
            .unwrap_or(usize::MAX)
    };
    match c.policy {
        Policy::FixedWindow { window_us, .. } => grid(window_us).min(count(Anchor::FirstHit)),
        Policy::SlidingCounter { window_us, .. } => grid(window_us),
        Policy::SlidingWindow {
            window_us,
            segments,
            ..
        } => grid(window_us / segments.max(1)),
        Policy::TokenBucket { refill, .. } if c.chunked => grid(refill.per_us),
        _ => count(Anchor::Epoch(epoch_offset)),
    }
}

/// The plainest limiter of `c`'s writing deciding `sends` (trace µs, in
/// order) by itself, its windows on the epoch grid `epoch_offset` µs
/// past trace time 0: a simulated limiter, for rehearsing a load before
/// it is sent (never the verifier's replay).
pub(crate) fn decide(c: &Candidate, sends: &[i64], epoch_offset: i64) -> Vec<bool> {
    let decided: Vec<(i64, bool)> = sends.iter().map(|&t| (t, false)).collect();
    replay(c, &decided, Anchor::Epoch(epoch_offset))
}

/// [`decide`] by a limiter that checks, then counts `gap_us` later (a
/// read and a write apart, an `await` between them): each send is
/// decided on the sends counted by then — those at least `gap_us` before
/// it, as they were decided — so sends closer together than the gap
/// race past the limit. Counted as decided, never decided again: a
/// simulation that re-decided its own racy admits would forget them and
/// race further than the limiter it stands for. Quadratic in the sends;
/// the caller bounds them.
pub(crate) fn decide_racing(
    c: &Candidate,
    sends: &[i64],
    gap_us: i64,
    epoch_offset: i64,
) -> Vec<bool> {
    let mut decided: Vec<(i64, bool)> = Vec::with_capacity(sends.len());
    let mut counted = 0;
    for &t in sends {
        while counted < decided.len() && decided[counted].0 + gap_us <= t {
            counted += 1;
        }
        let mut seen: Vec<(i64, bool)> = decided[..counted].to_vec();
        seen.push((t, false));
        let r = Replay {
            decided: &seen,
            anchor: Anchor::Epoch(epoch_offset),
            count_rejected: c.count_rejected,
            forced: counted,
        };
        let admit = r.of(c).last().copied().unwrap_or(false);
        decided.push((t, admit));
    }
    decided.into_iter().map(|d| d.1).collect()
}

/// How early a replayed bucket may find its next token (µs).
const GRACE_US: i64 = 2_000;

/// How many phases of a grid are tried.
const PHASES: u64 = 8;

/// The candidate's decisions over the sends in order. Rejected attempts
/// count (when the candidate says so) as the limiter would count them: the
/// ones it actually rejected, in its windows' counts.
fn replay(c: &Candidate, decided: &[(i64, bool)], anchor: Anchor) -> Vec<bool> {
    Replay {
        decided,
        anchor,
        count_rejected: c.count_rejected,
        forced: 0,
    }
    .of(c)
}

/// One replay's sends and how they are counted.
struct Replay<'a> {
    decided: &'a [(i64, bool)],
    anchor: Anchor,
    count_rejected: bool,
    /// The first this many sends keep the decision they carry (counted
    /// as decided); the rest are decided by the replay.
    forced: usize,
}

impl Replay<'_> {
    /// The plainest limiter of `c`'s writing over the sends.
    fn of(&self, c: &Candidate) -> Vec<bool> {
        match c.policy {
            Policy::SlidingLog { limit, window_us } => self.sliding_log(limit, window_us),
            Policy::FixedWindow { limit, window_us } => self.fixed_window(limit, window_us),
            Policy::SlidingWindow {
                limit,
                window_us,
                segments,
            } => self.sliding_window(limit, window_us, segments),
            Policy::SlidingCounter { limit, window_us } => self.sliding_counter(limit, window_us),
            Policy::TokenBucket { capacity, refill } if c.chunked => {
                self.chunked_bucket(capacity, refill)
            }
            Policy::TokenBucket { capacity, refill } => self.token_bucket(capacity, refill),
            Policy::Gcra { rate, burst } => self.gcra(rate, burst),
        }
    }

    /// The decision of send `i`: the one it carries when forced, else
    /// the replay's own.
    fn admit(&self, i: usize, computed: bool) -> bool {
        if i < self.forced {
            self.decided[i].1
        } else {
            computed
        }
    }

    /// A send's time on the wall clock the windows are cut by.
    fn wall(&self, t: i64) -> i64 {
        match self.anchor {
            Anchor::Epoch(offset) => t + offset,
            Anchor::FirstHit => t,
        }
    }

    /// Whether a decision is counted: admits, and rejects when they count.
    fn counts(&self, admit: bool) -> bool {
        admit || self.count_rejected
    }

    /// A log of the counted sends in the last window.
    fn sliding_log(&self, limit: u64, window_us: u64) -> Vec<bool> {
        let mut out = Vec::with_capacity(self.decided.len());
        let w = window_us as i64;
        let mut log = VecDeque::new();
        for (i, &(t, _)) in self.decided.iter().enumerate() {
            while log.front().is_some_and(|&a| a <= t - w) {
                log.pop_front();
            }
            let admit = self.admit(i, (log.len() as u64) < limit);
            if self.counts(admit) {
                log.push_back(t);
            }
            out.push(admit);
        }
        out
    }

    /// Windows on the epoch, or from the first hit in each.
    fn fixed_window(&self, limit: u64, window_us: u64) -> Vec<bool> {
        let mut out = Vec::with_capacity(self.decided.len());
        let w = window_us as i64;
        let (mut began, mut count) = (i64::MIN, 0u64);
        for (i, &(t, _)) in self.decided.iter().enumerate() {
            let start = match self.anchor {
                Anchor::Epoch(_) => self.wall(t).div_euclid(w) * w,
                Anchor::FirstHit if began != i64::MIN && self.wall(t) < began + w => began,
                Anchor::FirstHit => self.wall(t),
            };
            if start != began {
                (began, count) = (start, 0);
            }
            let admit = self.admit(i, count < limit);
            if self.counts(admit) {
                count += 1;
            }
            out.push(admit);
        }
        out
    }

    /// Segments of the window, counted whole.
    fn sliding_window(&self, limit: u64, window_us: u64, segments: u64) -> Vec<bool> {
        let mut out = Vec::with_capacity(self.decided.len());
        let seg = (window_us / segments.max(1)) as i64;
        let s = segments as i64;
        let mut recent: VecDeque<(i64, u64)> = VecDeque::new();
        for (i, &(t, _)) in self.decided.iter().enumerate() {
            let k = self.wall(t).div_euclid(seg.max(1));
            while recent.front().is_some_and(|&(i, _)| i <= k - s) {
                recent.pop_front();
            }
            let total: u64 = recent.iter().map(|&(_, n)| n).sum();
            let admit = self.admit(i, total < limit);
            if self.counts(admit) {
                match recent.back_mut() {
                    Some((i, n)) if *i == k => *n += 1,
                    _ => recent.push_back((k, 1)),
                }
            }
            out.push(admit);
        }
        out
    }

    /// The previous window weighed by what of it is left.
    fn sliding_counter(&self, limit: u64, window_us: u64) -> Vec<bool> {
        let mut out = Vec::with_capacity(self.decided.len());
        let w = window_us as i64;
        let (mut window, mut prev, mut cur) = (i64::MIN, 0u64, 0u64);
        for (i, &(t, _)) in self.decided.iter().enumerate() {
            let k = self.wall(t).div_euclid(w);
            if k != window {
                prev = if window != i64::MIN && k == window + 1 {
                    cur
                } else {
                    0
                };
                (window, cur) = (k, 0);
            }
            let elapsed = (self.wall(t) - k * w) as i128;
            let used = prev as i128 * (w as i128 - elapsed) + cur as i128 * w as i128;
            let admit = self.admit(i, used + w as i128 <= limit as i128 * w as i128);
            if self.counts(admit) {
                cur += 1;
            }
            out.push(admit);
        }
        out
    }

    /// Whole chunks at the grid's lines, the bucket full at first.
    fn chunked_bucket(&self, capacity: u64, refill: Rate) -> Vec<bool> {
        let mut out = Vec::with_capacity(self.decided.len());
        // Whole chunks at the grid's lines, the bucket full at first.
        let per = refill.per_us.max(1) as i64;
        // Signed: an admit forced past the last token (a race) is owed.
        let capacity = capacity.min(i64::MAX as u64) as i64;
        let (mut tokens, mut chunk) = (capacity, None::<i64>);
        for (i, &(t, _)) in self.decided.iter().enumerate() {
            let k = self.wall(t).div_euclid(per);
            if let Some(before) = chunk.filter(|&b| k > b) {
                let gained = (k - before).saturating_mul(refill.count.min(i64::MAX as u64) as i64);
                tokens = tokens.saturating_add(gained).min(capacity);
            }
            chunk = Some(k);
            let admit = self.admit(i, tokens > 0);
            if admit {
                tokens -= 1;
            }
            out.push(admit);
        }
        out
    }

    /// A continuous bucket, full at first.
    fn token_bucket(&self, capacity: u64, refill: Rate) -> Vec<bool> {
        let mut out = Vec::with_capacity(self.decided.len());
        let per = refill.per_us as i128;
        let full = capacity as i128 * per;
        let (mut tokens, mut last) = (full, self.decided.first().map_or(0, |d| d.0));
        // A token due within GRACE_US is there already: a limiter's
        // clock ticks in milliseconds (nginx), and one admit replayed
        // a send late would shift every later one of a bucket of one.
        let grace = GRACE_US as i128 * refill.count as i128;
        for (i, &(t, _)) in self.decided.iter().enumerate() {
            tokens = (tokens + (t - last) as i128 * refill.count as i128).min(full);
            last = t;
            let admit = self.admit(i, tokens + grace >= per);
            if admit {
                tokens -= per;
            }
            out.push(admit);
        }
        out
    }

    /// GCRA's theoretical arrival time.
    fn gcra(&self, rate: Rate, burst: u64) -> Vec<bool> {
        let mut out = Vec::with_capacity(self.decided.len());
        let (count, per) = (rate.count as i128, rate.per_us as i128);
        let tolerance = (burst as i128 - 1) * per;
        let mut tat = i128::MIN;
        for (i, &(t, _)) in self.decided.iter().enumerate() {
            let now = t as i128 * count;
            let base = tat.max(now);
            let admit = self.admit(i, now + GRACE_US as i128 * count >= base - tolerance);
            if admit {
                tat = base + per;
            }
            out.push(admit);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(policy: Policy) -> Candidate {
        Candidate {
            chunked: false,
            policy,
            count_rejected: false,
        }
    }

    /// Sends every `step` µs from `from` for `n` requests.
    fn every(from: i64, step: i64, n: i64) -> Vec<i64> {
        (0..n).map(|i| from + i * step).collect()
    }

    /// A fixed window of 10 per second anchored at the first hit, written
    /// for this test.
    fn first_hit_fixed(sends: &[i64]) -> Vec<(i64, bool)> {
        let (mut began, mut count) = (i64::MIN / 2, 0);
        sends
            .iter()
            .map(|&t| {
                if t >= began + 1_000_000 {
                    (began, count) = (t, 0);
                }
                count += 1;
                (t, count <= 10)
            })
            .collect()
    }

    #[test]
    fn a_first_hit_fixed_window_agrees_with_itself_and_not_with_a_longer_window() {
        // 40/s for 6 s, starting off the epoch grid.
        let trace = first_hit_fixed(&every(333_000, 25_000, 240));
        let fixed = candidate(Policy::FixedWindow {
            limit: 10,
            window_us: 1_000_000,
        });
        assert_eq!(disagreements(&fixed, &trace, 0), 0);
        let longer = candidate(Policy::SlidingWindow {
            limit: 10,
            window_us: 2_000_000,
            segments: 4,
        });
        assert!(disagreements(&longer, &trace, 0) >= 10);
    }

    #[test]
    fn a_fixed_window_is_replayed_on_its_grid_and_the_grid_phase_is_found() {
        // Trace time 0 is 0.5 s past a grid line: the window ends at trace
        // time 0.5 s.
        let sends = every(0, 50_000, 20);
        let trace: Vec<(i64, bool)> = sends
            .iter()
            .enumerate()
            .map(|(i, &t)| (t, i < 10 || t >= 500_000))
            .collect();
        let fixed = candidate(Policy::FixedWindow {
            limit: 10,
            window_us: 1_000_000,
        });
        let wrong = |anchor| {
            replay(&fixed, &trace, anchor)
                .iter()
                .zip(&trace)
                .filter(|(p, (_, a))| *p != a)
                .count()
        };
        assert_eq!(wrong(Anchor::Epoch(500_000)), 0);
        // With the grid elsewhere, or anchored at the first hit, the
        // replay differs; the phases tried find the grid all the same.
        assert_eq!(wrong(Anchor::Epoch(0)), 10);
        assert_eq!(wrong(Anchor::FirstHit), 10);
        assert_eq!(disagreements(&fixed, &trace, 0), 0);
        // Off the eight phases, the nearest one: a boundary's request off.
        assert_eq!(disagreements(&fixed, &trace, 123_456), 1);
    }

    #[test]
    fn counted_rejects_keep_a_saturated_log_shut() {
        // 20/s against a log of 10 per second that counts rejects: after
        // the first 10, every second holds 20 attempts, so nothing more
        // gets in.
        let sends = every(0, 50_000, 60);
        let trace: Vec<(i64, bool)> = sends
            .iter()
            .enumerate()
            .map(|(i, &t)| (t, i < 10))
            .collect();
        let mut c = candidate(Policy::SlidingLog {
            limit: 10,
            window_us: 1_000_000,
        });
        assert!(disagreements(&c, &trace, 0) >= 10);
        c.count_rejected = true;
        assert_eq!(disagreements(&c, &trace, 0), 0);
    }

    #[test]
    fn a_token_bucket_replays_its_refill() {
        use reference_api::Rate;
        // Capacity 2, one token per 100 ms, sends every 50 ms: the first
        // three (the third finds a token refilled), then every other one.
        let sends = every(0, 50_000, 20);
        let trace: Vec<(i64, bool)> = sends
            .iter()
            .enumerate()
            .map(|(i, &t)| (t, i == 1 || i % 2 == 0))
            .collect();
        let c = candidate(Policy::TokenBucket {
            capacity: 2,
            refill: Rate {
                count: 10,
                per_us: 1_000_000,
            },
        });
        assert_eq!(
            disagreements(&c, &trace, 0),
            0,
            "{:?}",
            replay(&c, &trace, Anchor::Epoch(0))
        );
    }

    #[test]
    fn a_bucket_of_one_on_a_millisecond_clock_replays_as_its_plain_rate() {
        use reference_api::Rate;
        // nginx `rate=5r/s`: sends every 25 ms, every eighth admitted —
        // seen by this clock 0.8 ms early, as a limiter ticking in
        // milliseconds admits them.
        let trace: Vec<(i64, bool)> = (0..80)
            .map(|i: i64| {
                let admitted = i % 8 == 0;
                let early = if admitted && i > 0 { 800 } else { 0 };
                (i * 25_000 - early, admitted)
            })
            .collect();
        let c = candidate(Policy::TokenBucket {
            capacity: 1,
            refill: Rate {
                count: 5,
                per_us: 1_000_000,
            },
        });
        assert_eq!(disagreements(&c, &trace, 0), 0);
    }

    /// A policy of every writing, rejects counted or not.
    fn every_writing() -> Vec<Candidate> {
        use reference_api::Rate;
        let rate = Rate {
            count: 10,
            per_us: 1_000_000,
        };
        let policies = [
            Policy::SlidingLog {
                limit: 10,
                window_us: 1_000_000,
            },
            Policy::FixedWindow {
                limit: 10,
                window_us: 1_000_000,
            },
            Policy::SlidingWindow {
                limit: 10,
                window_us: 1_000_000,
                segments: 4,
            },
            Policy::SlidingCounter {
                limit: 10,
                window_us: 1_000_000,
            },
            Policy::TokenBucket {
                capacity: 5,
                refill: rate,
            },
            Policy::Gcra { rate, burst: 5 },
        ];
        let mut all = Vec::new();
        for policy in policies {
            for (count_rejected, chunked) in [(false, false), (true, false), (false, true)] {
                if chunked && !matches!(policy, Policy::TokenBucket { .. }) {
                    continue;
                }
                all.push(Candidate {
                    policy: policy.clone(),
                    count_rejected,
                    chunked,
                });
            }
        }
        all
    }

    /// Twenty sends within half a millisecond: a limiter counting 1 ms
    /// after it checks admits them all; counting at once, its limit.
    #[test]
    fn a_limiter_that_counts_late_races_past_its_limit() {
        let burst = every(2_000_000, 25, 20);
        let log = candidate(Policy::SlidingLog {
            limit: 10,
            window_us: 1_000_000,
        });
        let admitted = |v: Vec<bool>| v.iter().filter(|&&a| a).count();
        assert_eq!(admitted(decide_racing(&log, &burst, 1_000, 0)), 20);
        assert_eq!(admitted(decide_racing(&log, &burst, 0, 0)), 10);
        // Sends 2 ms apart: each counted before the next is checked.
        let spaced = every(0, 2_000, 40);
        assert_eq!(
            decide_racing(&log, &spaced, 1_000, 0),
            decide(&log, &spaced, 0)
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Counting at once, the racing limiter is the plain one, of
        /// every writing; counting later, it is still the plain one
        /// whenever no two sends are closer than the gap.
        #[test]
        fn without_a_race_the_racing_limiter_is_the_plain_one(
            which in 0usize..16,
            gaps in proptest::collection::vec(0i64..400_000, 1..120),
            gap_us in 0i64..5_000,
        ) {
            let all = every_writing();
            let c = &all[which % all.len()];
            let mut t = 0;
            let sends: Vec<i64> = gaps.iter().map(|g| { t += g; t }).collect();
            proptest::prop_assert_eq!(decide_racing(c, &sends, 0, 0), decide(c, &sends, 0));
            let apart: Vec<i64> = sends.iter().enumerate().map(|(i, t)| t + i as i64 * gap_us).collect();
            proptest::prop_assert_eq!(decide_racing(c, &apart, gap_us, 0), decide(c, &apart, 0));
        }
    }
}
