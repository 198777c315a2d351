//! The policy fit (`rlbench probe`, and a run's hint when its declared
//! policy is proven wrong): every policy of a broad grid — each
//! algorithm family with the limits, windows, capacities and rates people
//! write — judged by the verifier itself against one key's probing trace.
//! A candidate fits when the trace holds no definite violation and no false
//! reject under it; the verifier is sound, so the limiter's true policy
//! (when it is on the grid) always fits, and a trace that saturates the key,
//! rests and saturates it again rules most of the others out with a proof.
//! Of the fits, the tightest (the least over-admission bound U) is the one
//! proposed.

mod candidate;
mod grid;

pub(crate) use candidate::{Candidate, Tried};
pub(crate) use grid::{candidates, glance, Glance};

use crate::verify::{self, Obs, Options};
use rayon::prelude::*;
use reference_api::Policy;

/// Judges every candidate on the trace (`base`: what is known of the
/// limiter's clocks and history).
pub(crate) fn judge(obs: &[Obs], base: &Options, candidates: Vec<Candidate>) -> Vec<Tried> {
    candidates
        .into_par_iter()
        .map(|candidate| {
            let opts = candidate.options(base);
            let verdict = verify::verify_key(&candidate.policy, obs, &opts);
            Tried { candidate, verdict }
        })
        .collect()
}

/// A family's place when two fits are equally tight: the stricter and
/// commoner first.
fn family_rank(c: &Candidate) -> u8 {
    let base = match c.policy {
        Policy::TokenBucket { .. } | Policy::Gcra { .. } => 0,
        Policy::SlidingLog { .. } => 1,
        Policy::SlidingWindow { .. } => 2,
        Policy::SlidingCounter { .. } => 3,
        Policy::FixedWindow { .. } => 4,
    };
    base + if c.count_rejected { 5 } else { 0 } + u8::from(c.chunked)
}

/// How plainly a candidate is written: a rate per second before one per
/// minute (people write `10r/s`, and a tie between `5/1s` and `340/1m` on
/// a short trace is no reason to propose the odd one).
fn plainness(c: &Candidate) -> u8 {
    match c.policy {
        Policy::TokenBucket { refill: r, .. } | Policy::Gcra { rate: r, .. } => {
            u8::from(r.per_us != 1_000_000)
        }
        _ => 0,
    }
}

/// The slower of two equally tight refills first (the tighter claim).
fn refill_per_second(c: &Candidate) -> u64 {
    match c.policy {
        Policy::TokenBucket { refill: r, .. } | Policy::Gcra { rate: r, .. } => {
            (r.count as u128 * 1_000_000_000 / r.per_us.max(1) as u128) as u64
        }
        _ => 0,
    }
}

/// The fits, tightest first: the least over-admission bound U (the most
/// admits the policy allowed these requests), then the family, the
/// plainer writing, the slower refill and the shorter window.
pub(crate) fn fits(tried: &[Tried]) -> Vec<&Tried> {
    let mut fits: Vec<&Tried> = tried.iter().filter(|t| t.fits()).collect();
    fits.sort_by_key(|t| tightness(t));
    fits
}

fn tightness(t: &Tried) -> (u64, u8, u8, u64, u64) {
    (
        t.verdict.allowed_max,
        family_rank(&t.candidate),
        plainness(&t.candidate),
        refill_per_second(&t.candidate),
        t.candidate.policy.quota().1,
    )
}

/// The fits, likeliest first: those whose replays get the fewest
/// admits wrong (`wrong`), where every fit within a quarter of the best's
/// errors (at least 2) of the best is as good — a boundary's
/// jitter is no reason to propose `301/1m` over `5/1s` — and comes in the
/// order of [`fits`]; the rest follow by their wrong decisions.
pub(crate) fn ranked<'a>(
    tried: &'a [Tried],
    wrong: &(dyn Fn(&Candidate) -> usize + Sync),
) -> Vec<&'a Tried> {
    rerank(fits(tried), wrong)
}

