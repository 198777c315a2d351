//! An arm's collection tallied: each agent's spool merged onto the
//! controller's time line (a request sent twice, by a lost agent and by
//! the one that took its segment over, kept once), one record per agent
//! with what it was to send and what arrived, lost agents let go, and the
//! arm's load report.

use super::agent_state::AgentState;
use super::hold::Controller;
use crate::distributed::choose::Chosen;
use crate::distributed::merge::{self, Route};
use crate::distributed::time_line::{Anchor, Mapping};
use crate::error::Error;
use crate::events::Batch;
use crate::load::LoadReport;
use crate::store::records::{AgentRecord, TakenOver};
use std::path::Path;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Tests only: check each placement of an agent on this host against the
/// host's monotonic clock, and say how many were beyond their bound.
const TRUTH_ENV: &str = "RLBENCH_TEST_CLOCK_TRUTH";

/// One arm's load as the agents sent it.
pub(crate) struct Collected {
    pub report: LoadReport,
    pub agents: Vec<AgentRecord>,
    /// The most an agent's times may be off before nothing is judged (µs).
    pub max_clock_uncertainty_us: i64,
}

/// What the collection left to tally.
pub(super) struct Tally {
    pub(super) arm: String,
    pub(super) start: Instant,
    /// Where this trace's 0 was on the host's monotonic clock.
    pub(super) start_mono: i64,
    /// This machine's name.
    pub(super) host: String,
    /// The controller's wall clock at `start` (µs), as predicted.
    pub(super) phase_us: i64,
    /// Each segment's share of the schedule, and when its last request
    /// is due.
    pub(super) shares: Vec<Share>,
    pub(super) agents: Vec<AgentState>,
    /// The controller's anchors, local times from `start`.
    pub(super) anchors: Vec<Anchor>,
    /// Told to stop (interrupted).
    pub(super) stopping: bool,
}

impl Controller {
    /// Merges each agent's spool into `out`, records each agent, lets the
    /// lost and failed ones go: the arm's load.
    pub(super) async fn tally(
        &mut self,
        mut t: Tally,
        plan: &crate::load::Plan,
        spool_dir: &Path,
        out: &mpsc::Sender<Batch>,
    ) -> Result<Collected, Error> {
        let of = self.agents.len();
        let controller = Mapping::new(std::mem::take(&mut t.anchors))
            .ok_or_else(|| Error::environment("no reading of the coordinator's clock"))?;
        // Segments taken over: requests each agent took on (`extra`) and
        // gave away (`given`).
        let taken: Vec<Option<(usize, u64)>> = t.agents.iter().map(AgentState::taken).collect();
        let (extra, given) = handed_over(plan, t.phase_us, &self.agents, &taken);
        let merges = self.merge_all(&mut t, &controller, &taken, out).await?;
        let mut records = Vec::new();
        let mut not_sent = crate::store::records::NotSent::default();
        let mut last_sent = 0u64;
        for (i, (merged, agent_map)) in merges.into_iter().enumerate() {
            last_sent = last_sent.max(merged.last_sent_us);
            let first = agent_map
                .as_ref()
                .and_then(|m| m.anchors().first().copied());
            let a = &self.agents[i];
            let s = &t.agents[i];
            let share = (t.shares[a.segment].requests + extra[i]).saturating_sub(given[i]);
            let broken = s
                .broken
                .clone()
                .or_else(|| ended_out_of_place(s, &t.shares[a.segment], extra[i]));
            match &s.ended {
                Some(e) if taken[i].is_none() => not_sent.add(&e.not_sent),
                // Lost or failed: what did not arrive was not sent, as far
                // as the run knows (its retries counted in, at least this).
                _ => not_sent.lost += share.saturating_sub(merged.events),
            }
            records.push(AgentRecord {
                name: a.name.clone(),
                host: a.host.clone(),
                segment: a.segment,
                of,
                wall_offset_us: first.map_or(0, |f| f.wall_offset_us()),
                uncertainty_us: merged.uncertainty_us,
                scheduled: share,
                events: merged.events,
                said_events: s.ended.as_ref().map(|e| e.events),
                lost_at_s: s.lost,
                failed: s.failure.clone(),
                broken,
                taken_over: taken[i].map(|(by, from_us)| TakenOver {
                    by: self.agents[by].name.clone(),
                    from_s: from_us as f64 / 1e6,
                    requests: given[i],
                }),
                // A lost agent woken again is stopped by this controller:
                // its record says it was lost, not that the run was cut.
                interrupted: s.lost.is_none() && s.ended.as_ref().is_some_and(|e| e.interrupted),
                clock_estimated: self.estimate_clock,
            });
        }
        let _ = std::fs::remove_dir_all(spool_dir);
        // The run goes on with the survivors: later arms are split among
        // them (a lost agent's share of this arm is counted as not sent).
        let gone: Vec<usize> = (0..of)
            .filter(|&i| t.agents[i].lost.is_some() || t.agents[i].failure.is_some())
            .collect();
        self.drop_agents(&gone).await;
        let sample = crate::load::clock_watch::sample(t.start);
        let measured = sample.wall_us - sample.trace_us;
        // Stopped, not lost: a lost or failed agent makes the run partial
        // (its record says so) without stopping the run's other arms.
        let interrupted = t.stopping || records.iter().any(|r| r.interrupted);
        Ok(Collected {
            report: LoadReport {
                scheduled: records.iter().map(|r| r.scheduled).sum(),
                not_sent,
                send_window: Duration::from_micros(last_sent),
                interrupted,
                // The phase every agent's schedule took; the prediction's
                // error against this reading counts as uncertainty.
                epoch_offset_us: t.phase_us,
                epoch_uncertainty_us: sample.uncertainty_us + (measured - t.phase_us).abs(),
            },
            agents: records,
            max_clock_uncertainty_us: self.max_clock_uncertainty_us,
        })
    }

