//! What can and cannot be proven from outside: for every policy × fake ×
//! answer time × one clock or several, the definite violations the
//! verifier finds as a share of the fake's true excess. Printed as the
//! table docs/verifier.md carries (`scripts/sharpness.sh`; ignored by the
//! ordinary test run, it takes about a minute in release).
//!
//! The load: 10 per 1 s, one key, a request every 5 ms on average
//! (Poisson) for 20 s; each answered in `[A/2, A]`, decided at a uniform
//! point inside. The **true excess** is the same trace judged with every
//! decision's instant known (`sent = done` = the decision, one clock, the
//! epoch grid known), so the share says what the answer times and the
//! clocks hide, not what the rules could never say.

use super::*;

const W: i64 = 1_000_000;
const N: u64 = 10;
const SECONDS: i64 = 20;
const SEEDS: u64 = 3;
/// 0.1 %, 1 %, 5 %, 15 % and 60 % of the window.
const ANSWERS: [i64; 5] = [1_000, 10_000, 50_000, 150_000, 600_000];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fake {
    Replicas(usize),
    /// GET then SET: each request decides on the state the last write
    /// left, and writes its own copy back when it is done (last write
    /// wins).
    Race,
    BurstPlusOne,
    /// 11 per window (a window a tenth shorter) or 11 a second.
    RatePlusTenth,
    /// A fixed window of the same quota (a token bucket for a fixed
    /// window).
    WrongAlgorithm,
}

const FAKES: [Fake; 6] = [
    Fake::Replicas(2),
    Fake::Replicas(3),
    Fake::Race,
    Fake::BurstPlusOne,
    Fake::RatePlusTenth,
    Fake::WrongAlgorithm,
];

fn policies() -> Vec<(&'static str, Policy)> {
    let rate = Rate {
        count: N,
        per_us: W as u64,
    };
    vec![
        (
            "sliding_log",
            Policy::SlidingLog {
                limit: N,
                window_us: W as u64,
            },
        ),
        (
            "fixed_window",
            Policy::FixedWindow {
                limit: N,
                window_us: W as u64,
            },
        ),
        (
            "sliding_window (10 segments)",
            Policy::SlidingWindow {
                limit: N,
                window_us: W as u64,
                segments: 10,
            },
        ),
        (
            "sliding_counter",
            Policy::SlidingCounter {
                limit: N,
                window_us: W as u64,
            },
        ),
        (
            "token_bucket (10, 10/s)",
            Policy::TokenBucket {
                capacity: N,
                refill: rate,
            },
        ),
        ("gcra (10/s, burst 10)", Policy::Gcra { rate, burst: N }),
    ]
}

/// The correct limiter of `policy` with `limit` per `w` (a bucket: `limit`
/// tokens, `count` a second).
fn correct(policy: &Policy, limit: u64, w: i64, count: u64) -> Sim {
    match *policy {
        Policy::SlidingLog { .. } => Sim::Log(SlidingLog::new(limit, w, false)),
        Policy::FixedWindow { .. } => Sim::Fixed(FixedWindow::new(limit, w, FixedKind::Epoch)),
        Policy::SlidingWindow { segments, .. } => {
            Sim::Seg(Segmented::new(limit, w / segments as i64, segments as i64))
        }
        Policy::SlidingCounter { .. } => Sim::Counter(SlidingCounter::new(limit, w, false)),
        Policy::TokenBucket { .. } => Sim::Bucket(TokenBucket::new(limit, count, W)),
        Policy::Gcra { .. } => Sim::Gcra(Gcra::new(limit, count, W)),
    }
}

/// The fake's limiter; `None` for the race (simulated apart).
fn fake(policy: &Policy, f: Fake) -> Option<Sim> {
    let ok = correct(policy, N, W, N);
    let bucket = matches!(policy, Policy::TokenBucket { .. } | Policy::Gcra { .. });
    Some(match f {
        Fake::Replicas(n) => Sim::Replicas(vec![ok; n]),
        Fake::Race => return None,
        Fake::BurstPlusOne => correct(policy, N + 1, W, N),
        Fake::RatePlusTenth if bucket => correct(policy, N, W, N + 1),
        Fake::RatePlusTenth => correct(policy, N, W * 10 / 11, N),
        Fake::WrongAlgorithm => match policy {
            Policy::FixedWindow { .. } => Sim::Bucket(TokenBucket::new(N, N, W)),
            _ => Sim::Fixed(FixedWindow::new(N, W, FixedKind::Epoch)),
        },
    })
}

/// Poisson sends, answers in `[a/2, a]`, decisions inside, deciders drawn.
fn requests(rng: &mut SmallRng, a: i64, deciders: usize) -> Vec<Req> {
    let mut reqs = Vec::new();
    let mut t = 0;
    while t < SECONDS * W {
        t += exp_gap(rng, 5_000.0).max(1);
        let done = t + rng.random_range(a / 2..=a);
        reqs.push(Req {
            sent: t,
            done,
            answered: true,
            plan: Plan::At(rng.random_range(t..=done)),
            decider: rng.random_range(0..deciders),
            lag: 0,
            max_stale: 0,
        });
    }
    reqs
}

