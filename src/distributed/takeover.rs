//! An agent taking over a lost agent's segment of the arm's schedule, as
//! its controller asks (`ToAgent::Take`): beside its own load, with the
//! same plan, start and phase, from the time it is handed on, said back
//! (`took`) so the controller counts those requests as this agent's.

use super::protocol::{FromAgent, Work};
use super::voice::{say, Chain, Me};
use super::work::plan_of;
use crate::events::Batch;
use crate::load::{self, Counters, Segment};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Resolves once the arm's loads are told to stop (or nobody can tell).
pub(super) fn halt_of(
    halted: &tokio::sync::watch::Receiver<bool>,
) -> impl std::future::Future<Output = ()> {
    let mut halted = halted.clone();
    async move {
        let _ = halted.wait_for(|h| *h).await;
    }
}

/// What takes over a lost agent's segment beside the agent's own load.
pub(super) struct TakeOver<'a> {
    pub(super) work: &'a Work,
    pub(super) allow_remote: bool,
    pub(super) phase_us: i64,
    /// The arm's trace time 0, as for its own load.
    pub(super) start: Instant,
    pub(super) conn: super::link::Conn,
    pub(super) me: Arc<Me>,
    pub(super) chain: Chain,
    pub(super) events: mpsc::Sender<Batch>,
    pub(super) counters: Arc<Counters>,
    pub(super) halted: tokio::sync::watch::Receiver<bool>,
    /// Segments to take over, as the controller asks: closed once the
    /// agent's own load ended.
    pub(super) takes: mpsc::Receiver<(usize, u64)>,
}

/// Each segment the controller hands over (another's, of this split, each
/// once, due before the schedule's end) is sent from its `from` on with
/// the same plan, start and phase as the agent's own — the same schedule,
/// the same keys — and said (`took`); gives back how each such load went.
pub(super) async fn take_over(mut t: TakeOver<'_>) -> Vec<load::LoadReport> {
    let mut loads = tokio::task::JoinSet::new();
    let mut taken: HashSet<usize> = HashSet::new();
    let mut reports = Vec::new();
    let name = t.me.reg.name.clone();
    loop {
        tokio::select! {
            asked = t.takes.recv() => {
                let Some((segment, from_us)) = asked else { break };
                let from = Duration::from_micros(from_us);
                let mut plan = match plan_of(t.work, t.allow_remote) {
                    Ok(plan) => plan,
                    Err(_) => continue,
                };
                if segment >= t.work.of
                    || segment == t.work.segment
                    || from >= plan.duration
                    || !taken.insert(segment)
                {
                    tracing::warn!(
                        "agent {name}: not taking over segment {segment} from {:.1} s",
                        from.as_secs_f64()
                    );
                    continue;
                }
                plan.segment = Segment { index: segment, of: t.work.of, from };
                plan.phase_us = Some(t.phase_us);
                let said = FromAgent::Took { segment, from_us };
                if say(&mut t.conn, &t.chain, &said).await.is_err() {
                    continue;
                }
                tracing::warn!(
                    "agent {name}: taking over segment {segment} of {} from {:.1} s",
                    t.work.of,
                    from.as_secs_f64()
                );
                let (events, counters, stop) =
                    (t.events.clone(), t.counters.clone(), halt_of(&t.halted));
                let start = t.start;
                loads.spawn(async move { load::run(&plan, events, counters, stop, start).await });
            }
            Some(done) = loads.join_next() => reports.extend(done.ok()),
        }
    }
    drop(t.events);
    while let Some(done) = loads.join_next().await {
        reports.extend(done.ok());
    }
    reports
}
