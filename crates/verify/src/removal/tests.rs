//! The removal engine against hand-built traces and a brute force.

use super::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn items(pairs: &[(i64, i64)]) -> Vec<Item> {
    pairs.iter().map(|&(x, y)| Item { x, y }).collect()
}

const LOG: Bound = Bound::Window {
    limit: 3,
    span: 1_000,
    inclusive: false,
};

#[test]
fn limit_plus_one_inside_the_window_is_one_violation() {
    let t = items(&[(0, 10), (100, 110), (200, 210), (998, 999)]);
    assert_eq!(min_removals(&t, LOG, 0), 1);
}

#[test]
fn limit_plus_one_spanning_exactly_the_window_is_fine() {
    // min(sent) = 0, max(done) = 1000: the decisions may be a whole window apart.
    let t = items(&[(0, 10), (100, 110), (200, 210), (990, 1_000)]);
    assert_eq!(min_removals(&t, LOG, 0), 0);
}

#[test]
fn slack_only_ever_forgives() {
    let t = items(&[(0, 10), (100, 110), (200, 210), (990, 999)]);
    assert_eq!(min_removals(&t, LOG, 0), 1);
    assert_eq!(
        min_removals(&t, LOG, 1),
        0,
        "999 + 1 µs of slack reaches the window"
    );
}

#[test]
fn jittered_intervals_that_straddle_the_boundary_are_not_proof() {
    // Each request took 50 µs; the 4th started 980 µs after the 1st and
    // ended 1030 µs after it: its decision may be outside the window.
    let t = items(&[(0, 50), (10, 60), (20, 70), (980, 1_030)]);
    assert_eq!(min_removals(&t, LOG, 0), 0);
    // Possible, though: the decisions may also have been 930 µs apart.
    let swapped: Vec<Item> = t.iter().map(|i| Item { x: i.y, y: i.x }).collect();
    assert_eq!(min_removals(&swapped, LOG, 0), 1);
}

#[test]
fn three_times_the_limit_is_two_limits_of_violations() {
    // The fake global: 3 replicas each admit 3 in the same 100 µs.
    let t: Vec<Item> = (0..9)
        .map(|i| Item {
            x: i * 10,
            y: i * 10 + 5,
        })
        .collect();
    assert_eq!(min_removals(&t, LOG, 0), 6);
    assert_eq!(peak(&t, 1_000, 0), 9);
}

const BUCKET: Bound = Bound::Linear {
    burst: 3,
    count: 1,
    per: 100,
    max_span: None,
};

#[test]
fn a_bucket_allows_burst_plus_refill() {
    // 3 at once, then one per 100 µs: exactly what the bucket allows.
    let ok = items(&[(0, 1), (0, 1), (0, 1), (100, 101), (200, 201), (300, 301)]);
    assert_eq!(min_removals(&ok, BUCKET, 0), 0);
    // A 4th in the first burst cannot be explained by any timing.
    let bad = items(&[(0, 1), (0, 1), (0, 1), (0, 1)]);
    assert_eq!(min_removals(&bad, BUCKET, 0), 1);
}

#[test]
fn a_bucket_boundary_is_exact() {
    // 5 admits need span >= 200 µs (3 + 2 refills).
    let at = |last: i64| items(&[(0, 0), (0, 0), (0, 0), (100, 100), (last, last)]);
    assert_eq!(min_removals(&at(200), BUCKET, 0), 0);
    assert_eq!(min_removals(&at(199), BUCKET, 0), 1);
    assert_eq!(min_removals(&at(199), BUCKET, 1), 0);
}

#[test]
fn a_capped_linear_bound_ignores_long_spans() {
    let capped = Bound::Linear {
        burst: 1,
        count: 0,
        per: 1,
        max_span: Some(100),
    };
    // Two admits 150 µs apart: beyond the cap, nothing is claimed.
    assert_eq!(min_removals(&items(&[(0, 0), (150, 150)]), capped, 0), 0);
    assert_eq!(min_removals(&items(&[(0, 0), (100, 100)]), capped, 0), 1);
}

