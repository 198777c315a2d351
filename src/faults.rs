//! Fault injection: applies a scenario's `[[faults]]` to one arm's running
//! stack at their times and undoes each at its end, recording when (µs from
//! the load's start) — the windows the report's phases are cut along.

use crate::scenario::{Fault, FaultAction};
use crate::stack::Stack;
use serde::{Deserialize, Serialize};
use std::future::Future;
use tokio::time::Instant;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    /// In words, e.g. "redis_down (pause)".
    pub fault: String,
    /// From just before it was applied to just after it was undone (a
    /// restarted process ready again), µs from the load's start.
    pub from_us: u64,
    pub to_us: u64,
    /// False when the arm had nothing to break (a Redis fault on a local arm).
    pub applied: bool,
    /// What went wrong undoing it (e.g. a restart that failed), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Runs the faults in order; stops early (undoing the current one) when
/// `stop` resolves.
pub async fn drive(
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
        let from_us = start.elapsed().as_micros() as u64;
        let applied = apply(stack, f.action).await;
        let stopped = tokio::select! {
            biased;
            () = &mut stop => true,
            () = tokio::time::sleep_until(start + f.at + f.lasts) => false,
        };
        let error = if applied {
            undo(stack, f.action).await.err()
        } else {
            None
        };
        out.push(Applied {
            fault: f.action.describe(),
            from_us,
            to_us: start.elapsed().as_micros() as u64,
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
        FaultAction::RedisDown { restart: false } => stack.pause_redis(),
        FaultAction::RedisDown { restart: true } => stack.kill_redis().await,
        FaultAction::ReplicaRestart { replica } => stack.kill_replica(replica).await,
        FaultAction::RedisLatency { delay, jitter } => stack.delay_redis(delay, jitter),
        FaultAction::ClockStep { replica, step_us } => {
            match stack.step_clock(replica, step_us).await {
                Ok(applied) => applied,
                Err(e) => {
                    tracing::warn!("clock_step: {e}");
                    false
                }
            }
        }
    }
}

async fn undo(stack: &mut Stack, action: FaultAction) -> Result<(), String> {
    match action {
        FaultAction::RedisDown { restart: false } => {
            stack.resume_redis();
            Ok(())
        }
        FaultAction::RedisDown { restart: true } => stack.restart_redis().await,
        FaultAction::ReplicaRestart { replica } => stack.restart_replica(replica).await,
        FaultAction::RedisLatency { .. } => {
            stack.delay_redis(std::time::Duration::ZERO, std::time::Duration::ZERO);
            Ok(())
        }
        FaultAction::ClockStep { replica, .. } => stack.step_clock(replica, 0).await.map(|_| ()),
    }
}
