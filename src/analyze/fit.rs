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

use crate::verify::{self, Decided, Obs, Options, Verdict};
use rayon::prelude::*;
use reference_api::{Policy, Rate};

/// One policy a limiter may enforce, as the verifier judges it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Candidate {
    pub policy: Policy,
    /// Rejected attempts count too (HAProxy's stick tables).
    pub count_rejected: bool,
    /// A token bucket that refills in whole chunks (`refill` a chunk per
    /// its period; Stripe's style, ASP.NET's TokenBucketRateLimiter) at an
    /// unknown phase, not continuously.
    pub chunked: bool,
}

/// A candidate and what the verifier said of it on the trace.
#[derive(Clone, Debug)]
pub(crate) struct Tried {
    pub candidate: Candidate,
    pub verdict: Verdict,
}

impl Tried {
    pub(crate) fn fits(&self) -> bool {
        self.verdict.definite_violations == 0 && self.verdict.false_rejects == 0
    }
}

/// The windows people write, from 100 ms to an hour.
const WINDOWS_US: &[u64] = &[
    100_000,
    200_000,
    250_000,
    500_000,
    1_000_000,
    2_000_000,
    3_000_000,
    5_000_000,
    10_000_000,
    15_000_000,
    20_000_000,
    30_000_000,
    60_000_000,
    120_000_000,
    300_000_000,
    600_000_000,
    900_000_000,
    1_800_000_000,
    3_600_000_000,
];

/// Segments per window tried for a segmented sliding window.
const SEGMENTS: &[u64] = &[2, 4, 10];

/// What the trace says at a glance: the admits of the first burst (before
/// the first reject), and the admits per second once the key is limited.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Glance {
    pub burst: u64,
    pub per_second: f64,
}

/// `None` when nothing was both admitted and rejected: no limit to fit.
pub(crate) fn glance(obs: &[Obs]) -> Option<Glance> {
    let first_reject = obs
        .iter()
        .filter(|o| o.decided == Decided::Rejected)
        .map(|o| o.sent)
        .min()?;
    let admitted = |o: &&Obs| o.decided == Decided::Admitted;
    let burst = obs
        .iter()
        .filter(admitted)
        .filter(|o| o.sent < first_reject)
        .count() as u64;
    let end = obs.iter().map(|o| o.sent).max()?;
    let after = obs
        .iter()
        .filter(admitted)
        .filter(|o| o.sent >= first_reject)
        .count() as f64;
    let span = (end - first_reject).max(1) as f64 / 1e6;
    (burst > 0 || after > 0.0).then_some(Glance {
        burst: burst.max(1),
        per_second: after / span,
    })
}

/// The grid for a trace seen at `g`: limits and capacities near the first
/// burst (and near half of it: a fixed window's boundary may split it),
/// every window people write, and rates near the limited admits per second
/// (per second, and per minute when slow).
pub(crate) fn candidates(g: Glance) -> Vec<Candidate> {
    let near = |n: u64| n.saturating_sub(2).max(1)..=n + 2;
    let mut limits: Vec<u64> = near(g.burst).chain(near(g.burst.div_ceil(2))).collect();
    limits.sort_unstable();
    limits.dedup();
    let mut out = Vec::new();
    for &limit in &limits {
        for &window_us in WINDOWS_US {
            for count_rejected in [false, true] {
                let mut push = |policy| {
                    out.push(Candidate {
                        policy,
                        count_rejected,
                        chunked: false,
                    })
                };
                push(Policy::SlidingLog { limit, window_us });
                push(Policy::FixedWindow { limit, window_us });
                push(Policy::SlidingCounter { limit, window_us });
                for &segments in SEGMENTS {
                    if window_us % segments == 0 && limit >= 1 {
                        push(Policy::SlidingWindow {
                            limit,
                            window_us,
                            segments,
                        });
                    }
                }
            }
        }
    }
    let mut rates: Vec<Rate> = Vec::new();
    let r = g.per_second;
    let span = |lo: f64, hi: f64| (lo.floor().max(1.0) as u64)..=(hi.ceil().max(1.0) as u64);
    for count in span(r * 0.6, r * 1.4 + 1.0).take(200) {
        rates.push(Rate {
            count,
            per_us: 1_000_000,
        });
    }
    if r < 5.0 {
        // Per minute only what per second cannot say (not within 2 % of
        // a whole number a second: 301/1m is 5/1s to any short probe).
        let per_second_says = |c: u64| {
            let s = c as f64 / 60.0;
            s.round() >= 1.0 && (s - s.round()).abs() < 0.02 * s
        };
        for count in span(r * 36.0, r * 84.0 + 1.0)
            .filter(|&c| !per_second_says(c))
            .take(200)
        {
            rates.push(Rate {
                count,
                per_us: 60_000_000,
            });
        }
    }
    for capacity in near(g.burst) {
        for &refill in &rates {
            out.push(Candidate {
                policy: Policy::TokenBucket { capacity, refill },
                count_rejected: false,
                chunked: false,
            });
        }
    }
    // The same rates in whole chunks, each period people write for one: a
    // chunk of at least one token and at most the bucket (a bigger one
    // fills it all the same; ASP.NET refuses one). The first burst may
    // have met a chunk on top of a full bucket: capacities near half of
    // it too, as for the windows.
    for &capacity in &limits {
        for &refill in &rates {
            for &every_us in CHUNKS_US {
                let tokens = refill.count as u128 * every_us as u128;
                let per = refill.per_us as u128;
                if tokens % per == 0 && tokens > 0 && tokens / per <= capacity as u128 {
                    out.push(Candidate {
                        policy: Policy::TokenBucket {
                            capacity,
                            refill: Rate {
                                count: (tokens / per) as u64,
                                per_us: every_us,
                            },
                        },
                        count_rejected: false,
                        chunked: true,
                    });
                }
            }
        }
    }
    out
}