/// Does some subset of `set` break the bound? Checks every subset.
fn breaks(set: &[Item], bound: Bound, slack: i64) -> bool {
    let n = set.len();
    (1u32..(1 << n)).any(|mask| {
        let s: Vec<&Item> = (0..n)
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| &set[i])
            .collect();
        let min_x = s.iter().map(|i| i.x).min().unwrap();
        let max_y = s.iter().map(|i| i.y).max().unwrap();
        let span = (max_y + slack - min_x).max(0) as i128;
        let count = s.len() as i128;
        match bound {
            Bound::Window {
                limit,
                span: w,
                inclusive,
            } => {
                let inside = if inclusive {
                    span <= w as i128
                } else {
                    span < w as i128
                };
                inside && count > limit as i128
            }
            Bound::Linear {
                burst,
                count: c,
                per,
                max_span,
            } => {
                max_span.is_none_or(|m| span <= m as i128)
                    && count * per as i128 > burst as i128 * per as i128 + span * c as i128
            }
        }
    })
}

fn brute_min_removals(all: &[Item], bound: Bound, slack: i64) -> u64 {
    let n = all.len();
    (0u32..(1 << n))
        .filter(|keep| {
            let kept: Vec<Item> = (0..n)
                .filter(|i| keep & (1 << i) != 0)
                .map(|i| all[i])
                .collect();
            !breaks(&kept, bound, slack)
        })
        .map(|keep| (n as u32 - keep.count_ones()) as u64)
        .min()
        .unwrap()
}

#[test]
fn agrees_with_brute_force_on_random_traces() {
    let mut rng = SmallRng::seed_from_u64(42);
    for round in 0..400 {
        let n = rng.random_range(1..=8);
        let swapped = round % 2 == 1;
        let t: Vec<Item> = (0..n)
            .map(|_| {
                let s = rng.random_range(0..40);
                let d = s + rng.random_range(0..8);
                if swapped {
                    Item { x: d, y: s }
                } else {
                    Item { x: s, y: d }
                }
            })
            .collect();
        let bounds = [
            Bound::Window {
                limit: rng.random_range(1..4),
                span: rng.random_range(1..20),
                inclusive: false,
            },
            Bound::Window {
                limit: rng.random_range(1..4),
                span: rng.random_range(0..20),
                inclusive: true,
            },
            Bound::Linear {
                burst: rng.random_range(1..4),
                count: rng.random_range(0..3),
                per: rng.random_range(1..12),
                max_span: None,
            },
            Bound::Linear {
                burst: rng.random_range(1..4),
                count: rng.random_range(1..3),
                per: rng.random_range(1..12),
                max_span: Some(rng.random_range(0..20)),
            },
        ];
        let slack = rng.random_range(0..3);
        for bound in bounds {
            let want = brute_min_removals(&t, bound, slack);
            assert_eq!(
                min_removals(&t, bound, slack),
                want,
                "round {round}: {t:?} {bound:?} slack {slack}"
            );
            // The witnessed run counts the same, and each set it shows is
            // itself proof: it breaks the bound.
            let (n, found) = witnessed(&t, bound, slack);
            assert_eq!(n, want, "round {round}");
            assert_eq!(found.first.is_some(), n > 0, "round {round}");
            for b in [found.first, found.largest].into_iter().flatten() {
                let set: Vec<Item> = b.members.iter().map(|&m| t[m]).collect();
                assert!(
                    breaks(&set, bound, slack),
                    "round {round}: {set:?} does not break {bound:?}"
                );
                assert!(b.all >= b.members.len() as u64, "round {round}");
            }
        }
    }
}

