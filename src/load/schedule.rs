//! When each request should leave: the open-loop schedules. Pure functions
//! of a seed and offsets from the start, so they are tested without
//! sleeping:
//! - `Constant`: evenly spaced at `rate`;
//! - `Poisson`: exponential gaps at mean `rate` (seeded, reproducible);
//! - `Stages`: k6-style linear ramps from the previous target to each
//!   stage's target over its duration; the last target then holds;
//! - `Bursts`: `per_edge` requests spread over `spread` around every edge of
//!   the policy's (epoch-aligned) window — the attack that makes a fixed
//!   window admit twice its limit within one window's length.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Shape {
    Constant {
        rate: f64,
    },
    Poisson {
        rate: f64,
    },
    /// Starts at `from` requests/s; each stage ramps to `target` over `over`.
    Stages {
        from: f64,
        stages: Vec<Stage>,
    },
    Bursts {
        per_edge: u32,
        spread: Duration,
        window: Duration,
    },
    /// Closed loop, not a schedule: `concurrency` workers each send, wait
    /// for the answer (and `think`), and send again. Never the default.
    Closed {
        concurrency: u32,
        think: Duration,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Stage {
    pub target: f64,
    pub over: Duration,
}

impl Shape {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Shape::Constant { .. } => "constant",
            Shape::Poisson { .. } => "poisson",
            Shape::Stages { .. } => "stages",
            Shape::Bursts { .. } => "bursts",
            Shape::Closed { .. } => "closed",
        }
    }

    /// The mean rate the schedule asks for over `duration` (requests/s).
    pub(crate) fn target_rate(&self, duration: Duration) -> f64 {
        let secs = duration.as_secs_f64().max(1e-9);
        match self {
            Shape::Constant { rate } | Shape::Poisson { rate } => *rate,
            Shape::Bursts {
                per_edge, window, ..
            } => *per_edge as f64 / window.as_secs_f64().max(1e-9),
            Shape::Stages { .. } => Schedule::new(self, duration, 0, 0).count() as f64 / secs,
            // No schedule: whatever the workers manage.
            Shape::Closed { .. } => 0.0,
        }
    }
}

/// The intended send offsets of one run, in order.
pub(crate) struct Schedule {
    shape: Shape,
    end: f64,
    k: u64,
    /// Seconds: the previous offset (Poisson) or the next edge (Bursts).
    t: f64,
    rng: SmallRng,
}

impl Schedule {
    /// `phase_us`: wall-clock µs at offset 0 modulo nothing — the Bursts
    /// schedule aligns its edges to epoch-aligned windows with it.
    pub(crate) fn new(shape: &Shape, duration: Duration, seed: u64, phase_us: i64) -> Self {
        let t = match shape {
            Shape::Bursts { window, .. } => {
                let w = window.as_micros().max(1) as i64;
                // First edge at or after offset 0, in seconds.
                (w - phase_us.rem_euclid(w)) as f64 / 1e6 % window.as_secs_f64()
            }
            _ => 0.0,
        };
        Schedule {
            shape: shape.clone(),
            end: duration.as_secs_f64(),
            k: 0,
            t,
            rng: SmallRng::seed_from_u64(seed ^ 0x5ced_u64),
        }
    }

    fn next_secs(&mut self) -> Option<f64> {
        let k = self.k;
        self.k += 1;
        match &self.shape {
            Shape::Constant { rate } => Some(k as f64 / rate),
            Shape::Poisson { rate } => {
                if k > 0 {
                    let u: f64 = self.rng.random::<f64>();
                    self.t += -(1.0 - u).ln() / rate;
                }
                Some(self.t)
            }
            Shape::Stages { from, stages } => stage_time(*from, stages, k as f64),
            Shape::Bursts {
                per_edge,
                spread,
                window,
            } => {
                let n = (*per_edge).max(1) as u64;
                let (edge, i) = (k / n, k % n);
                let edge_t = self.t + edge as f64 * window.as_secs_f64();
                let s = spread.as_secs_f64();
                // Evenly over [edge - s/2, edge + s/2]; before 0 moves to 0.
                let offset = if n == 1 {
                    0.0
                } else {
                    -s / 2.0 + s * i as f64 / (n - 1) as f64
                };
                Some((edge_t + offset).max(0.0))
            }
            Shape::Closed { .. } => None,
        }
    }
}

