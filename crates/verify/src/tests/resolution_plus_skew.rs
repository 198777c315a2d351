//! The slack is the clock's resolution **plus** the deciders' skew: three
//! correct limiters of the common production pattern — the app reads its
//! clock and passes `now` to a Redis script — on two app servers whose
//! clocks differ, each simulated here from its algorithm (apart from the
//! verifier and the reference API). Each decides at the instant of its
//! request (sent = done), the tightest trace a run can record. With the
//! slack `resolution + skew` each passes; with the larger alone
//! (the slack as `max(resolution, skew)`, as it was once taken) each is flagged. The boundary:
//! readings in whole µs lose at most `resolution − 1 µs`, so each trace
//! reaches `resolution + skew − 1 µs` of error exactly — it passes there
//! and fails a µs below.

use super::*;

/// A server's clock: `offset_us` from the true time, read in whole
/// `resolution_us` steps (truncated, as `Date.now()` or
/// `Instant.getEpochSecond()` do).
#[derive(Clone, Copy)]
struct AppClock {
    offset_us: i64,
    resolution_us: i64,
}

impl AppClock {
    fn read(self, t: i64) -> i64 {
        (t + self.offset_us).div_euclid(self.resolution_us) * self.resolution_us
    }
}

/// Two servers' clocks of one resolution, offset by `a_us` and `b_us`.
fn servers(resolution_us: i64, a_us: i64, b_us: i64) -> (AppClock, AppClock) {
    let clock = |offset_us| AppClock {
        offset_us,
        resolution_us,
    };
    (clock(a_us), clock(b_us))
}

/// A Redis ZSET sliding log: `ZREMRANGEBYSCORE key -inf now−W`, `ZCARD`,
/// `ZADD now` when under the limit — in one script, `now` from the app.
struct ZsetLog {
    limit: usize,
    window_us: i64,
    scores: Vec<i64>,
}

impl ZsetLog {
    fn decide(&mut self, now: i64) -> bool {
        let w = self.window_us;
        self.scores.retain(|&s| s > now - w);
        let admit = self.scores.len() < self.limit;
        if admit {
            self.scores.push(now);
        }
        admit
    }
}

/// Stripe's (and Spring Cloud Gateway's) token bucket script: tokens
/// refilled by `rate · max(0, now − last)` up to the capacity, one taken
/// when there is one; `last` clamped so that it never runs back (a reading
/// behind another one refills nothing).
struct StripeBucket {
    capacity: f64,
    per_s: f64,
    tokens: f64,
    last_us: i64,
}

impl StripeBucket {
    fn decide(&mut self, now: i64) -> bool {
        let delta = (now - self.last_us).max(0) as f64 / 1e6;
        self.tokens = (self.tokens + delta * self.per_s).min(self.capacity);
        self.last_us = self.last_us.max(now);
        let admit = self.tokens >= 1.0;
        if admit {
            self.tokens -= 1.0;
        }
        admit
    }
}

/// Decisions at true instants, each by a server's clock: the trace.
fn run(decide: &mut dyn FnMut(i64) -> bool, at: &[(i64, AppClock)]) -> Vec<Obs> {
    at.iter()
        .map(|&(t, clock)| {
            if decide(clock.read(t)) {
                admit(t, t)
            } else {
                reject(t, t)
            }
        })
        .collect()
}

/// Two servers: the order of readings is not the order of decisions.
fn slack(resolution_us: i64, skew_us: i64) -> Options {
    Options {
        slack_us: Options::slack_for(resolution_us, skew_us),
        one_clock: false,
        ..exact()
    }
}

/// Definite violations with the declared resolution and skew, with the
/// larger alone (the old contract), and a µs either side of the worst
/// error the trace reaches (`resolution + skew − 1 µs`).
fn judged(p: &Policy, trace: &[Obs], resolution_us: i64, skew_us: i64) -> [u64; 4] {
    let at = |slack_us: i64| {
        verify_key(
            p,
            trace,
            &Options {
                slack_us,
                ..slack(0, 0)
            },
        )
        .definite_violations
    };
    let sum = resolution_us + skew_us;
    [
        verify_key(p, trace, &slack(resolution_us, skew_us)).definite_violations,
        at(resolution_us.max(skew_us).max(MIN_SLACK_US)),
        at(sum - 1),
        at(sum - 2),
    ]
}

#[test]
fn a_zset_log_fed_whole_milliseconds_by_two_servers_0_9_ms_apart() {
    // 5 per 10 ms. Server A (exact) admits 5 reading 0 ms at 0.999 ms;
    // server B (+0.9 ms) reads 10 ms at 9.1 ms, drops them all from the
    // log and admits 5 more: 10 admits 8.101 ms apart.
    let (a, b) = servers(1_000, 0, 900);
    let mut log = ZsetLog {
        limit: 5,
        window_us: 10_000,
        scores: Vec::new(),
    };
    let mut at = vec![(999, a); 5];
    at.extend([(9_100, b); 5]);
    let trace = run(&mut |now| log.decide(now), &at);
    assert_eq!(
        trace
            .iter()
            .filter(|o| o.decided == Decided::Admitted)
            .count(),
        10
    );
    let p = Policy::SlidingLog {
        limit: 5,
        window_us: 10_000,
    };
    // Declared skew 0.9 ms: 0. The default 1 ms alone: 5 definite.
    assert_eq!(judged(&p, &trace, 1_000, 900), [0, 5, 0, 5]);
}

#[test]
fn a_log_of_whole_seconds_on_servers_half_a_millisecond_either_side() {
    // 1 per 2 s, clock_resolution = "1s". A (−0.5 ms) admits reading 4 s
    // at 5.000499 s; B (+0.5 ms) reads 6 s at 5.9995 s and admits: two
    // admits 0.999001 s apart whose readings are 2 s apart.
    let (a, b) = servers(1_000_000, -500, 500);
    let mut log = ZsetLog {
        limit: 1,
        window_us: 2_000_000,
        scores: Vec::new(),
    };
    let trace = run(
        &mut |now| log.decide(now),
        &[(5_000_499, a), (5_999_500, b)],
    );
    assert_eq!(
        trace
            .iter()
            .filter(|o| o.decided == Decided::Admitted)
            .count(),
        2
    );
    let p = Policy::SlidingLog {
        limit: 1,
        window_us: 2_000_000,
    };
    assert_eq!(judged(&p, &trace, 1_000_000, 1_000), [0, 1, 0, 1]);
}

#[test]
fn a_stripe_bucket_fed_whole_seconds_by_two_servers_1_ms_apart() {
    // Capacity 10, 5 a second, `now` in whole seconds. A (exact) empties
    // the full bucket reading 0 s at 0.999999 s; B (+1 ms) reads 2 s at
    // 1.999 s and finds 10 tokens: 20 admits 0.999001 s apart, which a
    // bucket of 10 at 5/s allows only over 2 s.
    let (a, b) = servers(1_000_000, 0, 1_000);
    let mut bucket = StripeBucket {
        capacity: 10.0,
        per_s: 5.0,
        tokens: 10.0,
        last_us: 0,
    };
    let mut at = vec![(999_999, a); 10];
    at.extend([(1_999_000, b); 10]);
    let trace = run(&mut |now| bucket.decide(now), &at);
    assert_eq!(
        trace
            .iter()
            .filter(|o| o.decided == Decided::Admitted)
            .count(),
        20
    );
    let p = Policy::TokenBucket {
        capacity: 10,
        refill: Rate {
            count: 5,
            per_us: 1_000_000,
        },
    };
    assert_eq!(judged(&p, &trace, 1_000_000, 1_000), [0, 1, 0, 1]);
}
