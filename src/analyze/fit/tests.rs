//! The fit judged on traces of limiters written for these tests: the
//! true policy found with its numbers, its neighbours ruled out, the
//! grid reached below where a first burst overstates the size.

mod loosest;

use super::*;
use crate::verify::{Decided, Obs, Options};
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

/// Fixed windows of `window_s` seconds past `phase_s`, `limit` each,
/// written for this test.
fn fixed_window(limit: u64, window_s: f64, phase_s: f64) -> impl FnMut(i64) -> bool {
    let (mut window, mut count) = (i64::MIN, 0u64);
    move |t| {
        let k = (t - (phase_s * 1e6) as i64).div_euclid((window_s * 1e6) as i64);
        if k != window {
            (window, count) = (k, 0);
        }
        let ok = count < limit;
        if ok {
            count += 1;
        }
        ok
    }
}

/// The candidate judged for `c` in `tried`, if any.
fn judged<'a>(tried: &'a [Tried], c: &Candidate) -> Option<&'a Tried> {
    tried.iter().find(|t| t.candidate == *c)
}

/// A bucket of 10 given 5 at each whole second (Stripe's style).
fn stripe_10_by_5() -> Candidate {
    Candidate {
        policy: Policy::TokenBucket {
            capacity: 10,
            refill: Rate {
                count: 5,
                per_us: 1_000_000,
            },
        },
        count_rejected: false,
        chunked: true,
    }
}

/// A fixed window of 10 a second.
fn fixed_10_a_second() -> Candidate {
    Candidate {
        policy: Policy::FixedWindow {
            limit: 10,
            window_us: 1_000_000,
        },
        count_rejected: false,
        chunked: false,
    }
}

/// A bucket of 10 given 5 a second whose chunk lands after 4 of its
/// tokens went (CI's failing probe of 2026-12-07): the first burst is 14,
/// the grid's sizes near it (12…16) and near half of it (5…9) miss the
/// bucket, and the walk below the fits finds it, judged once.
#[test]
fn a_chunk_landing_mid_burst_hides_the_bucket_from_the_grid_and_the_walk_finds_it() {
    let obs = probe_trace(40.0, &mut chunked_bucket(10, 5, 1.0, 0.08));
    let g = glance(&obs).unwrap();
    assert_eq!(g.burst, 14);
    let truth = stripe_10_by_5();
    assert!(!candidates(g).contains(&truth), "the grid alone misses it");
    let tried = judge_walking_sizes(&obs, &Options::default(), candidates(g));
    let t = judged(&tried, &truth).expect("reached below the grid");
    assert!(t.fits(), "{:?}", t.verdict);
    let mut names: Vec<String> = tried.iter().map(|t| t.candidate.inline()).collect();
    names.sort_unstable();
    let all = names.len();
    names.dedup();
    assert_eq!(names.len(), all, "a candidate judged twice");
}

/// A fixed window of 10 a second whose boundary splits the first burst
/// after 4 admits: the burst is 14, and the window is found below it.
#[test]
fn a_window_boundary_splitting_the_first_burst_is_reached_too() {
    let obs = probe_trace(40.0, &mut fixed_window(10, 1.0, 0.08));
    let g = glance(&obs).unwrap();
    assert_eq!(g.burst, 14);
    let truth = fixed_10_a_second();
    assert!(!candidates(g).contains(&truth), "the grid alone misses it");
    let tried = judge_walking_sizes(&obs, &Options::default(), candidates(g));
    let t = judged(&tried, &truth).expect("reached below the grid");
    assert!(t.fits(), "{:?}", t.verdict);
}

/// Far below a fit the walk gallops and halves: 100 admits within a
/// second and no reject fit a sliding log of any limit from 100 up; from
/// 200 it reaches exactly 100 (and 99 misses) in a few dozen judgings,
/// not a hundred.
#[test]
fn the_walk_reaches_the_least_size_that_fits_far_below_in_few_steps() {
    let mut obs = Vec::new();
    send(&mut obs, 100.0, 0.0, 1.0, &mut |_| true);
    let log = |limit| Candidate {
        policy: Policy::SlidingLog {
            limit,
            window_us: 1_000_000,
        },
        count_rejected: false,
        chunked: false,
    };
    let tried = judge_walking_sizes(&obs, &Options::default(), vec![log(200)]);
    assert!(judged(&tried, &log(100)).expect("reached").fits());
    assert!(!judged(&tried, &log(99)).expect("its miss").fits());
    let least = tried
        .iter()
        .filter(|t| t.fits())
        .filter_map(|t| size_of(&t.candidate))
        .min();
    assert_eq!(least, Some(100));
    // 1 + 32 one by one + at most 2 × 8 galloping and halving.
    assert!(tried.len() <= 1 + 32 + 16, "{}", tried.len());
    assert!(tried.len() > 1 + 32, "{}", tried.len());
}

