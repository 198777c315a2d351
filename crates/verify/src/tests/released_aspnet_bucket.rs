//! Released ASP.NET Core's partitioned token bucket (dotnet/runtime#74360,
//! read from the public source, simulated here apart from the verifier):
//! each 100 ms heartbeat adds `rate·(now − last)`, capped at the token
//! limit, but returns early while the bucket is full without moving
//! `last`; tokens that accrue while it is full arrive late, in one lump.
//! Judged as chunks of one token per period it is flagged; judged with the
//! tokens it may bank (`Options::banked_tokens`), it passes, and one admit
//! past its bound is still caught.

use super::*;

/// The partitioned bucket between heartbeats (`tokens` a double, as the
/// runtime keeps it).
struct Released {
    limit: f64,
    per_us: f64,
    tokens: f64,
    last: i64,
}

impl Released {
    fn heartbeat(&mut self, now: i64) {
        if self.tokens >= self.limit {
            return;
        }
        let add = (now - self.last) as f64 / self.per_us;
        self.tokens = (self.tokens + add).min(self.limit);
        self.last = now;
    }

    fn acquire(&mut self) -> bool {
        let ok = self.tokens >= 1.0;
        if ok {
            self.tokens -= 1.0;
        }
        ok
    }
}

/// Token limit 10, one token per 10 ms: full since its last heartbeat
/// long ago; emptied at 99 ms, the heartbeat at 100 ms hands over the
/// whole lump (capped at 10), and 18 requests within 2 ms are admitted
/// (and then 2 more).
fn lump() -> Vec<Obs> {
    let mut b = Released {
        limit: 10.0,
        per_us: 10_000.0,
        tokens: 10.0,
        last: -5_000_000,
    };
    b.heartbeat(0);
    let mut trace = Vec::new();
    let mut t = 99_000;
    for i in 0..20 {
        if i == 10 {
            b.heartbeat(100_000);
        }
        t += 100;
        trace.push(if b.acquire() {
            admit(t, t)
        } else {
            reject(t, t)
        });
    }
    trace
}

fn dotnet(banked: u64, chunked: bool) -> Options {
    Options {
        slack_us: MIN_SLACK_US,
        lateness_us: 100_000,
        chunked_refill: chunked,
        banked_tokens: banked,
        ..exact()
    }
}

#[test]
fn a_full_bucket_hands_over_its_banked_tokens_at_once() {
    let p = Policy::TokenBucket {
        capacity: 10,
        refill: Rate {
            count: 1,
            per_us: 10_000,
        },
    };
    let trace = lump();
    let admitted = trace
        .iter()
        .filter(|o| o.decided == Decided::Admitted)
        .count();
    assert_eq!(admitted, 20);
    // As chunks of one token per period (the preset before the release
    // was read): 20 admits within 2 ms + slack, where 10 + 1 fit.
    let old = verify_key(&p, &trace, &dotnet(0, true));
    assert!(old.definite_violations >= 7, "{old:?}");
    // As released: up to 10 more at once.
    let released = verify_key(&p, &trace, &dotnet(10, false));
    assert_eq!(
        (released.definite_violations, released.false_rejects),
        (0, 0),
        "{released:?}"
    );
    assert!(released.allowed_max >= 20, "{released:?}");
    // The boundary: one admit beyond burst + banked + rate·L is caught.
    let mut more = trace.clone();
    more.push(admit(101_100, 101_100));
    assert_eq!(
        verify_key(&p, &more, &dotnet(10, false)).definite_violations,
        1
    );
}
