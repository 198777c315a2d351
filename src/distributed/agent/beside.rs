//! What runs beside an agent's load: a reading of the coordinator's clock
//! every quarter second, a look into the run's inbox (a stop, a segment to
//! take over, the run's end), the controller's beat watched, and the
//! agent's own heartbeat.

use super::dead_man::DeadMan;
use super::inbox::unseal;
use super::registration::beat;
use crate::distributed::link::{self, ClockSource};
use crate::distributed::protocol::{self, FromAgent, ToAgent, Work};
use crate::distributed::seal::Sequence;
use crate::distributed::voice::{say, Chain, Me};
use redis::AsyncCommands;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

/// How often an agent reads the coordinator's clock while its load runs:
/// the shorter the pieces between readings, the less a slewing clock can
/// stray from them. Its controller's beat is looked at as often.
const ANCHOR_EVERY: Duration = Duration::from_millis(250);

/// What runs beside the load.
pub(super) struct Beside {
    pub(super) conn: link::Conn,
    pub(super) url: String,
    pub(super) me: Arc<Me>,
    pub(super) work: Work,
    pub(super) chain: Chain,
    pub(super) origin: Instant,
    pub(super) clock: ClockSource,
    pub(super) stopped: Arc<Notify>,
    pub(super) gone: Arc<AtomicBool>,
    pub(super) bye: Arc<AtomicBool>,
    /// Why the controller counts as gone, when the coordinator is to blame.
    pub(super) blame: Arc<std::sync::Mutex<Option<String>>>,
    /// Set when the agent's own load ended: no segment is taken over
    /// any more.
    pub(super) finished: Arc<AtomicBool>,
    /// Set when all its events were streamed (which waits while the
    /// controller is behind): this stops too. Until then the agent beats,
    /// or a controller slow to read would take it for lost.
    pub(super) streamed: Arc<AtomicBool>,
    pub(super) run_seq: Sequence,
    /// Where a lost agent's segment to take over is handed on (dropped
    /// once the agent's own load ended).
    pub(super) takes: Option<mpsc::Sender<(usize, u64)>>,
}

/// Every [`ANCHOR_EVERY`]: an anchor; a look into the run's inbox for a
/// stop, a segment to take over, or the run's end (looked into, never waited on: the load must not
/// wait for it); the controller's beat (gone: the load stops); and each
/// second a heartbeat. Ends when the load's events were all streamed, or
/// it is told to stop while the load runs; gives back the run's inbox's
/// count and its beats.
pub(super) async fn beside_the_load(mut b: Beside) -> (Sequence, u64) {
    let mut every = tokio::time::interval(ANCHOR_EVERY);
    every.tick().await;
    let mut ticks = 0u64;
    let mut me = (*b.me).clone();
    let inbox = protocol::run_inbox(&me.reg.name, &b.work.run);
    let mut dead_man = DeadMan::new();
    loop {
        every.tick().await;
        if b.streamed.load(Ordering::Relaxed) {
            return (b.run_seq, me.beats);
        }
        // Its own load ended: the take-over ends with the channel.
        if b.finished.load(Ordering::Relaxed) {
            b.takes = None;
        }
        if let Ok(a) = link::anchor(&mut b.conn, b.origin, b.clock).await {
            let _ = say(&mut b.conn, &b.chain, &FromAgent::Anchor(a)).await;
        }
        let popped: redis::RedisResult<Option<String>> = b.conn.lpop(&inbox, None).await;
        if let Ok(Some(text)) = popped {
            let message = unseal(&me, &inbox, &text)
                .filter(|(s, _)| s.run == b.work.run && b.run_seq.take(s.seq))
                .map(|(_, m)| m);
            match message {
                Some(ToAgent::Stop { run, arm }) if run == b.work.run && arm == b.work.arm => {
                    b.stopped.notify_one();
                }
                Some(ToAgent::Bye { run }) if run == b.work.run => {
                    b.bye.store(true, Ordering::Relaxed);
                    b.stopped.notify_one();
                }
                Some(ToAgent::Take {
                    run,
                    arm,
                    segment,
                    from_us,
                }) if run == b.work.run && arm == b.work.arm => {
                    if let Some(takes) = &b.takes {
                        let _ = takes.try_send((segment, from_us));
                    }
                }
                _ => {}
            }
        }
        if !dead_man.alive(&mut b.conn, &me.token, &b.work.run).await {
            if let Ok(mut blame) = b.blame.lock() {
                *blame = dead_man.coordinator_blamed();
            }
            b.gone.store(true, Ordering::Relaxed);
            b.stopped.notify_one();
            return (b.run_seq, me.beats);
        }
        ticks += 1;
        if ticks % 4 == 0 {
            if let Err(e) = beat(&mut b.conn, &b.url, &mut me).await {
                tracing::warn!("agent {}: {e}", me.reg.name);
            }
        }
    }
}