/// The race: a request reads the state the last finished write left at
/// its send, decides on that copy at its decision instant, and writes the
/// copy back when done — concurrent requests overwrite each other.
fn race(lim: &Sim, clock: &Clock, reqs: &[Req]) -> Vec<Option<Decision>> {
    let mut state = lim.clone();
    // (time, order: reads before writes at one instant, request)
    let mut events: Vec<(i64, u8, usize)> = Vec::new();
    for (i, r) in reqs.iter().enumerate() {
        events.push((r.sent, 1, i));
        events.push((r.done, 0, i));
    }
    events.sort_unstable();
    let mut copies: Vec<Option<Sim>> = vec![None; reqs.len()];
    let mut out = vec![None; reqs.len()];
    for (_, kind, i) in events {
        if kind == 1 {
            let mut copy = state.clone();
            let Plan::At(at) = reqs[i].plan else {
                continue;
            };
            let reading = clock.read(at, reqs[i].decider);
            let answer = copy.decide(reading, i);
            out[i] = Some(Decision {
                at,
                reading,
                answer,
            });
            copies[i] = Some(copy);
        } else if let Some(copy) = copies[i].take() {
            state = copy;
        }
    }
    out
}

/// Definite violations as judged, and the true excess.
fn cell(policy: &Policy, f: Fake, a: i64, several: bool, seed: u64) -> (u64, u64) {
    let mut rng = SmallRng::seed_from_u64(seed ^ (a as u64) << 8 ^ u64::from(several) << 40);
    let epoch = 1_790_000_000_000_000 + rng.random_range(0..W);
    let (offsets, resolution) = if several {
        (vec![0, 400, 1_000], 1_000)
    } else {
        (vec![0], 1)
    };
    let clock = Clock {
        epoch,
        resolution,
        offsets: offsets.clone(),
        rate_ppm: 0,
    };
    let reqs = requests(&mut rng, a, offsets.len());
    let decisions = match fake(policy, f) {
        Some(lim) => simulate(&lim, &clock, &[], &reqs).decisions,
        None => race(&correct(policy, N, W, N), &clock, &reqs),
    };
    let mut seen = Vec::with_capacity(reqs.len());
    let mut exact = Vec::with_capacity(reqs.len());
    for (r, d) in reqs.iter().zip(&decisions) {
        let Some(d) = d else { continue };
        let decided = if d.answer.admitted {
            Decided::Admitted
        } else {
            Decided::Rejected
        };
        seen.push(Obs {
            sent: r.sent,
            done: r.done,
            decided,
        });
        exact.push(Obs {
            sent: d.at,
            done: d.at,
            decided,
        });
    }
    let opts = Options {
        slack_us: Options::slack_for(resolution, if several { 1_000 } else { 0 }),
        one_clock: !several,
        ..Options::default()
    };
    let truth = Options {
        one_clock: true,
        aligned: true,
        epoch_offset_us: epoch,
        ..opts
    };
    let judged = verify_key(policy, &seen, &opts).definite_violations;
    let excess = verify_key(policy, &exact, &truth).definite_violations;
    // Narrower intervals and more rules only prove more: what the trace
    // proves is never more than the excess.
    assert!(
        judged <= excess,
        "{policy:?} {f:?} A={a} several={several} seed={seed}"
    );
    (judged, excess)
}

fn name(f: Fake, policy: &Policy) -> String {
    match f {
        Fake::WrongAlgorithm if matches!(policy, Policy::FixedWindow { .. }) => {
            "wrong algorithm (token bucket)".into()
        }
        Fake::Replicas(n) => format!("{n} replicas alone"),
        Fake::Race => "read-then-write race".into(),
        Fake::BurstPlusOne => "burst + 1".into(),
        Fake::RatePlusTenth => "rate + 10 %".into(),
        Fake::WrongAlgorithm => "wrong algorithm (fixed window)".into(),
    }
}

/// `scripts/sharpness.sh`: the table, in Markdown, on stdout.
#[test]
#[ignore = "the sharpness table: scripts/sharpness.sh"]
fn sharpness_table() {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| policy | fake | clocks | {} |",
        ANSWERS
            .iter()
            .map(|a| format!("A = {} ms", a / 1_000))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(
        out,
        "| --- | --- | --- |{}",
        " ---: |".repeat(ANSWERS.len())
    );
    for (pname, policy) in policies() {
        for f in FAKES {
            for several in [false, true] {
                let cells: Vec<String> = ANSWERS
                    .iter()
                    .map(|&a| {
                        let (d, e) = (0..SEEDS)
                            .map(|s| cell(&policy, f, a, several, s))
                            .fold((0, 0), |x, y| (x.0 + y.0, x.1 + y.1));
                        if e == 0 {
                            "— (no excess)".to_string()
                        } else if d == 0 {
                            format!("not provable (0/{e})")
                        } else {
                            format!("{:.0} % ({d}/{e})", 100.0 * d.min(e) as f64 / e as f64)
                        }
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "| {pname} | {} | {} | {} |",
                    name(f, &policy),
                    if several { "several" } else { "one" },
                    cells.join(" | ")
                );
            }
        }
    }
    #[allow(clippy::print_stdout)]
    {
        print!("{out}");
    }
}
