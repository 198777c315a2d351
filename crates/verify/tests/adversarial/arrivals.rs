//! Send times for the generated cases: single arrivals, bursts at window
//! edges, long gaps, dense runs, and runs of doubling bursts.

use super::*;

pub(crate) fn exp_gap(rng: &mut SmallRng, mean: f64) -> i64 {
    (-(1.0 - rng.random::<f64>()).ln() * mean) as i64
}

/// Send times: single arrivals, bursts (often straddling the next window
/// edge), long gaps, dense runs; with `snap`, many moved onto an edge
/// exactly or one µs either side of it; with `doubling`, runs of bursts at
/// many edges. `quota`: what the policy admits per
/// `scale`; `next_edge(t)`: the first window edge (trace time) after `t`.
pub(crate) fn arrivals(
    rng: &mut SmallRng,
    n: usize,
    scale: i64,
    quota: u64,
    next_edge: &dyn Fn(i64) -> i64,
    snap: f64,
    doubling: bool,
) -> Vec<i64> {
    let rho = rng.random_range(0.3..4.0);
    let mean = (scale as f64 / quota as f64 / rho).max(1.0);
    let mut t = rng.random_range(0..=scale);
    let mut out = Vec::with_capacity(n + 32);
    while out.len() < n {
        match rng.random_range(0..100) {
            0..=39 => {
                t += exp_gap(rng, mean);
                out.push(t);
            }
            40..=69 => {
                let m = rng.random_range(1..=3 * quota as usize + 2);
                let sigma = rng.random_range(0..=scale / 8);
                let center = if rng.random_bool(0.7) {
                    next_edge(t)
                } else {
                    t + exp_gap(rng, mean)
                };
                for _ in 0..m {
                    out.push((center - sigma / 2 + rng.random_range(0..=sigma)).max(0));
                }
                t = t.max(center + sigma / 2);
            }
            70..=79 => {
                t += rng.random_range(scale..=4 * scale);
                out.push(t);
            }
            // Doubling at edges, sustained: two quotas right at every
            // `stride`-th edge for many edges, so that deciders whose
            // clocks straddle an edge each admit a full window, as often
            // as a window lets them (every S+1 segments for a segmented
            // window: the adversary that tells "S+2 segments hold 2N"
            // from the truth).
            80..=84 if doubling => {
                let edges = rng.random_range(3..=40);
                let stride = rng.random_range(1..=6);
                let width = pick(rng, &[0, 2, 20, (scale / 50).max(1)]);
                for _ in 0..edges {
                    let mut center = next_edge(t);
                    for _ in 1..stride {
                        center = next_edge(center);
                    }
                    for _ in 0..2 * quota + 1 {
                        out.push((center + rng.random_range(-width..=width)).max(0));
                    }
                    t = center + width + 1;
                }
            }
            _ => {
                let k = rng.random_range(2..=2 * quota as usize + 2);
                let g = rng.random_range(0..=(scale / (4 * quota as i64)).max(1));
                for _ in 0..k {
                    t += g;
                    out.push(t);
                }
            }
        }
    }
    out.truncate(n);
    for t in &mut out {
        if rng.random_bool(snap) {
            *t = (next_edge(*t - 1) + rng.random_range(-1..=1)).max(0);
        }
    }
    out.sort_unstable();
    out
}