/// A chunked bucket is walked no lower than its chunk, a fit whose next
/// smaller size was tried already is not walked down, and none is walked
/// above the largest size given.
#[test]
fn the_walk_stops_at_a_chunk_where_the_grid_went_and_at_its_top() {
    // 5 admits within 5 ms and no reject: a bucket of 5 or more.
    let mut obs = Vec::new();
    send(&mut obs, 1000.0, 0.0, 0.005, &mut |_| true);
    let bucket = |capacity, chunked| Candidate {
        policy: Policy::TokenBucket {
            capacity,
            refill: Rate {
                count: 5,
                per_us: 1_000_000,
            },
        },
        count_rejected: false,
        chunked,
    };
    let sizes = |tried: Vec<Tried>| -> Vec<(u64, bool)> {
        tried
            .iter()
            .map(|t| (size_of(&t.candidate).unwrap(), t.fits()))
            .collect()
    };
    let walked =
        |given: Vec<Candidate>| sizes(judge_walking_sizes(&obs, &Options::default(), given));
    // Chunks of 5: 4 is below the floor, never judged.
    assert_eq!(
        walked(vec![bucket(7, true)]),
        [(7, true), (6, true), (5, true)]
    );
    // Continuous: down to the miss at 4.
    assert_eq!(
        walked(vec![bucket(7, false)]),
        [(7, true), (6, true), (5, true), (4, false)]
    );
    // 7's smaller was given: only 6 walks; nothing above 7.
    assert_eq!(
        walked(vec![bucket(7, false), bucket(6, false)]),
        [(7, true), (6, true), (5, true), (4, false)]
    );
    // 2 misses and is not walked; 9, the largest, walks down only.
    assert_eq!(
        walked(vec![bucket(2, false), bucket(9, false)]),
        [
            (2, false),
            (9, true),
            (8, true),
            (7, true),
            (6, true),
            (5, true),
            (4, false)
        ]
    );
    // 5 walks down to its miss and up to 9; 9's walk down judges nothing
    // new.
    assert_eq!(
        walked(vec![bucket(5, false), bucket(9, false)]),
        [
            (5, true),
            (9, true),
            (4, false),
            (6, true),
            (7, true),
            (8, true)
        ]
    );
}

/// A limit or a capacity.
fn size_of(c: &Candidate) -> Option<u64> {
    match c.policy {
        Policy::SlidingLog { limit, .. } => Some(limit),
        Policy::TokenBucket { capacity, .. } => Some(capacity),
        _ => None,
    }
}

/// Wherever the chunks or the windows' boundaries fall in the first burst
/// (a phase between every two of its sends; later ones split nothing),
/// the truth is judged and fits: the grid and the walks leave no gap.
/// The grid alone misses both at the phases that make the burst 13 or 14.
#[test]
fn the_truth_is_judged_and_fits_at_every_phase() {
    let bucket = stripe_10_by_5();
    let window = fixed_10_a_second();
    // The burst's 10 sends and the rejects just after it: 0 to 0.4 s.
    for k in 0..16 {
        let phase = (k as f64 + 0.5) / 40.0;
        for (truth, obs) in [
            (
                &bucket,
                probe_trace(40.0, &mut chunked_bucket(10, 5, 1.0, phase)),
            ),
            (
                &window,
                probe_trace(40.0, &mut fixed_window(10, 1.0, phase)),
            ),
        ] {
            let g = glance(&obs).unwrap();
            let tried = judge_walking_sizes(&obs, &Options::default(), candidates(g));
            let t = judged(&tried, truth).unwrap_or_else(|| {
                panic!(
                    "{} not judged at phase {phase} (burst {})",
                    truth.inline(),
                    g.burst
                )
            });
            assert!(t.fits(), "phase {phase}: {:?}", t.verdict);
        }
    }
}
