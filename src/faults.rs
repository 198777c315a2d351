//! Fault injection: applies a scenario's `[[faults]]` to one arm's running
//! stack at their times and undoes each at its end, recording when (µs from
//! the load's start) — the windows the report's phases are cut along. A
//! failover is not undone; its window runs from the replication link's
//! hold (or, without one, from the kill) to the promotion.

use crate::stack::{Stack, StackError};
use crate::store::records::Applied;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// Runs the faults in order; stops early (undoing the current one) when
/// `stop` resolves.
pub(crate) async fn drive(
    stack: &mut Stack,
    faults: &[Fault],
    start: Instant,
    stop: impl Future<Output = ()>,
) -> Vec<Applied> {
    tokio::pin!(stop);
    let mut out = Vec::new();
    for f in faults {
        tokio::select! {
            biased;
            () = &mut stop => break,
            () = tokio::time::sleep_until(start + f.at) => {}
        }
        // From when it has taken effect: a request sent while a replica was
        // still being killed, and answered by it, belongs before.
        let before_us = start.elapsed().as_micros() as u64;
        let applied = apply(stack, f.action).await;
        let mut from_us = start.elapsed().as_micros() as u64;
        let mut failover_us = None;
        if let (true, FaultAction::RedisFailover { replication_delay }) = (applied, f.action) {
            if !replication_delay.is_zero() {
                let held = tokio::select! {
                    biased;
                    () = &mut stop => false,
                    () = tokio::time::sleep_until(start + f.at + replication_delay) => true,
                };
                if held && fail_over(stack).await {
                    failover_us = Some(start.elapsed().as_micros() as u64);
                }
            } else {
                // No lag asked for: the window runs from the kill to the
                // promotion, the time the primary's keys had no master.
                failover_us = Some(from_us);
                from_us = before_us;
            }
            if let (Some(_), Some(redis)) = (failover_us, stack.redis_mut()) {
                if let Err(e) = redis.rejoin().await {
                    tracing::warn!("redis_failover: no replica after it: {e}");
                }
            }
        }
        let stopped = tokio::select! {
            biased;
            () = &mut stop => true,
            () = tokio::time::sleep_until(start + f.at + f.lasts) => false,
        };
        let error = if applied {
            undo(stack, f.action).await.err().map(|e| e.to_string())
        } else {
            None
        };
        out.push(Applied {
            fault: f.action.describe(),
            from_us,
            // A failover's window is the replication lag before it: what
            // was admitted then is what the promoted replica lost.
            to_us: failover_us.unwrap_or_else(|| start.elapsed().as_micros() as u64),
            applied,
            error,
        });
        if stopped {
            break;
        }
    }
    out
}

async fn apply(stack: &mut Stack, action: FaultAction) -> bool {
    match action {
        FaultAction::RedisDown { restart: false } => stack.redis_mut().is_some_and(|r| r.pause()),
        FaultAction::RedisDown { restart: true } => match stack.redis_mut() {
            Some(r) => r.kill().await,
            None => false,
        },
        FaultAction::ReplicaRestart { replica } => stack.kill_replica(replica).await,
        FaultAction::RedisLatency { delay, jitter } => {
            stack.redis_mut().is_some_and(|r| r.delay(delay, jitter))
        }
        FaultAction::ClockStep { replica, step_us } => {
            match stack.step_clock(replica, step_us).await {
                Ok(applied) => applied,
                Err(e) => {
                    tracing::warn!("clock_step: {e}");
                    false
                }
            }
        }
        FaultAction::RedisFailover { replication_delay } if !replication_delay.is_zero() => {
            stack.redis_mut().is_some_and(|r| r.hold_replication())
        }
        FaultAction::RedisFailover { .. } => fail_over(stack).await,
    }
}

