//! The batched path (`redis_batched`): instead of one script call per
//! decision, a replica leases up to `lease` admits of a key's current fixed
//! window by one call (`lua/fixed_window_lease.lua`) and spends them itself
//! until they run out or the lease's time is up; a refusal is remembered
//! until the window Redis named ends. Redis is called about once per lease
//! instead of once per request; the price is over-admission: admits leased
//! in one window and spent in the next count in the first. A replica keeps
//! a lease only if no other was kept since it asked, and only if its window
//! has not ended by the latest time the replica has decided at (a request
//! that read its clock late in one window can get its lease after others
//! already spent in the next: keeping it would let a second lease of the
//! old window be spent in the new one). It spends one admit of each lease
//! when it arrives and none after one window's length. So each replica
//! carries at most one lease's rest, `lease − 1`, from a window into the
//! next, and any window holds at most `limit + min(limit, R·(lease − 1))`
//! admits on R replicas — provided the windows Redis counts in and the
//! times the replica spends at are read on one clock (`clock = "replica"`,
//! no skew), and no admit is made without Redis (fail-open fallbacks).

use super::conn::Conn;
use super::error::ConnectError;
use super::reply::decision;
use crate::limiter::contract::Decision;
use crate::policy::Policy;
use redis::Script;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

pub(super) const LEASE: &str = super::lua::FIXED_WINDOW_LEASE;

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

pub(super) struct Leases {
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
    /// The latest `now` this replica decided at, any key: a lease whose
    /// window ended by then is stale, and its rest is not kept. Read and
    /// raised only under `held`'s lock, so it orders with the spending.
    seen: AtomicI64,
    /// When the next sweep of `held` is due (its size), and its bound.
    sweep_at: AtomicUsize,
    max_held: usize,
    /// Lease calls answered with admits granted, and with none.
    granted: AtomicU64,
    denied: AtomicU64,
}

/// How often a replica asked Redis for a lease (`lease` admits at once),
/// by whether admits were granted: its lease refills.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeaseCalls {
    pub granted: u64,
    pub denied: u64,
}

