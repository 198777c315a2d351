//! The case generator: seeded schedules, clocks, decision placements and
//! verifier options for each algorithm and kind of case.

use super::*;

#[derive(Clone, Debug)]
pub(crate) struct Case {
    /// What was drawn, for the failure message.
    pub(crate) label: String,
    pub(crate) policy: Policy,
    pub(crate) lim: Sim,
    pub(crate) clock: Clock,
    pub(crate) warm: Vec<Req>,
    pub(crate) reqs: Vec<Req>,
    pub(crate) opts: Options,
}

pub(crate) fn pick<T: Copy>(rng: &mut SmallRng, xs: &[T]) -> T {
    xs[rng.random_range(0..xs.len())]
}

pub(crate) fn gen_case(algo: Algo, kind: Kind, seed: u64) -> Case {
    let mut rng = SmallRng::seed_from_u64(
        seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((algo as u64) << 48) ^ ((kind as u64) << 56),
    );
    let asp = matches!(
        algo,
        Algo::AspFixed | Algo::AspSeg | Algo::AspBucket | Algo::ChunkedTimer | Algo::AspReleased
    );
    let Clocks {
        resolution,
        epoch,
        deciders,
        spread,
        offsets,
        reorder,
        slack,
    } = draw_clocks(&mut rng, asp);
    // How stale a reading may be. The clamping limiters decide as if at
    // their effective time, which lies inside the request's interval however
    // stale the reading. A GCRA does not clamp (its only state is the
    // theoretical arrival time): a stale reading makes it stricter, by at
    // most the reject's own interval, which the verifier allows for. Keys
    // per window do not clamp either, and a reading behind another one
    // across an edge lets both admit: within the promise only while every
    // reading's error stays within the slack.
    let max_stale = if matches!(algo, Algo::SegKeyed | Algo::CounterKeyed) {
        slack - spread - resolution
    } else {
        i64::MAX
    };
    let ties_late = rng.random_bool(0.5);
    // Mostly small limits; one case in four a burst of up to 60 (a bucket
    // of 10 or more with stale readings was the outside review's find).
    let wide = rng.random_bool(0.25);
    let limit = if wide {
        rng.random_range(9..=60u64)
    } else {
        rng.random_range(1..=8u64)
    };
    // Segments: up to 5, or up to 16 in the wide cases.
    let most_segments = if wide { 16 } else { 5 };
    let tick_for = |rng: &mut SmallRng, period: i64| match rng.random_range(0..3) {
        0 => (period / rng.random_range(1..=10)).max(1),
        1 => rng.random_range(1..=period),
        _ => rng.random_range(1..=period / 10 + 1),
    };
    // Created before anything happens, heartbeat at a random phase.
    let created = epoch - 5_000_000 - rng.random_range(0..=100_000);
    let heartbeat = |rng: &mut SmallRng, period: i64, tick: i64| Heartbeat {
        period,
        tick,
        origin: created
            + if tick > 0 {
                rng.random_range(0..tick)
            } else {
                0
            },
        last: created,
        ties_late,
    };
    // (policy, limiter, scale: its window or a drained bucket's refill time,
    // the epoch-aligned edge period for bursts, may be judged aligned,
    // lateness, chunked, quota: what it admits per scale)
    let (policy, lim, scale, edge, aligned_ok, lateness, chunked, quota) = match algo {
        Algo::LogMemory | Algo::LogZset => {
            let w = rng.random_range(1_000..=40_000);
            (
                Policy::SlidingLog {
                    limit,
                    window_us: w as u64,
                },
                Sim::Log(SlidingLog::new(limit, w, algo == Algo::LogZset)),
                w,
                None,
                false,
                0,
                false,
                limit,
            )
        }
        Algo::FixedEpoch | Algo::FixedKeyed | Algo::FixedAnchored => {
            let w = rng.random_range(1_000..=40_000);
            let kind = match algo {
                Algo::FixedEpoch => FixedKind::Epoch,
                Algo::FixedKeyed => FixedKind::Keyed,
                _ => FixedKind::Anchored,
            };
            (
                Policy::FixedWindow {
                    limit,
                    window_us: w as u64,
                },
                Sim::Fixed(FixedWindow::new(limit, w, kind)),
                w,
                (kind != FixedKind::Anchored).then_some(w),
                kind != FixedKind::Anchored,
                0,
                false,
                limit,
            )
        }
        Algo::SegEpoch | Algo::SegKeyed => {
            let s = rng.random_range(1..=most_segments);
            let seg = rng.random_range(300..=10_000);
            (
                Policy::SlidingWindow {
                    limit,
                    window_us: (s * seg) as u64,
                    segments: s as u64,
                },
                if algo == Algo::SegEpoch {
                    Sim::Seg(Segmented::new(limit, seg, s))
                } else {
                    Sim::SegKeys(SegmentedKeys {
                        limit,
                        seg,
                        s,
                        keys: Keys::default(),
                    })
                },
                s * seg,
                Some(seg),
                true,
                0,
                false,
                limit,
            )
        }
        Algo::CounterLt | Algo::CounterLe | Algo::CounterKeyed | Algo::CounterFloat => {
            let w = rng.random_range(1_000..=40_000);
            (
                Policy::SlidingCounter {
                    limit,
                    window_us: w as u64,
                },
                if algo == Algo::CounterKeyed {
                    Sim::CounterKeys(CounterKeys {
                        limit,
                        w,
                        plus_one: rng.random_bool(0.5),
                        keys: Keys::default(),
                    })
                } else {
                    Sim::Counter(SlidingCounter {
                        float: algo == Algo::CounterFloat,
                        ..SlidingCounter::new(
                            limit,
                            w,
                            algo == Algo::CounterLe
                                || (algo == Algo::CounterFloat && rng.random_bool(0.5)),
                        )
                    })
                },
                w,
                Some(w),
                true,
                0,
                false,
                limit,
            )
        }
        Algo::Bucket | Algo::BucketFloat | Algo::Gcra => {
            let count = rng.random_range(1..=3u64);
            let per = rng.random_range(1_000..=20_000i64);
            let rate = Rate {
                count,
                per_us: per as u64,
            };
            let scale = (per * limit as i64 / count as i64).max(per);
            if algo != Algo::Gcra {
                (
                    Policy::TokenBucket {
                        capacity: limit,
                        refill: rate,
                    },
                    if algo == Algo::Bucket {
                        Sim::Bucket(TokenBucket::new(limit, count, per))
                    } else {
                        Sim::FloatBucket(FloatBucket::new(limit, count, per))
                    },
                    scale,
                    None,
                    false,
                    0,
                    false,
                    limit,
                )
            } else {
                (
                    Policy::Gcra { rate, burst: limit },
                    Sim::Gcra(Gcra::new(limit, count, per)),
                    scale,
                    None,
                    false,
                    0,
                    false,
                    limit,
                )
            }
        }
        Algo::AspFixed => {
            let p = rng.random_range(1_000..=20_000);
            let tick = tick_for(&mut rng, p);
            (
                Policy::FixedWindow {
                    limit,
                    window_us: p as u64,
                },
                Sim::AspFixed(AspFixed {
                    limit,
                    hb: heartbeat(&mut rng, p, tick),
                    count: 0,
                }),
                p,
                None,
                false,
                tick,
                false,
                limit,
            )
        }
        Algo::AspSeg => {
            let s = rng.random_range(1..=most_segments);
            let seg = rng.random_range(300..=10_000);
            let tick = tick_for(&mut rng, seg);
            (
                Policy::SlidingWindow {
                    limit,
                    window_us: (s * seg) as u64,
                    segments: s as u64,
                },
                Sim::AspSeg(AspSegmented {
                    limit,
                    hb: heartbeat(&mut rng, seg, tick),
                    ring: vec![0; s as usize].into(),
                }),
                s * seg,
                None,
                false,
                tick,
                false,
                limit,
            )
        }
        Algo::LogAttempts | Algo::CounterAttempts => {
            let w = rng.random_range(1_000..=40_000);
            let (policy, kind) = if algo == Algo::LogAttempts {
                (
                    Policy::SlidingLog {
                        limit,
                        window_us: w as u64,
                    },
                    Counting::Log,
                )
            } else {
                (
                    Policy::SlidingCounter {
                        limit,
                        window_us: w as u64,
                    },
                    Counting::Counter,
                )
            };
            (
                policy,
                Sim::Attempts(Attempts::new(kind, limit, w)),
                w,
                (kind == Counting::Counter).then_some(w),
                false,
                0,
                false,
                limit,
            )
        }
        Algo::SegAttempts => {
            let s = rng.random_range(1..=most_segments);
            let seg = rng.random_range(300..=10_000);
            (
                Policy::SlidingWindow {
                    limit,
                    window_us: (s * seg) as u64,
                    segments: s as u64,
                },
                Sim::Attempts(Attempts::new(Counting::Segments { s }, limit, seg)),
                s * seg,
                Some(seg),
                false,
                0,
                false,
                limit,
            )
        }
        Algo::ChunkEpoch | Algo::ChunkFirstHit => {
            let chunk = rng.random_range(1..=3u64);
            let per = rng.random_range(1_000..=20_000i64);
            let epoch = algo == Algo::ChunkEpoch;
            (
                Policy::TokenBucket {
                    capacity: limit,
                    refill: Rate {
                        count: chunk,
                        per_us: per as u64,
                    },
                },
                Sim::Chunks(ChunkBucket::new(limit, chunk, per, epoch)),
                (per * limit as i64 / chunk as i64).max(per),
                epoch.then_some(per),
                epoch,
                0,
                true,
                limit,
            )
        }
        Algo::AspBucket | Algo::ChunkedTimer => {
            let count = rng.random_range(1..=3u64);
            let per = rng.random_range(1_000..=20_000i64);
            let tick = if algo == Algo::AspBucket {
                tick_for(&mut rng, per)
            } else {
                0
            };
            (
                Policy::TokenBucket {
                    capacity: limit,
                    refill: Rate {
                        count,
                        per_us: per as u64,
                    },
                },
                Sim::AspBucket(AspBucket {
                    cap: limit,
                    count,
                    hb: heartbeat(&mut rng, per, tick),
                    tokens: limit,
                }),
                (per * limit as i64 / count as i64).max(per),
                None,
                false,
                tick,
                true,
                limit,
            )
        }
        // Heartbeats up to four token periods apart (100 ms against one
        // token per 10 ms): the lag of a delivery is the tick.
        Algo::AspReleased => {
            let count = rng.random_range(1..=3u64);
            let per = rng.random_range(1_000..=20_000i64);
            let tick = rng.random_range(1..=4 * per);
            (
                Policy::TokenBucket {
                    capacity: limit,
                    refill: Rate {
                        count,
                        per_us: per as u64,
                    },
                },
                Sim::AspFill(AspFill {
                    cap: limit as f64,
                    per_token: per as f64 / count as f64,
                    hb: heartbeat(&mut rng, tick, tick),
                    last: created,
                    tokens: limit as f64,
                }),
                (per * limit as i64 / count as i64).max(per),
                None,
                false,
                tick,
                false,
                limit,
            )
        }
    };
    // Where the adversary aims its bursts: epoch-aligned window edges, a
    // heartbeat's replenishments (known here, hidden from the verifier), or
    // a bucket's token period.
    let beats = match &lim {
        Sim::AspFixed(l) => l.hb.times(epoch),
        Sim::AspSeg(l) => l.hb.times(epoch),
        Sim::AspBucket(l) => l.hb.times(epoch),
        Sim::AspFill(l) => l.hb.times(epoch),
        _ => Vec::new(),
    };
    let period = edge.unwrap_or(match policy {
        Policy::TokenBucket { refill, .. } | Policy::Gcra { rate: refill, .. } => {
            (refill.per_us / refill.count).max(1) as i64
        }
        _ => scale,
    });
    let next_edge = |t: i64| match beats.get(beats.partition_point(|&b| b <= t)) {
        Some(&b) => b,
        None => ((t + epoch).div_euclid(period) + 1) * period - epoch,
    };
    // Up to 3,000 requests in the wide cases, so that big bursts repeat.
    let n = if wide && rng.random_bool(0.3) {
        rng.random_range(250..=3_000)
    } else {
        rng.random_range(30..=250)
    };
    let snap = pick(&mut rng, &[0.0, 0.0, 0.3, 0.9]);
    // Keys per window or segment, where readings straddling an edge double.
    let doubling = matches!(
        algo,
        Algo::SegKeyed | Algo::SegEpoch | Algo::FixedKeyed | Algo::CounterKeyed
    );
    let sends = arrivals(&mut rng, n, scale, quota, &next_edge, snap, doubling);
    let strategy = pick(&mut rng, &Strategy::ALL);
    // Answers slower than a segment, up to the whole window, on a
    // segmented window: the rules for readings k segments apart (the
    // outside review's second finding).
    let segmented = matches!(
        policy,
        Policy::SlidingWindow { segments, .. } if segments > 1
    );
    let dmax = match rng.random_range(0..if segmented { 5 } else { 4 }) {
        0 => 0,
        1 => rng.random_range(1..=50),
        2 => rng.random_range(1..=500),
        3 => rng.random_range(1..=(scale / 4).max(1)),
        _ => rng.random_range(scale / 4..=scale + scale / 4),
    };
    let long = rng.random_bool(0.3);
    // Lengths right at the rules' thresholds, for some requests.
    let critical = [
        0,
        1,
        slack,
        scale - slack - 1,
        scale - slack,
        scale / 2,
        scale,
    ];
    let p_critical = pick(&mut rng, &[0.0, 0.0, 0.1, 0.5]);
    let p_unknown = if kind.timeouts() {
        pick(&mut rng, &[0.05, 0.2, 0.5])
    } else {
        pick(&mut rng, &[0.0, 0.0, 0.05, 0.2])
    };
    let late_max = pick(&mut rng, &[scale / 10, scale, 5 * scale, 2_000_000]);
    let mut reqs = Vec::with_capacity(n);
    for &sent in &sends {
        let len = if long && rng.random_bool(0.03) {
            2_000_000
        } else if rng.random_bool(p_critical) {
            pick(&mut rng, &critical).max(0)
        } else {
            rng.random_range(0..=dmax)
        };
        let done = sent + len;
        let (answered, plan) = if !rng.random_bool(p_unknown) {
            (true, strategy.plan(&mut rng, sent, done))
        } else {
            let plan = match rng.random_range(0..10) {
                0..=1 => Plan::Never,
                4.. if kind.timeouts() => Plan::At(done + rng.random_range(0..=late_max)),
                _ => Plan::At(rng.random_range(sent..=done)),
            };
            (false, plan)
        };
        reqs.push(Req {
            sent,
            done,
            answered,
            plan,
            decider: rng.random_range(0..deciders),
            lag: if rng.random_bool(reorder) {
                rng.random_range(0..=1_000)
            } else {
                0
            },
            max_stale,
        });
    }
    let mut warm = Vec::new();
    if kind.history() {
        let warm_span = pick(&mut rng, &[(scale / 10).max(1), scale, 3 * scale]);
        for _ in 0..rng.random_range(quota as usize..=4 * quota as usize + 2) {
            let sent = -1 - rng.random_range(0..=warm_span);
            warm.push(Req {
                sent,
                done: sent,
                answered: true,
                plan: Plan::At(sent),
                decider: rng.random_range(0..deciders),
                lag: 0,
                max_stale: 0,
            });
        }
    }
    let aligned = aligned_ok && rng.random_bool(0.6);
    let uncertainty = if aligned && rng.random_bool(0.3) {
        rng.random_range(1..=2_000)
    } else {
        0
    };
    let epoch_offset_us = if aligned {
        epoch + rng.random_range(-uncertainty..=uncertainty)
    } else if rng.random_bool(0.5) {
        0
    } else {
        epoch + rng.random_range(-scale..=scale)
    };
    // Overstating the lateness or the server's time must be harmless.
    let lateness_us = lateness
        + if rng.random_bool(0.1) {
            rng.random_range(0..=scale / 4)
        } else {
            0
        };
    let max_server_time_us = if !kind.timeouts() {
        pick(&mut rng, &[None, None, Some(0), Some(scale)])
    } else if rng.random_bool(0.3) {
        Some(late_max)
    } else {
        None
    };
    let mut opts = Options {
        slack_us: slack,
        epoch_offset_us,
        aligned,
        unknown_history: kind.history() || rng.random_bool(0.2),
        lateness_us,
        chunked_refill: chunked,
        chunks_on_epoch: algo == Algo::ChunkEpoch,
        max_server_time_us,
        // One clock read in the atomic step: ASP.NET's heartbeat (the
        // decision does not read the time at all), or one decider reading
        // its clock as it takes the state. Several deciders or stale
        // readings: the order of readings is not the order of decisions.
        one_clock: asp || (deciders == 1 && reorder == 0.0),
        count_rejected: algo.counts_attempts(),
        // What a full bucket may bank: up to its capacity.
        banked_tokens: if algo == Algo::AspReleased { limit } else { 0 },
        ..Options::default()
    };
    opts.epoch_uncertainty_us = uncertainty;
    // The clocks run fast or slow by up to what the verifier is told (a
    // wall clock being slewed); from a generator of its own, so the other
    // draws stay as they were.
    let mut rates = SmallRng::seed_from_u64(seed ^ 0xC10C_0000 ^ ((algo as u64) << 40));
    let rate_ppm: i64 = if asp {
        0
    } else {
        pick(&mut rates, &[0, 0, 0, 5_000, -5_000, 500, -500])
    };
    opts.clock_rate_ppm = rate_ppm.abs()
        + if rates.random_bool(0.2) {
            rates.random_range(0..=1_000)
        } else {
            0
        };
    let label = format!(
        "{algo:?} {kind:?} resolution={resolution} deciders={deciders} offsets={offsets:?} rate={rate_ppm}ppm reorder={reorder} \
         strategy={strategy:?} dmax={dmax} long={long} p_critical={p_critical} snap={snap} \
         p_unknown={p_unknown} late_max={late_max} ties_late={ties_late}"
    );
    Case {
        label,
        policy,
        lim,
        clock: Clock {
            epoch,
            resolution,
            offsets,
            rate_ppm,
        },
        warm,
        reqs,
        opts,
    }
}
