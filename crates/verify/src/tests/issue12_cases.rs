//! The review's cases: each failed on the verifier before issue 12.

use super::*;

fn unknown() -> Options {
    Options {
        unknown_history: true,
        ..Options::default()
    }
}

/// nginx-like GCRA (10 per s, burst 6) judged on a second run: the
/// bucket was drained by the first one and stays in deficit under
/// 50 requests/s. A correct GCRA starting empty admits one per 100 ms.
#[test]
fn a_bucket_drained_before_the_trace_is_not_charged_false_rejects() {
    let p = Policy::Gcra {
        rate: Rate {
            count: 10,
            per_us: 1_000_000,
        },
        burst: 6,
    };
    let mut tat = 0i64; // drained: the next token comes at 100 ms
    let trace: Vec<Obs> = (0..400)
        .map(|i| {
            let t = i * 20_000;
            if t >= tat {
                tat = tat.max(t) + 100_000;
                admit(t, t + 300)
            } else {
                reject(t, t + 300)
            }
        })
        .collect();
    let v = verify_key(&p, &trace, &unknown());
    assert!(v.rejected > 300);
    assert_eq!(v.false_rejects, 0);
    assert_eq!(v.definite_violations, 0);
    // The same limiter refusing a request with a token in hand is caught.
    let mut wrong = trace.clone();
    let idle: Vec<Obs> = (0..5)
        .map(|i| reject(9_000_000 + i, 9_000_100 + i))
        .collect();
    wrong.extend(idle);
    assert_eq!(verify_key(&p, &wrong, &unknown()).false_rejects, 5);
}

/// A request times out at 100 ms; the server admits it at 200 ms. A
/// later reject of a sliding log that counts it is right.
#[test]
fn a_timeout_admitted_after_the_client_gave_up_explains_a_later_reject() {
    let p = Policy::SlidingLog {
        limit: 2,
        window_us: 1_000_000,
    };
    let timeout = Obs {
        sent: 0,
        done: 100_000,
        decided: Decided::Unknown,
    };
    let trace = [
        timeout,
        admit(500_000, 500_100),
        reject(1_150_000, 1_150_100),
    ];
    assert_eq!(verify_key(&p, &trace, &Options::default()).false_rejects, 0);
    // Declared to be decided within 10 ms of giving up: then it left
    // the window by 1,150 ms and the reject had room.
    let bounded = Options {
        max_server_time_us: Some(10_000),
        ..Options::default()
    };
    assert_eq!(verify_key(&p, &trace, &bounded).false_rejects, 1);
}

/// One 2 s timeout at the start no longer hides a false reject 10 s later.
#[test]
fn one_long_interval_does_not_hide_a_later_false_reject() {
    let p = Policy::TokenBucket {
        capacity: 2,
        refill: Rate {
            count: 1,
            per_us: 100_000,
        },
    };
    let trace = [
        admit(0, 2_000_000),
        admit(10_000_000, 10_000_500),
        reject(10_500_000, 10_500_500),
    ];
    assert_eq!(verify_key(&p, &trace, &Options::default()).false_rejects, 1);
}

/// An ASP.NET-style fixed window: replenished on a heartbeat every
/// `tick`, once a full window has passed since the last replenishment.
fn aspnet_fixed(limit: u64, window: i64, tick: i64, sends: &[i64]) -> Vec<Obs> {
    let (mut last, mut count) = (0i64, 0u64);
    let mut next_tick = tick;
    sends
        .iter()
        .map(|&t| {
            while next_tick <= t {
                if next_tick - last >= window {
                    (last, count) = (next_tick, 0);
                }
                next_tick += tick;
            }
            if count < limit {
                count += 1;
                admit(t, t + 200)
            } else {
                reject(t, t + 200)
            }
        })
        .collect()
}