/// The most wrong admits a replay may have and be as good as one with
/// `best`.
pub(crate) fn as_good(best: usize) -> usize {
    best + (best / 4).max(2)
}

/// [`ranked`] over some of the fits.
pub(crate) fn rerank<'a>(
    mut fits: Vec<&'a Tried>,
    wrong: &(dyn Fn(&Candidate) -> usize + Sync),
) -> Vec<&'a Tried> {
    fits.sort_by_key(|t| tightness(t));
    let mut scored: Vec<(usize, &Tried)> = fits
        .into_par_iter()
        .map(|t| (wrong(&t.candidate), t))
        .collect();
    let Some(best) = scored.iter().map(|(w, _)| *w).min() else {
        return Vec::new();
    };
    // A replay that slips by one request slips every later one with it
    // (a bucket of one): a quarter of the best's errors is noise too.
    let good = as_good(best);
    // Stable: the as-good keep their order, but a bucket refilled in
    // chunks goes after the plainer writings as good as it (its chunks'
    // phase and size bend to a short trace: a sliding counter of 10 a
    // second replays like a bucket of 8 given 5 every half second).
    scored.sort_by_key(|&(w, t)| {
        if w <= good {
            (0, u8::from(t.candidate.chunked))
        } else {
            (w, u8::from(t.candidate.chunked))
        }
    });
    scored.into_iter().map(|(_, t)| t).collect()
}

/// A family's name for grouping what was ruled out.
pub(crate) fn family(c: &Candidate) -> String {
    let name = match c.policy {
        Policy::TokenBucket { .. } | Policy::Gcra { .. } => "token bucket",
        Policy::SlidingLog { .. } => "sliding log",
        Policy::SlidingWindow { .. } => "segmented sliding window",
        Policy::SlidingCounter { .. } => "sliding counter",
        Policy::FixedWindow { .. } => "fixed window",
    };
    if c.count_rejected {
        format!("{name} counting rejects")
    } else {
        name.to_string()
    }
}

