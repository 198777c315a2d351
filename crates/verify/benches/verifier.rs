//! Verifier speed: 10 million synthetic events judged (sliding log, token
//! bucket, fixed window; counts alone, then with every key's witnesses as
//! a run keeps them), printed as seconds and events/s. Run with
//! `cargo bench --bench verifier` (add `-- 1000000` for another size).
#![allow(clippy::print_stdout)]

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rlbench_policy::{Policy, Rate};
use rlbench_verify::{self as verify, Decided, Obs};
use std::time::Instant;

fn main() {
    let events: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let keys = 10_000;
    let per_key = events / keys;
    let mut rng = SmallRng::seed_from_u64(1);
    // Each key: a request every ~2 ms with up to 5 ms latency; about one in
    // five admitted, like a limiter under pressure.
    let traces: Vec<Vec<Obs>> = (0..keys)
        .map(|_| {
            let mut t = 0i64;
            (0..per_key)
                .map(|_| {
                    t += rng.random_range(0..4_000);
                    let decided = if rng.random_bool(0.2) {
                        Decided::Admitted
                    } else {
                        Decided::Rejected
                    };
                    Obs {
                        sent: t,
                        done: t + rng.random_range(100..5_000),
                        decided,
                    }
                })
                .collect()
        })
        .collect();
    let total: usize = traces.iter().map(Vec::len).sum();
    let policies = [
        Policy::SlidingLog {
            limit: 100,
            window_us: 1_000_000,
        },
        Policy::TokenBucket {
            capacity: 100,
            refill: Rate {
                count: 100,
                per_us: 1_000_000,
            },
        },
        Policy::FixedWindow {
            limit: 100,
            window_us: 1_000_000,
        },
    ];
    println!("verifier: {total} events over {keys} keys");
    for policy in &policies {
        let started = Instant::now();
        let v = verify::verify(
            policy,
            traces.iter().map(Vec::as_slice),
            &verify::Options::default(),
        );
        let secs = started.elapsed().as_secs_f64();
        println!(
            "  {:<14} {secs:>6.2} s  {:>12.0} events/s  (admitted {}, definite {})",
            policy.algorithm(),
            total as f64 / secs,
            v.admitted,
            v.definite_violations
        );
        // As `rlbench run` judges: with the witnesses of every key.
        let started = Instant::now();
        let opts = verify::Options::default();
        let mut found = 0usize;
        for t in &traces {
            found += verify::judge_key(policy, t, &opts, true).1.len();
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "  {:<14} {secs:>6.2} s  {:>12.0} events/s  with witnesses ({found} kept)",
            "",
            total as f64 / secs,
        );
    }
}