#[test]
fn windows_replenished_late_by_a_heartbeat_are_judged_with_their_lateness() {
    // 10 per 1 s window, heartbeat 100 ms starting 30 ms off the window:
    // each window lasts 1.03..1.1 s and drifts.
    let p = Policy::FixedWindow {
        limit: 10,
        window_us: 1_000_000,
    };
    let sends: Vec<i64> = (0..1_000).map(|i| i * 9_000).collect();
    let trace = aspnet_fixed(10, 1_000_000, 103_000, &sends);
    let on_time = verify_key(&p, &trace, &Options::default());
    assert!(
        on_time.false_rejects > 0,
        "the late windows look like false rejects"
    );
    let late = Options {
        lateness_us: 103_000,
        ..Options::default()
    };
    let v = verify_key(&p, &trace, &late);
    assert_eq!((v.definite_violations, v.false_rejects), (0, 0));
}

#[test]
fn a_chunked_bucket_is_judged_by_whole_refills() {
    // ASP.NET TokenBucket: 4 tokens, 2 per 100 ms in one chunk.
    let p = Policy::TokenBucket {
        capacity: 4,
        refill: Rate {
            count: 2,
            per_us: 100_000,
        },
    };
    let chunked = Options {
        chunked_refill: true,
        lateness_us: 0,
        slack_us: 0,
        ..Options::default()
    };
    // 4 at once, then the chunk of 2 just after 100 ms: 6 within 100 ms
    // + a little — the continuous bound 4 + 2·L/100 ms would say 4.
    let mut trace: Vec<Obs> = (0..4).map(|_| admit(99_000, 99_000)).collect();
    trace.extend((0..2).map(|_| admit(100_000, 100_000)));
    assert_eq!(verify_key(&p, &trace, &chunked).definite_violations, 0);
    trace.push(admit(100_000, 100_000));
    assert_eq!(verify_key(&p, &trace, &chunked).definite_violations, 1);
}

#[test]
fn more_than_the_limit_inside_one_aligned_sliding_counter_window_is_a_violation() {
    let p = Policy::SlidingCounter {
        limit: 3,
        window_us: 1_000,
    };
    // 4 admits inside [0, 1000): within the N + 1 + N·L/W any-alignment
    // allowance, but more than N in one aligned window.
    let four = [admit(0, 1), admit(1, 2), admit(600, 601), admit(990, 991)];
    let aligned = Options {
        aligned: true,
        ..exact()
    };
    assert_eq!(verify_key(&p, &four, &exact()).definite_violations, 0);
    assert_eq!(verify_key(&p, &four, &aligned).definite_violations, 1);
    let three = &four[..3];
    assert_eq!(verify_key(&p, three, &aligned).definite_violations, 0);
}

#[test]
fn the_epoch_uncertainty_widens_the_grid_rules() {
    let p = Policy::FixedWindow {
        limit: 2,
        window_us: 1_000,
    };
    let three = [admit(100, 110), admit(400, 410), admit(980, 990)];
    let aligned = Options {
        aligned: true,
        ..exact()
    };
    assert_eq!(verify_key(&p, &three, &aligned).definite_violations, 1);
    // The boundary may be 20 µs earlier: the third admit may be past it.
    let unsure = Options {
        epoch_uncertainty_us: 20,
        ..aligned
    };
    assert_eq!(verify_key(&p, &three, &unsure).definite_violations, 0);
}

#[test]
fn witnesses_name_the_admits_and_the_rule() {
    let p = Policy::SlidingLog {
        limit: 2,
        window_us: 1_000,
    };
    let trace = [
        admit(0, 10),
        reject(100, 110),
        admit(500, 510),
        admit(900, 990),
    ];
    let (v, w) = judge_key(&p, &trace, &exact(), true);
    assert_eq!(v.definite_violations, 1);
    let violation = w.iter().find(|w| w.kind == Kind::Violation).unwrap();
    assert_eq!(violation.requests, [0, 2, 3]);
    assert!(
        violation.rule.starts_with(
            "3 admits, all decided between 0.000 s and 0.001 s (0.001 s < 1 ms); \
             the policy allows 2"
        ),
        "{}",
        violation.rule
    );
    let fr = w.iter().find(|w| w.kind == Kind::FalseReject).unwrap();
    assert_eq!((fr.reject, fr.requests.clone()), (Some(1), vec![0]));
    assert!(fr.rule.contains("at most 1 requests"), "{}", fr.rule);
    // A correct trace has none.
    let (_, none) = judge_key(&p, &[admit(0, 10), admit(500, 510)], &exact(), true);
    assert!(none.is_empty());
}
