//! `allowed_max`: how many of one key's requests an ideal limiter would
//! admit, replaying the algorithm exactly (integer arithmetic) over the
//! send times. Written apart from the reference API's limiters on purpose:
//! a shared bug would cancel itself out.

use rlbench_policy::Policy;
use std::collections::VecDeque;

/// `sends`: send times (µs, trace clock) in ascending order. `epoch_offset`:
/// wall-clock µs at trace time 0, so that aligned windows line up as the
/// limiter's would.
pub(crate) fn allowed(policy: &Policy, sends: &[i64], epoch_offset: i64) -> u64 {
    let wall = |t: i64| t + epoch_offset;
    let mut admitted = 0u64;
    match *policy {
        Policy::SlidingLog { limit, window_us } => {
            let w = window_us as i64;
            let mut log = VecDeque::new();
            for &t in sends {
                while log.front().is_some_and(|&a| a <= t - w) {
                    log.pop_front();
                }
                if (log.len() as u64) < limit {
                    log.push_back(t);
                    admitted += 1;
                }
            }
        }
        Policy::FixedWindow { limit, window_us } => {
            let w = window_us as i64;
            let (mut window, mut count) = (i64::MIN, 0u64);
            for &t in sends {
                let k = wall(t).div_euclid(w);
                if k != window {
                    (window, count) = (k, 0);
                }
                if count < limit {
                    count += 1;
                    admitted += 1;
                }
            }
        }
        Policy::SlidingWindow {
            limit,
            window_us,
            segments,
        } => {
            let seg = (window_us / segments) as i64;
            let s = segments as i64;
            // (segment index, admits) for segments that may still count.
            let mut recent: VecDeque<(i64, u64)> = VecDeque::new();
            for &t in sends {
                let k = wall(t).div_euclid(seg);
                while recent.front().is_some_and(|&(i, _)| i <= k - s) {
                    recent.pop_front();
                }
                let total: u64 = recent.iter().map(|&(_, c)| c).sum();
                if total < limit {
                    match recent.back_mut() {
                        Some((i, c)) if *i == k => *c += 1,
                        _ => recent.push_back((k, 1)),
                    }
                    admitted += 1;
                }
            }
        }
        Policy::SlidingCounter { limit, window_us } => {
            let w = window_us as i128;
            let (mut window, mut prev, mut cur) = (i64::MIN, 0u64, 0u64);
            for &t in sends {
                let k = wall(t).div_euclid(window_us as i64);
                if k != window {
                    prev = if k == window.wrapping_add(1) { cur } else { 0 };
                    (window, cur) = (k, 0);
                }
                let elapsed = (wall(t) - k * window_us as i64) as i128;
                let used = prev as i128 * (w - elapsed) + cur as i128 * w;
                if used + w <= limit as i128 * w {
                    cur += 1;
                    admitted += 1;
                }
            }
        }
        Policy::TokenBucket { capacity, refill } => {
            // Tokens scaled by `per` so refill is exact: Δt·count per µs.
            let per = refill.per_us as i128;
            let full = capacity as i128 * per;
            let (mut tokens, mut last) = (full, sends.first().copied().unwrap_or(0));
            for &t in sends {
                tokens = (tokens + (t - last) as i128 * refill.count as i128).min(full);
                last = t;
                if tokens >= per {
                    tokens -= per;
                    admitted += 1;
                }
            }
        }
        Policy::Gcra { rate, burst } => {
            // Times scaled by `count`, so the emission interval is `per`.
            let (count, per) = (rate.count as i128, rate.per_us as i128);
            let tolerance = (burst as i128 - 1) * per;
            let mut tat = i128::MIN;
            for &t in sends {
                let now = t as i128 * count;
                let base = tat.max(now);
                if now >= base - tolerance {
                    tat = base + per;
                    admitted += 1;
                }
            }
        }
    }
    admitted
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlbench_policy::Rate;

    fn every(step: i64, n: i64) -> Vec<i64> {
        (0..n).map(|i| i * step).collect()
    }

    #[test]
    fn sliding_log_admits_limit_per_window() {
        let p = Policy::SlidingLog {
            limit: 10,
            window_us: 1_000_000,
        };
        // 100 per second for 3 s: 10 in each of the 3 windows.
        assert_eq!(allowed(&p, &every(10_000, 300), 0), 30);
    }

    #[test]
    fn fixed_window_follows_epoch_alignment() {
        let p = Policy::FixedWindow {
            limit: 1,
            window_us: 1_000,
        };
        let sends = [0, 400, 800];
        assert_eq!(allowed(&p, &sends, 0), 1);
        // Shifted so that a boundary falls between 400 and 800.
        assert_eq!(allowed(&p, &sends, 500), 2);
    }

    #[test]
    fn segmented_window_frees_quota_segment_by_segment() {
        let p = Policy::SlidingWindow {
            limit: 2,
            window_us: 1_000,
            segments: 2,
        };
        // Segments of 500: [0,500) gets 2, the 3rd waits until 1000.
        assert_eq!(allowed(&p, &[0, 1, 600, 999, 1_000, 1_001], 0), 4);
    }

    #[test]
    fn sliding_counter_weighs_the_previous_window() {
        let p = Policy::SlidingCounter {
            limit: 10,
            window_us: 1_000,
        };
        let mut sends: Vec<i64> = (900..910).collect();
        sends.extend([1_500; 6]);
        assert_eq!(allowed(&p, &sends, 0), 15);
    }

    #[test]
    fn token_bucket_and_gcra_agree_on_burst_then_rate() {
        let tb = Policy::TokenBucket {
            capacity: 5,
            refill: Rate {
                count: 10,
                per_us: 1_000_000,
            },
        };
        let gcra = Policy::Gcra {
            rate: Rate {
                count: 10,
                per_us: 1_000_000,
            },
            burst: 5,
        };
        // 1000 requests/s for 2 s: 5 at once, then 10/s → 5 + 20.
        let sends = every(1_000, 2_001);
        assert_eq!(allowed(&tb, &sends, 0), 25);
        assert_eq!(allowed(&gcra, &sends, 0), 25);
    }
}