impl Leases {
    /// Fixed windows only; `ttl_us` 0 means the window's length.
    pub(super) fn new(policy: &Policy, lease: u64, ttl_us: u64) -> Result<Leases, ConnectError> {
        let Policy::FixedWindow { limit, window_us } = *policy else {
            return Err(ConnectError::NotLeasable(policy.algorithm()));
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
            seen: AtomicI64::new(i64::MIN),
            sweep_at: AtomicUsize::new(SWEEP_PAST),
            max_held: MAX_HELD,
            granted: AtomicU64::new(0),
            denied: AtomicU64::new(0),
        })
    }

    /// At most `n` keys held (at least one).
    pub(super) fn cap(&mut self, n: usize) {
        self.max_held = n.max(1);
    }

    pub(super) fn calls(&self) -> LeaseCalls {
        LeaseCalls {
            granted: self.granted.load(Ordering::Relaxed),
            denied: self.denied.load(Ordering::Relaxed),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Held, u64)>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A decision this replica can make alone at `now` (its clock).
    pub(super) fn local(&self, key: &str, now: i64) -> Option<Decision> {
        let mut held = self.held();
        self.seen.fetch_max(now, Ordering::Relaxed);
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
    pub(super) async fn take(
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
        let answer = answer?;
        if leasing {
            let outcome = if answer.0 > 0 {
                &self.granted
            } else {
                &self.denied
            };
            outcome.fetch_add(1, Ordering::Relaxed);
        }
        if !leasing {
            // One admit asked, one spent here: nothing to keep.
            let (granted, remaining, reset_us, retry_us) = answer;
            return Ok(decision(granted > 0, remaining, reset_us, retry_us));
        }
        Ok(self.settle(key, asked, now, answer))
    }

    /// A lease's answer `(granted, remaining, reset_us, retry_us)` for the
    /// request at `now`, asked when `asked` leases had been kept for the
    /// key: this request's decision, and the rest kept when it may be.
    fn settle(&self, key: &str, asked: u64, now: i64, answer: (i64, i64, i64, i64)) -> Decision {
        let (granted, remaining, reset_us, retry_us) = answer;
        let mut held = self.held();
        sweep(&mut held, &self.sweep_at, now);
        // Full of live keys: a new key's rest is not kept.
        let room = held.len() < self.max_held || held.contains_key(key);
        let kept = held.get(key).map_or(0, |(_, kept)| *kept);
        // Another lease kept since this one was asked for, or its window
        // over by what this replica has already decided at: this one's
        // rest is dropped (counted in Redis, never spent). Only this
        // request's own admit is taken from it.
        let stale = now.saturating_add(reset_us) <= self.seen.fetch_max(now, Ordering::Relaxed);
        let fresh = kept == asked && !stale && room;
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
            return decision(false, 0, reset_us, retry_us);
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
        decision(true, left as i64 + remaining, reset_us, 0)
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

/// The most keys a replica holds a lease or a refusal for unless told
/// (`ReplicaConfig::max_keys`); beyond, a lease's rest is not kept (it
/// stays counted in Redis, never spent: the safe direction).
pub(super) const MAX_HELD: usize = 1_000_000;

/// Drops what expired once the map has grown past `sweep_at`, then sets
/// the next sweep at twice what is left: amortized constant per lease.
/// (Sweeping on every lease past a fixed size made each one scan every
/// live key: a flood of distinct keys held 3,000 decisions a second.)
fn sweep(held: &mut HashMap<String, (Held, u64)>, sweep_at: &AtomicUsize, now: i64) {
    if held.len() > sweep_at.load(Ordering::Relaxed) {
        held.retain(|_, (h, _)| match *h {
            Held::Lease { until, .. } | Held::Denied { until } => until > now,
        });
        sweep_at.store((held.len() * 2).max(SWEEP_PAST), Ordering::Relaxed);
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
    fn past_max_keys_a_new_keys_rest_is_not_kept_but_its_own_admit_stands() {
        let mut l = leases(5);
        l.cap(2);
        for key in ["a", "b"] {
            assert!(l.settle(key, 0, 100, (5, 5, 900_000, 0)).allowed);
        }
        // Full: "c" is admitted by its own lease's answer, nothing kept.
        assert!(l.settle("c", 0, 200, (5, 0, 900_000, 0)).allowed);
        assert!(l.held().get("c").is_none());
        assert_eq!(l.local("c", 300), None, "asks Redis again");
        // A key already held still renews.
        assert!(l.local("a", 300).is_some());
        assert_eq!(l.held().len(), 2);
    }

    #[test]
    fn expired_keys_are_swept_once_the_map_doubles_not_on_every_lease() {
        let at = AtomicUsize::new(4);
        let mut held = HashMap::new();
        let lease = |until| {
            (
                Held::Lease {
                    left: 1,
                    until,
                    reset_at: until,
                },
                1,
            )
        };
        for i in 0..5 {
            held.insert(format!("k{i}"), lease(if i < 2 { 10 } else { 1_000 }));
        }
        sweep(&mut held, &at, 500);
        assert_eq!(held.len(), 3, "the two expired dropped");
        assert_eq!(
            at.load(Ordering::Relaxed),
            SWEEP_PAST,
            "next at twice, at least SWEEP_PAST"
        );
        held.insert("k9".into(), lease(10));
        sweep(&mut held, &at, 500);
        assert_eq!(held.len(), 4, "not yet due: the expired one stays");
    }

    #[test]
    fn a_lease_is_kept_only_if_none_was_kept_since_it_was_asked() {
        let l = leases(5);
        // Window [0, 1 s) of 10: 5 granted, 5 left in Redis, 100 ms to go.
        let d = l.settle("k", 0, 900_000, (5, 5, 100_000, 0));
        assert!(d.allowed);
        assert_eq!(l.held().get("k").map(|(_, kept)| *kept), Some(1));
        // A second lease (of 3) asked before the first was kept: its
        // request is admitted, its rest dropped, the first kept as it was.
        assert!(l.settle("k", 0, 900_100, (3, 2, 99_900, 0)).allowed);
        assert_eq!(
            l.held().get("k").map(|(_, kept)| *kept),
            Some(1),
            "nothing kept since"
        );
        for _ in 0..4 {
            assert!(l.local("k", 900_200).is_some(), "the first lease's rest");
        }
        assert_eq!(
            l.local("k", 900_300),
            None,
            "the second lease's rest was not kept"
        );
    }

    #[test]
    fn a_lease_of_a_window_already_over_is_not_kept() {
        // The route a review found: a lease of window [0, 1 s) spent at
        // 1.0–1.1 s; then a request that read its clock at 0.99 s gets its
        // own lease of that old window. Kept, its rest would be a second
        // lease's rest carried into [1 s, 2 s) by one replica.
        let l = leases(5);
        assert!(l.settle("k", 0, 980_000, (5, 5, 20_000, 0)).allowed);
        for t in [1_000_000, 1_050_000, 1_080_000, 1_100_000] {
            assert!(l.local("k", t).unwrap().allowed);
        }
        assert_eq!(l.local("k", 1_100_001), None, "spent");
        let kept = |l: &Leases| l.held().get("k").map_or(0, |(_, kept)| *kept);
        let d = l.settle("k", kept(&l), 990_000, (5, 0, 10_000, 0));
        assert!(
            d.allowed,
            "the request itself is admitted: Redis counted it"
        );
        assert_eq!(kept(&l), 1, "the stale lease was not kept");
        assert_eq!(
            l.local("k", 1_100_002),
            None,
            "the stale lease's rest must not be spent in the next window"
        );

        // The boundary: a decision at exactly the window's end makes a
        // lease of that window stale; one microsecond before, it is kept.
        let l = leases(5);
        assert!(l.local("k", 2_000_000).is_none(), "nothing held, time seen");
        let d = l.settle("k", 0, 1_999_000, (5, 5, 1_000, 0));
        assert!(d.allowed);
        assert_eq!(kept(&l), 0, "ends at 2 s, and 2 s was seen: stale");
        let l = leases(5);
        assert!(l.local("k", 1_999_999).is_none());
        assert!(l.settle("k", 0, 1_999_000, (5, 5, 1_000, 0)).allowed);
        assert_eq!(kept(&l), 1, "ends at 2 s, 1.999999 s seen: kept");
        assert!(l.local("k", 1_999_999).is_some(), "and spent");
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
        assert!(e.to_string().contains("fixed_window"), "{e}");
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
