//! The batched path (`redis_batched`): instead of one script call per
//! decision, a replica leases up to `lease` admits of a key's current fixed
//! window by one call (`lua/fixed_window_lease.lua`) and spends them itself
//! until they run out or the lease's time is up; a refusal is remembered
//! until the window Redis named ends. Redis is called about once per lease
//! instead of once per request; the price is over-admission: admits leased
//! in one window and spent in the next count in the first. A replica keeps
//! a lease only if no other was kept since it asked (so of the leases one
//! replica took in a window, only the last can still be spent in the next),
//! spends one admit of each when it arrives, and spends none after one
//! window's length: any window holds at most `limit + R·(lease − 1)` admits
//! on R replicas — provided the windows Redis counts in and the times the
//! replica spends at are read on one clock (`clock = "replica"`).

use super::{decision, Conn, Decision};
use crate::policy::Policy;
use redis::Script;
use std::collections::HashMap;
use std::sync::Mutex;

pub const LEASE: &str = super::lua::FIXED_WINDOW_LEASE;

/// What a replica holds for a key.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Held {
    /// Admits left to spend until `until`; the window ends at `reset_at`.
    Lease {
        left: u64,
        until: i64,
        reset_at: i64,
    },
    /// Redis had none left: rejected here until `until`.
    Denied { until: i64 },
}

pub struct Leases {
    script: Script,
    limit: u64,
    window_us: u64,
    lease: u64,
    ttl_us: i64,
    /// What is held per key, and how many times something was kept for it.
    held: Mutex<HashMap<String, (Held, u64)>>,
    /// Keys with a lease asked for and not yet answered: meanwhile their
    /// other requests ask Redis for one admit each, which leaves nothing
    /// to keep (and wastes no lease).
    asking: Mutex<std::collections::HashSet<String>>,
}

impl Leases {
    /// Fixed windows only; `ttl_us` 0 means the window's length.
    pub fn new(policy: &Policy, lease: u64, ttl_us: u64) -> Result<Leases, String> {
        let Policy::FixedWindow { limit, window_us } = *policy else {
            return Err(format!(
                "redis_batched leases fixed_window admits, not {}",
                policy.algorithm()
            ));
        };
        let ttl = if ttl_us == 0 {
            window_us
        } else {
            ttl_us.min(window_us)
        };
        Ok(Leases {
            script: Script::new(LEASE),
            limit,
            window_us,
            lease: lease.max(1),
            ttl_us: ttl as i64,
            held: Mutex::new(HashMap::new()),
            asking: Mutex::new(std::collections::HashSet::new()),
        })
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Held, u64)>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A decision this replica can make alone at `now` (its clock).
    pub fn local(&self, key: &str, now: i64) -> Option<Decision> {
        let mut held = self.held();
        match held.get_mut(key).map(|(h, _)| h) {
            Some(Held::Lease {
                left,
                until,
                reset_at,
            }) if *left > 0 && now < *until => {
                *left -= 1;
                Some(Decision::allow(*left, *reset_at - now))
            }
            Some(Held::Denied { until }) if now < *until => Some(Decision::deny(*until - now)),
            _ => None,
        }
    }