/// The engine as first written (a kept set in a `BTreeSet`, binary
/// searches for every threshold): the faster one must find the same
/// count and the same witnesses, item for item.
fn first_written(items: &[Item], bound: Bound, slack: i64) -> (u64, Breaks) {
    use std::collections::BTreeSet;
    let mut breaks = Breaks::default();
    if items.is_empty() {
        return (0, breaks);
    }
    let n = items.len();
    let index = Index::new(items);
    let at_least = |v: i64| index.xs.partition_point(|&x| x < v);
    let mut counts = Fenwick::new(n);
    let mut seen = Fenwick::new(n);
    let mut kept: BTreeSet<(i64, usize)> = BTreeSet::new();
    let mut tree = MaxTree::new(n, NEG);
    let mut removed = 0;
    let change = |tree: &mut MaxTree, counts: &mut Fenwick, x: i64, p: usize, sign: i64| {
        counts.add(p, sign);
        if let Bound::Linear { count, per, .. } = bound {
            let sign = sign as i128;
            tree.add(0, index.above(x), sign * per as i128);
            tree.add(p, p + 1, sign * (x as i128 * count as i128 - NEG));
        }
    };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (items[i].y, items[i].x, i));
    for j in order {
        let Item { x, y } = items[j];
        let p = index.pos[j];
        change(&mut tree, &mut counts, x, p, 1);
        kept.insert((x, p));
        seen.add(p, 1);
        let right = y.saturating_add(slack);
        loop {
            let broken = match bound {
                Bound::Window {
                    limit,
                    span,
                    inclusive,
                } => {
                    let start = if inclusive {
                        at_least(right - span)
                    } else {
                        index.above(right - span)
                    };
                    (counts.suffix(start) as u64 > limit).then_some(start)
                }
                Bound::Linear {
                    burst,
                    count,
                    per,
                    max_span,
                } => {
                    let zero = at_least(right);
                    let over_burst = counts.suffix(zero) as u64 > burst;
                    let from = max_span.map_or(0, |m| at_least(right - m));
                    let allowed = burst as i128 * per as i128 + right as i128 * count as i128;
                    tree.first_above(from, zero, allowed)
                        .or(over_burst.then_some(zero))
                }
            };
            let Some(anchor) = broken else { break };
            let all = seen.suffix(anchor) as u64;
            let first = breaks.first.is_none();
            if first || breaks.largest.as_ref().is_some_and(|b| b.all < all) {
                let mut members: Vec<usize> = kept
                    .range((index.xs[anchor], 0)..)
                    .map(|&(_, p)| index.at[p])
                    .collect();
                members.sort_unstable();
                let b = Break { members, all };
                if first {
                    breaks.first = Some(b.clone());
                }
                breaks.largest = Some(b);
            }
            let Some((dx, dp)) = kept.pop_last() else {
                break;
            };
            change(&mut tree, &mut counts, dx, dp, -1);
            removed += 1;
        }
    }
    (removed, breaks)
}

#[test]
fn finds_what_the_first_engine_found_on_long_random_traces() {
    let mut rng = SmallRng::seed_from_u64(7);
    for round in 0..300 {
        let n = rng.random_range(1..=400);
        let swapped = round % 2 == 1;
        // Many ties (times on a coarse grid) and some long intervals.
        let t: Vec<Item> = (0..n)
            .map(|_| {
                let s = rng.random_range(0..2_000) / rng.random_range(1..4) * 3;
                let d = s + if rng.random_bool(0.1) {
                    rng.random_range(0..500)
                } else {
                    rng.random_range(0..20)
                };
                if swapped {
                    Item { x: d, y: s }
                } else {
                    Item { x: s, y: d }
                }
            })
            .collect();
        let bounds = [
            Bound::Window {
                limit: rng.random_range(1..20),
                span: rng.random_range(1..300),
                inclusive: round % 3 == 0,
            },
            Bound::Linear {
                burst: rng.random_range(1..20),
                count: rng.random_range(0..4),
                per: rng.random_range(1..60),
                max_span: rng.random_bool(0.5).then(|| rng.random_range(0..300)),
            },
        ];
        let slack = rng.random_range(0..10);
        for bound in bounds {
            let want = first_written(&t, bound, slack);
            assert_eq!(witnessed(&t, bound, slack), want, "round {round} {bound:?}");
            assert_eq!(min_removals(&t, bound, slack), want.0, "round {round}");
        }
    }
}