/// Per family, the candidate nearest to fitting (fewest definite
/// violations plus false rejects), when no candidate of it fits.
pub(crate) fn nearest_misses(tried: &[Tried]) -> Vec<&Tried> {
    let mut by_family: Vec<(String, &Tried)> = Vec::new();
    for t in tried {
        let f = family(&t.candidate);
        let wrong = |t: &Tried| t.verdict.definite_violations + t.verdict.false_rejects;
        match by_family.iter_mut().find(|(name, _)| *name == f) {
            Some((_, best)) => {
                if t.fits() || (!best.fits() && wrong(t) < wrong(best)) {
                    *best = t;
                }
            }
            None => by_family.push((f, t)),
        }
    }
    by_family
        .into_iter()
        .map(|(_, t)| t)
        .filter(|t| !t.fits())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::Decided;
    use reference_api::Rate;

    /// A trace of one key sent at `rate` per second from `from_s` for
    /// `secs`, each request decided at once by `decide(sent_us)`.
    fn send(
        obs: &mut Vec<Obs>,
        rate: f64,
        from_s: f64,
        secs: f64,
        decide: &mut dyn FnMut(i64) -> bool,
    ) {
        let n = (rate * secs) as i64;
        for i in 0..n {
            let sent = ((from_s + i as f64 / rate) * 1e6) as i64;
            let decided = if decide(sent) {
                Decided::Admitted
            } else {
                Decided::Rejected
            };
            obs.push(Obs {
                sent,
                done: sent + 2_000,
                decided,
            });
        }
    }

    /// The probe's fit trace: saturate, rest, saturate again.
    fn probe_trace(rate: f64, decide: &mut dyn FnMut(i64) -> bool) -> Vec<Obs> {
        let mut obs = Vec::new();
        send(&mut obs, rate, 0.0, 4.0, decide);
        send(&mut obs, rate, 6.0, 2.0, decide);
        obs
    }

    /// A sliding log of `limit` per `window` s, written for this test.
    fn sliding_log(limit: usize, window_s: f64) -> impl FnMut(i64) -> bool {
        let mut admits: Vec<i64> = Vec::new();
        move |t| {
            let w = (window_s * 1e6) as i64;
            let recent = admits.iter().filter(|&&a| a > t - w).count();
            let ok = recent < limit;
            if ok {
                admits.push(t);
            }
            ok
        }
    }

    /// A token bucket of `capacity`, `rate` per second, written for this test.
    fn bucket(capacity: f64, rate: f64) -> impl FnMut(i64) -> bool {
        let (mut tokens, mut last) = (capacity, 0i64);
        move |t| {
            tokens = (tokens + (t - last) as f64 / 1e6 * rate).min(capacity);
            last = t;
            let ok = tokens >= 1.0;
            if ok {
                tokens -= 1.0;
            }
            ok
        }
    }

    /// A bucket of `capacity` given `chunk` tokens at every `every_s`
    /// seconds past `phase_s` (Stripe's style), written for this test.
    fn chunked_bucket(
        capacity: u64,
        chunk: u64,
        every_s: f64,
        phase_s: f64,
    ) -> impl FnMut(i64) -> bool {
        let (mut tokens, mut at) = (capacity, None::<i64>);
        move |t| {
            let every = (every_s * 1e6) as i64;
            let k = (t - (phase_s * 1e6) as i64).div_euclid(every);
            if let Some(before) = at.filter(|&b| k > b) {
                tokens = (tokens + (k - before) as u64 * chunk).min(capacity);
            }
            at = Some(k);
            let ok = tokens > 0;
            if ok {
                tokens -= 1;
            }
            ok
        }
    }

    fn best(obs: &[Obs]) -> Candidate {
        let g = glance(obs).expect("limited");
        let tried = judge(obs, &Options::default(), candidates(g));
        fits(&tried).first().expect("a fit").candidate.clone()
    }

    #[test]
    fn a_sliding_log_is_found_with_its_numbers() {
        let obs = probe_trace(40.0, &mut sliding_log(10, 1.0));
        assert_eq!(
            best(&obs).policy,
            Policy::SlidingLog {
                limit: 10,
                window_us: 1_000_000
            }
        );
    }

    #[test]
    fn a_token_bucket_is_found_with_its_numbers() {
        let obs = probe_trace(40.0, &mut bucket(6.0, 10.0));
        let c = best(&obs);
        assert_eq!(
            c.policy,
            Policy::TokenBucket {
                capacity: 6,
                refill: Rate {
                    count: 10,
                    per_us: 1_000_000
                }
            }
        );
        assert!(
            c.describe().contains("nginx: rate=10r/s burst=5"),
            "{}",
            c.describe()
        );
    }

    #[test]
    fn a_bucket_refilled_in_chunks_fits_as_one_and_not_as_a_continuous_one() {
        let obs = probe_trace(40.0, &mut chunked_bucket(10, 5, 1.0, 0.37));
        let tried = judge(&obs, &Options::default(), candidates(glance(&obs).unwrap()));
        let truth = |chunked: bool| {
            tried
                .iter()
                .find(|t| {
                    t.candidate.chunked == chunked
                        && t.candidate.policy
                            == Policy::TokenBucket {
                                capacity: 10,
                                refill: Rate {
                                    count: 5,
                                    per_us: 1_000_000,
                                },
                            }
                })
                .expect("on the grid")
        };
        // Sound: the limiter's own policy fits, whatever its chunks' phase.
        assert!(truth(true).fits(), "{:?}", truth(true).verdict);
        // The same rate refilled continuously would have had tokens for
        // the requests refused between the chunks.
        assert!(
            truth(false).verdict.false_rejects > 0,
            "{:?}",
            truth(false).verdict
        );
        let c = &truth(true).candidate;
        assert_eq!(
            c.inline(),
            r#"algorithm = "token_bucket", capacity = 10, refill = "5/1s", refill_every = "1s""#
        );
        assert!(c.describe().contains("in whole chunks"), "{}", c.describe());
        assert!(!c.describe().contains("nginx"), "{}", c.describe());
    }

    #[test]
    fn the_true_policy_always_fits_and_its_neighbours_are_ruled_out() {
        let obs = probe_trace(40.0, &mut sliding_log(10, 1.0));
        let tried = judge(&obs, &Options::default(), candidates(glance(&obs).unwrap()));
        let verdict = |p: Policy| {
            tried
                .iter()
                .find(|t| t.candidate.policy == p && !t.candidate.count_rejected)
                .unwrap()
                .verdict
        };
        let truth = verdict(Policy::SlidingLog {
            limit: 10,
            window_us: 1_000_000,
        });
        assert_eq!((truth.definite_violations, truth.false_rejects), (0, 0));
        // One fewer: violations; a longer window: violations; one more:
        // false rejects.
        let fewer = verdict(Policy::SlidingLog {
            limit: 9,
            window_us: 1_000_000,
        });
        assert!(fewer.definite_violations > 0);
        let longer = verdict(Policy::SlidingLog {
            limit: 10,
            window_us: 2_000_000,
        });
        assert!(longer.definite_violations > 0);
        let more = verdict(Policy::SlidingLog {
            limit: 11,
            window_us: 1_000_000,
        });
        assert!(more.false_rejects > 0);
    }

    #[test]
    fn nothing_fits_a_limiter_that_keeps_no_policy() {
        // Admits at random, a third of the time.
        let mut state = 7u64;
        let mut coin = move |_t: i64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
            (state >> 33) % 3 == 0
        };
        let obs = probe_trace(40.0, &mut coin);
        let tried = judge(&obs, &Options::default(), candidates(glance(&obs).unwrap()));
        assert!(
            fits(&tried).is_empty(),
            "{:?}",
            fits(&tried)
                .iter()
                .map(|t| (t.candidate.inline(), t.verdict.allowed_max))
                .collect::<Vec<_>>()
        );
        let misses = nearest_misses(&tried);
        assert!(misses.len() >= 5, "{}", misses.len());
    }

    #[test]
    fn replays_as_good_as_the_best_keep_the_plainer_first_and_worse_ones_follow() {
        let obs = probe_trace(40.0, &mut bucket(6.0, 10.0));
        let tried = judge(&obs, &Options::default(), candidates(glance(&obs).unwrap()));
        let plain = |c: &Candidate| {
            matches!(c.policy, Policy::TokenBucket { refill, .. }
                if refill.per_us == 1_000_000 && refill.count == 10)
        };
        // The plain one 2 off, a per-minute one exact: as good, and the
        // tighter, plainer one stays first.
        let first = ranked(&tried, &|c| if plain(c) { 2 } else { 0 });
        assert!(plain(&first[0].candidate), "{:?}", first[0].candidate);
        // 3 off against 0: no longer as good.
        let first = ranked(&tried, &|c| if plain(c) { 3 } else { 0 });
        assert!(!plain(&first[0].candidate));
        // Order among the worse: by their wrong admits.
        let wrong = |t: &Tried| t.candidate.policy.quota().0 as usize * 10;
        let order = ranked(&tried, &|c| c.policy.quota().0 as usize * 10);
        let w: Vec<usize> = order.iter().map(|t| wrong(t)).collect();
        let mut sorted = w.clone();
        sorted.sort_unstable();
        assert_eq!(w, sorted);
        assert_eq!(as_good(0), 2);
        assert_eq!(as_good(40), 50);
    }

    #[test]
    fn a_trace_with_nothing_limited_has_nothing_to_fit() {
        let obs = probe_trace(5.0, &mut |_| true);
        assert_eq!(glance(&obs), None);
    }
}