    /// One lease call: this request's decision, and what is left kept.
    pub async fn take(
        &self,
        conn: &mut Conn,
        key: &str,
        script_now: Option<i64>,
        now: i64,
    ) -> redis::RedisResult<Decision> {
        let leasing = self
            .asking
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_string());
        // Cleared however this ends, a timed-out call included.
        let _asking = leasing.then(|| Asking {
            set: &self.asking,
            key,
        });
        let want = if leasing { self.lease } else { 1 };
        let asked = self.held().get(key).map_or(0, |(_, kept)| *kept);
        let answer: redis::RedisResult<(i64, i64, i64, i64)> = self
            .script
            .key(key)
            .arg(self.limit)
            .arg(self.window_us)
            .arg(script_now.map(|n| n.to_string()).unwrap_or_default())
            .arg(want)
            .invoke_async(conn)
            .await;
        drop(_asking);
        let (granted, remaining, reset_us, retry_us) = answer?;
        if !leasing {
            // One admit asked, one spent here: nothing to keep.
            return Ok(decision(granted > 0, remaining, reset_us, retry_us));
        }
        let mut held = self.held();
        sweep(&mut held, now);
        let kept = held.get(key).map_or(0, |(_, kept)| *kept);
        // Another lease kept since this one was asked for: this one's rest
        // is dropped (counted in Redis, never spent). Only this request's
        // own admit is taken from it.
        let fresh = kept == asked;
        if granted <= 0 {
            if fresh {
                held.insert(
                    key.to_string(),
                    (
                        Held::Denied {
                            until: now + retry_us,
                        },
                        kept + 1,
                    ),
                );
            }
            return Ok(decision(false, 0, reset_us, retry_us));
        }
        let left = granted as u64 - 1;
        if fresh {
            let lease = Held::Lease {
                left,
                until: now + self.ttl_us,
                reset_at: now + reset_us,
            };
            held.insert(key.to_string(), (lease, kept + 1));
        }
        Ok(decision(true, left as i64 + remaining, reset_us, 0))
    }
}

struct Asking<'a> {
    set: &'a Mutex<std::collections::HashSet<String>>,
    key: &'a str,
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        self.set
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(self.key);
    }
}

/// Past this many keys held, the expired ones are dropped on the next
/// lease: a client spraying keys grows the map only by what is live.
const SWEEP_PAST: usize = 100_000;

fn sweep(held: &mut HashMap<String, (Held, u64)>, now: i64) {
    if held.len() > SWEEP_PAST {
        held.retain(|_, (h, _)| match *h {
            Held::Lease { until, .. } | Held::Denied { until } => until > now,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leases(lease: u64) -> Leases {
        Leases::new(
            &Policy::FixedWindow {
                limit: 10,
                window_us: 1_000_000,
            },
            lease,
            0,
        )
        .unwrap()
    }

    #[test]
    fn a_lease_is_spent_locally_until_it_runs_out_or_expires() {
        let l = leases(3);
        assert_eq!(l.local("k", 0), None, "nothing held: ask Redis");
        l.held().insert(
            "k".into(),
            (
                Held::Lease {
                    left: 2,
                    until: 1_000,
                    reset_at: 5_000,
                },
                1,
            ),
        );
        assert!(l.local("k", 10).unwrap().allowed);
        assert!(l.local("k", 20).unwrap().allowed);
        assert_eq!(l.local("k", 30), None, "spent");
        l.held().insert(
            "k".into(),
            (
                Held::Lease {
                    left: 5,
                    until: 1_000,
                    reset_at: 5_000,
                },
                2,
            ),
        );
        assert!(l.local("k", 999).is_some());
        assert_eq!(l.local("k", 1_000), None, "expired at its end");
    }

    #[test]
    fn a_refusal_holds_until_the_window_redis_named() {
        let l = leases(3);
        l.held()
            .insert("k".into(), (Held::Denied { until: 500 }, 1));
        let d = l.local("k", 100).unwrap();
        assert!(!d.allowed);
        assert_eq!(d.retry_after_us, 400);
        assert_eq!(l.local("k", 500), None);
    }

    #[test]
    fn only_fixed_windows_are_leased_and_a_lease_lasts_a_window_at_most() {
        let e = Leases::new(
            &Policy::SlidingLog {
                limit: 1,
                window_us: 1,
            },
            2,
            0,
        )
        .err()
        .unwrap();
        assert!(e.contains("fixed_window"), "{e}");
        let l = Leases::new(
            &Policy::FixedWindow {
                limit: 10,
                window_us: 1_000,
            },
            0,
            5_000,
        )
        .unwrap();
        assert_eq!(l.ttl_us, 1_000);
        assert_eq!(l.lease, 1);
    }
}