async fn fail_over(stack: &mut Stack) -> bool {
    let Some(redis) = stack.redis_mut() else {
        return false;
    };
    match redis.fail_over().await {
        Ok(applied) => applied,
        Err(e) => {
            tracing::warn!("redis_failover: {e}");
            false
        }
    }
}

async fn undo(stack: &mut Stack, action: FaultAction) -> Result<(), StackError> {
    match action {
        FaultAction::RedisDown { restart: false } => {
            if let Some(r) = stack.redis_mut() {
                r.resume();
            }
            Ok(())
        }
        FaultAction::RedisDown { restart: true } => stack.restart_redis().await,
        FaultAction::ReplicaRestart { replica } => stack.restart_replica(replica).await,
        FaultAction::RedisLatency { .. } => {
            if let Some(r) = stack.redis_mut() {
                r.delay(Duration::ZERO, Duration::ZERO);
            }
            Ok(())
        }
        FaultAction::ClockStep { replica, .. } => stack.step_clock(replica, 0).await.map(|_| ()),
        // Nothing to undo: the promoted replica stays primary.
        FaultAction::RedisFailover { .. } => Ok(()),
    }
}

/// `[[faults]]`: an action from `at` for `lasts`, then undone.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Fault {
    pub at: Duration,
    pub lasts: Duration,
    pub action: FaultAction,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FaultAction {
    /// Stop the arm's Redis: `restart` kills it and starts a fresh one on
    /// the same port at the end (empty, script cache gone); otherwise it is
    /// paused (SIGSTOP) and resumed (SIGCONT).
    RedisDown { restart: bool },
    /// Kill one replica hard (SIGKILL) and start it again on its port at the end.
    ReplicaRestart { replica: usize },
    /// Delay everything between the replicas and Redis by `delay` plus up
    /// to `jitter` (through a proxy rlbench runs in front of its Redis).
    RedisLatency { delay: Duration, jitter: Duration },
    /// Step one replica's clock by `step_us` (µs, either way), and back.
    ClockStep { replica: usize, step_us: i64 },
    /// Hold the replication link for `replication_delay` (the primary's
    /// writes from then on never reach the replica), then kill the primary
    /// and promote the replica. Not undone: the promoted replica stays.
    RedisFailover { replication_delay: Duration },
}

impl FaultAction {
    pub(crate) fn name(self) -> &'static str {
        match self {
            FaultAction::RedisDown { .. } => "redis_down",
            FaultAction::ReplicaRestart { .. } => "replica_restart",
            FaultAction::RedisLatency { .. } => "redis_latency",
            FaultAction::ClockStep { .. } => "clock_step",
            FaultAction::RedisFailover { .. } => "redis_failover",
        }
    }

    /// Whether the arm's Redis needs the delaying proxy in front.
    pub(crate) fn needs_proxy(self) -> bool {
        matches!(self, FaultAction::RedisLatency { .. })
    }

    /// In words, e.g. "redis_down (pause)" or "replica_restart (r1)".
    pub(crate) fn describe(self) -> String {
        match self {
            FaultAction::RedisDown { restart: false } => "redis_down (pause)".to_string(),
            FaultAction::RedisDown { restart: true } => "redis_down (restart)".to_string(),
            FaultAction::ReplicaRestart { replica } => format!("replica_restart (r{replica})"),
            FaultAction::RedisLatency { delay, jitter } if jitter.is_zero() => {
                format!("redis_latency (+{delay:?})")
            }
            FaultAction::RedisLatency { delay, jitter } => {
                format!("redis_latency (+{delay:?} to +{:?})", delay + jitter)
            }
            FaultAction::ClockStep { replica, step_us } => {
                format!("clock_step (r{replica}, {step_us:+} µs)")
            }
            FaultAction::RedisFailover { replication_delay } if replication_delay.is_zero() => {
                "redis_failover".to_string()
            }
            FaultAction::RedisFailover { replication_delay } => {
                format!("redis_failover (replication held {replication_delay:?})")
            }
        }
    }
}
