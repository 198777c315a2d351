//! Limiters that keep their counts in Redis, shared by every replica:
//! `lua` (one atomic script per decision — correct) and `naive` (separate
//! round trips — the read-check-write race). Every decision is bounded by
//! a timeout; when Redis cannot answer in time, `on_error` decides (fail
//! open or closed), the fallback is counted, and the replica carries on. A
//! call that timed out is never replayed: it may have been applied.

mod acks;
mod batched;
mod conn;
mod error;
mod lua;
mod naive;
mod reply;

use super::contract::Decision;
use crate::config::{ClockSource, OnError, RedisBackend, RedisMode};
use crate::policy::Policy;
pub use batched::LeaseCalls;
use conn::Conn;
pub use error::ConnectError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub struct RedisLimiter {
    conn: Conn,
    backend: RedisBackend,
    policy: Policy,
    script: Option<lua::PolicyScript>,
    leases: Option<batched::Leases>,
    acks: Option<acks::Acks>,
    replica: String,
    seq: AtomicU64,
    failed_open: AtomicU64,
    failed_closed: AtomicU64,
}

/// Fallback decisions taken because Redis did not answer in time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fallbacks {
    pub failed_open: u64,
    pub failed_closed: u64,
}

impl RedisLimiter {
    pub async fn connect(
        backend: RedisBackend,
        policy: Policy,
        replica: &str,
    ) -> Result<Self, ConnectError> {
        if backend.mode == RedisMode::Naive && !naive::supports(&policy) {
            return Err(ConnectError::NaiveUnsupported(policy.algorithm()));
        }
        let timeout = Duration::from_micros(backend.timeout_us.max(1));
        let conn = conn::connect(&backend, timeout).await?;
        let leases = match backend.mode {
            RedisMode::Batched => Some(batched::Leases::new(
                &policy,
                backend.lease,
                backend.lease_ttl_us,
            )?),
            _ => None,
        };
        let script = (backend.mode == RedisMode::Lua).then(|| lua::PolicyScript::new(&policy));
        let acks = match backend.wait_replicas {
            0 => None,
            n => Some(acks::Acks::new(&backend, n, timeout)?),
        };
        Ok(RedisLimiter {
            conn,
            backend,
            policy,
            script,
            leases,
            acks,
            replica: replica.to_string(),
            seq: AtomicU64::new(0),
            failed_open: AtomicU64::new(0),
            failed_closed: AtomicU64::new(0),
        })
    }

    /// `now` is the replica's clock (used unless the clock is Redis').
    pub async fn decide(&self, key: &str, now: i64) -> Decision {
        let key = conn::key_of(&self.backend.prefix, key);
        if let Some(d) = self.leases.as_ref().and_then(|l| l.local(&key, now)) {
            return d;
        }
        let replica_now = now;
        let deadline = self
            .backend
            .deadline
            .then(|| now.saturating_add(self.backend.timeout_us as i64));
        let now = match self.backend.clock {
            ClockSource::Replica => Some(now),
            ClockSource::Redis => None,
        };
        // A unique member, for the sliding logs only (the other scripts
        // ignore it): no string is built per decision for them.
        let needs_member = match (&self.script, &self.leases) {
            (Some(script), _) => script.needs_member(),
            (None, Some(_)) => false,
            (None, None) => true,
        };
        let member = if needs_member {
            format!(
                "{}:{}",
                self.replica,
                self.seq.fetch_add(1, Ordering::Relaxed)
            )
        } else {
            String::new()
        };
        let timeout = Duration::from_micros(self.backend.timeout_us.max(1));
        let call = async {
            // A decision that waits for replicas has a connection of its
            // own (see acks.rs): its WAIT blocks nobody else's decision.
            let mut own = match &self.acks {
                Some(acks) => Some(acks.take().await?),
                None => None,
            };
            let mut shared = self.conn.clone();
            let conn = match own.as_mut() {
                Some(taken) => &mut taken.conn,
                None => &mut shared,
            };
            let decision = match (&self.script, &self.leases) {
                // The script and its WAIT in one pipeline (see lua.rs).
                (Some(script), _) => {
                    let wait = self.acks.as_ref().map(acks::Acks::wait);
                    script.run(conn, &key, now, &member, deadline, wait).await?
                }
                (None, Some(leases)) => leases.take(conn, &key, now, replica_now).await?,
                (None, None) => naive::decide(conn, &self.policy, &key, now, &member).await?,
            };
            // The writes are safe once the replicas have them (the naive
            // path's: its commands are separate round trips anyway).
            if let (Some(acks), None) = (&self.acks, &self.script) {
                if !acks.acknowledged(conn).await {
                    return Err(redis::RedisError::from((
                        redis::ErrorKind::Io,
                        "too few replicas acknowledged",
                    )));
                }
            }
            // Finished: its connection may serve the next (one that timed
            // out is dropped with this future, and closed).
            if let (Some(acks), Some(taken)) = (&self.acks, own) {
                acks.give(taken);
            }
            Ok::<_, redis::RedisError>(decision)
        };
        let r = tokio::time::timeout(timeout, call).await;
        match r {
            Ok(Ok(decision)) => decision,
            Ok(Err(_)) | Err(_) => self.fallback(),
        }
    }

    fn fallback(&self) -> Decision {
        match self.backend.on_error {
            OnError::FailOpen => {
                self.failed_open.fetch_add(1, Ordering::Relaxed);
                Decision::allow(0, 0)
            }
            OnError::FailClosed => {
                self.failed_closed.fetch_add(1, Ordering::Relaxed);
                Decision::deny(1_000_000)
            }
        }
    }

    /// At most `max_keys` keys whose lease or refusal a `redis_batched`
    /// replica keeps (`ReplicaConfig::max_keys`); other modes keep none.
    pub fn with_max_keys(mut self, max_keys: usize) -> Self {
        if let Some(leases) = self.leases.as_mut() {
            leases.cap(max_keys);
        }
        self
    }

    /// The lease calls made, in `redis_batched` mode only.
    pub fn lease_calls(&self) -> Option<LeaseCalls> {
        self.leases.as_ref().map(batched::Leases::calls)
    }

    pub fn fallbacks(&self) -> Fallbacks {
        Fallbacks {
            failed_open: self.failed_open.load(Ordering::Relaxed),
            failed_closed: self.failed_closed.load(Ordering::Relaxed),
        }
    }
}