/// The periods a chunked bucket refills at.
const CHUNKS_US: &[u64] = &[500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000];

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

/// A duration as a scenario writes it: "1s", "250ms", "1m".
pub(crate) fn span_text(us: u64) -> String {
    if us % 60_000_000 == 0 {
        format!("{}m", us / 60_000_000)
    } else if us % 1_000_000 == 0 {
        format!("{}s", us / 1_000_000)
    } else {
        format!("{}ms", us / 1_000)
    }
}

impl Candidate {
    /// The verifier's options for it, on `base` (what is known of the
    /// limiter's clocks and history): whether rejects count, whether the
    /// bucket refills in chunks (of an unknown phase).
    pub(crate) fn options(&self, base: &Options) -> Options {
        Options {
            count_rejected: self.count_rejected,
            chunked_refill: self.chunked,
            chunks_on_epoch: false,
            ..*base
        }
    }

    /// The `[policy]` lines that state it.
    pub(crate) fn lines(&self) -> String {
        let mut s = match self.policy {
            Policy::SlidingLog { limit, window_us }
            | Policy::FixedWindow { limit, window_us }
            | Policy::SlidingCounter { limit, window_us } => format!(
                "algorithm = \"{}\"\nlimit = {limit}\nwindow = \"{}\"\n",
                self.policy.algorithm(),
                span_text(window_us)
            ),
            Policy::SlidingWindow {
                limit,
                window_us,
                segments,
            } => format!(
                "algorithm = \"sliding_window\"\nlimit = {limit}\nwindow = \"{}\"\nsegments = {segments}\n",
                span_text(window_us)
            ),
            Policy::TokenBucket { capacity, refill } if self.chunked => format!(
                "algorithm = \"token_bucket\"\ncapacity = {capacity}\nrefill = \"{}/{}\"\nrefill_every = \"{}\"\n",
                refill.count,
                span_text(refill.per_us),
                span_text(refill.per_us)
            ),
            Policy::TokenBucket { capacity, refill } => format!(
                "algorithm = \"token_bucket\"\ncapacity = {capacity}\nrefill = \"{}/{}\"\n",
                refill.count,
                span_text(refill.per_us)
            ),
            Policy::Gcra { rate, burst } => format!(
                "algorithm = \"gcra\"\nrate = \"{}/{}\"\nburst = {burst}\n",
                rate.count,
                span_text(rate.per_us)
            ),
        };
        if self.count_rejected {
            s.push_str("count_rejected = true\n");
        }
        s
    }

    /// The lines on one line, as `--policy` takes them.
    pub(crate) fn inline(&self) -> String {
        self.lines().trim_end().replace('\n', ", ")
    }

    /// In words, with the limiters people run that state it so.
    pub(crate) fn describe(&self) -> String {
        let mut s = self.policy.describe();
        if self.count_rejected {
            s.push_str(", rejected requests counted too");
        }
        if self.chunked {
            s.push_str(" in whole chunks (Stripe's style, ASP.NET's TokenBucketRateLimiter)");
        }
        if let (Policy::TokenBucket { capacity, refill }, false) = (&self.policy, self.chunked) {
            let (capacity, refill) = (*capacity, *refill);
            if refill.per_us == 1_000_000 {
                s.push_str(&format!(
                    " (nginx: rate={}r/s burst={} nodelay; governor: \
                     Quota::per_second({}).allow_burst({}))",
                    refill.count,
                    capacity - 1,
                    refill.count,
                    capacity
                ));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
