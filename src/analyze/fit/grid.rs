//! The fit's grid: what a trace says at a glance (its first burst, its
//! admits per second once limited), and every policy near it people write.

use crate::analyze::fit::candidate::Candidate;
use crate::verify::{Decided, Obs};
use reference_api::{Policy, Rate};

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