    /// Each agent's spool merged into `out`, in the agents' order: what
    /// was merged, and the agent's clock as its anchors place it.
    async fn merge_all(
        &self,
        t: &mut Tally,
        controller: &Mapping,
        taken: &[Option<(usize, u64)>],
        out: &mpsc::Sender<Batch>,
    ) -> Result<Vec<(merge::Merged, Option<Mapping>)>, Error> {
        let of = self.agents.len();
        // Agents that handed their segment over are merged last: a request
        // both sent (a lost agent still alive) is kept once, as its taker's.
        let mut order: Vec<usize> = (0..of).collect();
        order.sort_by_key(|&i| taken[i].is_some());
        let mut merges = vec![(merge::Merged::default(), None); of];
        let mut seen = crate::events::integrity::Checker::default();
        for &i in &order {
            let s = &mut t.agents[i];
            let agent_map = Mapping::new(std::mem::take(&mut s.heard.anchors));
            let merged = match (&agent_map, s.started) {
                (Some(agent), Some(start_local_us)) => {
                    let route = Route {
                        agent,
                        start_local_us,
                        controller,
                        truth: (std::env::var_os(TRUTH_ENV).is_some()
                            && self.agents[i].host == t.host)
                            .then(|| s.mono + start_local_us - t.start_mono),
                    };
                    merge::spool(&s.spool, i as u16, &route, &mut seen, out).await?
                }
                _ => merge::Merged::default(),
            };
            if merged.duplicates > 0 {
                tracing::warn!(
                    "arm {}: {} requests of agent {} were sent again by the agent that took \
                     its segment over; they are left out of the trace",
                    t.arm,
                    merged.duplicates,
                    self.agents[i].name
                );
            }
            merges[i] = (merged, agent_map);
        }
        Ok(merges)
    }
}

/// Per agent, the requests of segments it took over (`extra`) and of its
/// own segment it handed over (`given`): each taken segment's requests due
/// from its `from` on, counted on the arm's schedule.
fn handed_over(
    plan: &crate::load::Plan,
    phase_us: i64,
    agents: &[Chosen],
    taken: &[Option<(usize, u64)>],
) -> (Vec<u64>, Vec<u64>) {
    let of = agents.len();
    let (mut extra, mut given) = (vec![0u64; of], vec![0u64; of]);
    for (l, t) in taken.iter().enumerate() {
        let Some((by, from_us)) = *t else { continue };
        let segment = crate::load::Segment {
            index: agents[l].segment,
            of,
            from: Duration::from_micros(from_us),
        };
        let n =
            crate::load::schedule::Schedule::new(&plan.shape, plan.duration, plan.seed, phase_us)
                .enumerate()
                .filter(|&(i, at)| segment.holds(i, at))
                .count() as u64;
        extra[by] += n;
        given[l] += n;
    }
    (extra, given)
}

/// One segment's share of an arm's schedule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Share {
    pub(super) requests: u64,
    /// When its last request is due (trace time).
    pub(super) last_due: Duration,
}

/// Each segment's share of the schedule, as the agents walk it.
pub(super) fn shares(plan: &crate::load::Plan, phase_us: i64, of: usize) -> Vec<Share> {
    let mut shares = vec![Share::default(); of];
    let schedule =
        crate::load::schedule::Schedule::new(&plan.shape, plan.duration, plan.seed, phase_us);
    for (index, at) in schedule.enumerate() {
        let s = &mut shares[index % of];
        s.requests += 1;
        s.last_due = s.last_due.max(at);
    }
    shares
}

/// How far an agent's end may come before its last request is due, as
/// the controller's clock sees it: the agents' clocks are placed within
/// milliseconds of the controller's (past ten, nothing is judged), and a
/// request is sent no earlier than it is due.
const END_LEAD: Duration = Duration::from_millis(250);

/// Why an agent's end cannot be its own for this arm's schedule: it says
/// another number of requests than its share (and the segments it took
/// over) holds, or it came before its share could have been sent.
fn ended_out_of_place(s: &AgentState, share: &Share, extra: u64) -> Option<String> {
    let e = s.ended.as_ref()?;
    // (A load stopped early counts only what it reached.)
    if !e.interrupted && e.scheduled != share.requests + extra {
        return Some(format!(
            "its end says {} requests were scheduled; its share holds {}",
            e.scheduled,
            share.requests + extra
        ));
    }
    let at = s.ended_at?;
    (!e.interrupted && at + END_LEAD < share.last_due).then(|| {
        format!(
            "its end came {:.2} s into the arm, before its last request was due at {:.2} s",
            at.as_secs_f64(),
            share.last_due.as_secs_f64()
        )
    })
}