/// Time at which the cumulative count of a piecewise-linear rate reaches `n`.
fn stage_time(from: f64, stages: &[Stage], n: f64) -> Option<f64> {
    let (mut t0, mut n0, mut a) = (0.0, 0.0, from);
    for s in stages {
        let d = s.over.as_secs_f64();
        let b = if d > 0.0 { (s.target - a) / d } else { 0.0 };
        let n1 = n0 + a * d + b * d * d / 2.0;
        if n < n1 {
            let want = n - n0;
            let tau = if b.abs() < 1e-12 {
                want / a
            } else {
                (-a + (a * a + 2.0 * b * want).max(0.0).sqrt()) / b
            };
            return Some(t0 + tau);
        }
        (t0, n0, a) = (t0 + d, n1, s.target);
    }
    // After the last stage its target holds.
    (a > 0.0).then(|| t0 + (n - n0) / a)
}

impl Iterator for Schedule {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let t = self.next_secs()?;
        (t < self.end).then(|| Duration::from_secs_f64(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: &Shape, d: f64) -> Vec<f64> {
        Schedule::new(s, Duration::from_secs_f64(d), 7, 0)
            .map(|t| t.as_secs_f64())
            .collect()
    }

    #[test]
    fn constant_is_evenly_spaced_and_ends_before_the_duration() {
        let t = secs(&Shape::Constant { rate: 400.0 }, 2.0);
        assert_eq!(t.len(), 800);
        assert_eq!(t[0], 0.0);
        assert!((t[1] - 0.0025).abs() < 1e-12);
        assert!(*t.last().unwrap() < 2.0);
        assert_eq!(secs(&Shape::Constant { rate: 3.0 }, 1.0).len(), 3);
        assert_eq!(secs(&Shape::Constant { rate: 3.0 }, 1.001).len(), 4);
    }

    #[test]
    fn poisson_has_the_asked_mean_and_is_reproducible() {
        let shape = Shape::Poisson { rate: 1_000.0 };
        let t = secs(&shape, 10.0);
        assert!((9_700..=10_300).contains(&t.len()), "{}", t.len());
        assert!(t.windows(2).all(|w| w[0] <= w[1]));
        let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        // Exponential gaps: standard deviation equals the mean.
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.05,
            "cv {}",
            var.sqrt() / mean
        );
        assert_eq!(t, secs(&shape, 10.0), "same seed, same arrivals");
    }

    #[test]
    fn stages_ramp_linearly_then_hold() {
        // 0 → 100/s over 2 s (100 requests), then 100/s held for 1 s.
        let shape = Shape::Stages {
            from: 0.0,
            stages: vec![Stage {
                target: 100.0,
                over: Duration::from_secs(2),
            }],
        };
        let t = secs(&shape, 3.0);
        assert_eq!(t.len(), 200);
        let in_first = t.iter().filter(|&&x| x < 1.0).count();
        assert_eq!(
            in_first, 25,
            "a quarter of the ramp's requests in its first half"
        );
        let held = t.iter().filter(|&&x| x >= 2.0).count();
        assert_eq!(held, 100);
        assert!((shape.target_rate(Duration::from_secs(3)) - 200.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn a_down_ramp_and_a_flat_stage_work_too() {
        let shape = Shape::Stages {
            from: 50.0,
            stages: vec![
                Stage {
                    target: 50.0,
                    over: Duration::from_secs(1),
                },
                Stage {
                    target: 0.0,
                    over: Duration::from_secs(2),
                },
            ],
        };
        let t = secs(&shape, 10.0);
        assert_eq!(t.len(), 100, "50 flat + 50 ramping down, nothing after");
        assert!(t.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn bursts_straddle_every_window_edge() {
        // Windows of 1 s; the wall clock is 0.25 s into a window at offset 0.
        let shape = Shape::Bursts {
            per_edge: 5,
            spread: Duration::from_millis(40),
            window: Duration::from_secs(1),
        };
        let t: Vec<f64> = Schedule::new(&shape, Duration::from_secs(3), 1, 250_000)
            .map(|d| d.as_secs_f64())
            .collect();
        assert_eq!(t.len(), 15, "edges at 0.75, 1.75, 2.75 s");
        let first = &t[..5];
        assert!(
            (first[0] - 0.73).abs() < 1e-9 && (first[4] - 0.77).abs() < 1e-9,
            "{first:?}"
        );
        assert!(first.iter().filter(|&&x| x < 0.75).count() == 2);
        assert!((shape.target_rate(Duration::from_secs(3)) - 5.0).abs() < 0.01);
    }
}
