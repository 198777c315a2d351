//! The agents' spooled traces onto the controller's time line: every
//! time an agent recorded (µs from its load's start on its own monotonic
//! clock) goes through its anchors to the coordinator's clock and through
//! the controller's anchors to the controller's trace time. Each event
//! keeps its agent's index, and each agent's record the largest error its
//! times may carry, by which the analysis widens its intervals.

use super::time_line::Mapping;
use crate::events::integrity::{Check, Checker};
use crate::events::{Batch, Event, EventsError, BATCH};
use std::path::Path;
use tokio::sync::mpsc;

/// How an agent's times reach the controller's time line.
pub(crate) struct Route<'a> {
    /// The agent's anchors, local times from its origin.
    pub agent: &'a Mapping,
    /// Its load's start, µs from its origin.
    pub start_local_us: i64,
    /// The controller's anchors, local times from its trace's 0.
    pub controller: &'a Mapping,
    /// Tests only: the agent's trace 0 on the controller's trace time, as
    /// the host's monotonic clock has it when both share one host (the
    /// truth every placement is checked against, [`Truth`]).
    pub truth: Option<i64>,
}

impl Route<'_> {
    /// An agent's trace time on the controller's, and how far off it may be.
    pub(crate) fn map(&self, agent_trace_us: u64) -> (i64, i64) {
        let local = self.start_local_us + agent_trace_us as i64;
        let (coord, off_agent) = self.agent.to_coord(local);
        let (mine, off_mine) = self.controller.to_local(coord);
        (mine, off_agent + off_mine)
    }
}

/// What one agent's spool gave the merged trace.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Merged {
    pub events: u64,
    /// The largest error of any of its times (µs), a time mapped before
    /// the controller's 0 and held there included.
    pub uncertainty_us: i64,
    /// Its last send on the controller's time line (µs).
    pub last_sent_us: u64,
    /// Its events left out: another agent's spool, merged first, had the
    /// same request (a lost agent, still alive, and the one that took its
    /// segment over both sent it).
    pub duplicates: u64,
}

/// Sends agent `index`'s spooled events, mapped, to the merged trace's
/// writer, each request once over all spools (`seen`). A spool whose
/// agent was lost may end inside a record, or hold nothing at all (lost
/// before its first chunk arrived).
pub(crate) async fn spool(
    path: &Path,
    index: u16,
    route: &Route<'_>,
    seen: &mut Checker,
    out: &mpsc::Sender<Batch>,
) -> Result<Merged, EventsError> {
    let mut merged = Merged::default();
    if std::fs::metadata(path).map_or(true, |m| m.len() == 0) {
        return Ok(merged);
    }
    let check = Check {
        seal: None,
        unfinished: true,
    };
    let mut batch = Vec::with_capacity(BATCH);
    let mut truth = Truth::default();
    for event in crate::events::binary::read(path, check)? {
        let e = event?;
        let (sent, held_sent, u_sent) = place(route, e.sent_us);
        let (done, held_done, u_done) = place(route, e.done_us);
        let (intended, _, _) = place(route, e.intended_us);
        if let Some(zero) = route.truth {
            truth.check(zero, e.sent_us, route.map(e.sent_us));
            truth.check(zero, e.done_us, route.map(e.done_us));
        }
        let done = done.max(sent);
        let event = Event {
            intended_us: intended.min(sent),
            sent_us: sent,
            done_us: done,
            agent: index,
            ..e
        };
        if seen.event(&event).is_err() {
            merged.duplicates += 1;
            continue;
        }
        // Holding a time at 0 moved it by `held`: its error grows by that.
        merged.uncertainty_us = merged
            .uncertainty_us
            .max(u_sent + held_sent)
            .max(u_done + held_done);
        merged.last_sent_us = merged.last_sent_us.max(sent);
        merged.events += 1;
        batch.push(event);
        if batch.len() >= BATCH {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
            if out.send(full).await.is_err() {
                break;
            }
        }
    }
    if !batch.is_empty() {
        let _ = out.send(batch).await;
    }
    if route.truth.is_some() {
        tracing::warn!(
            "clock check of agent {index}: {} of {} times placed beyond their bound; largest error {} µs",
            truth.beyond, truth.checked, truth.largest_us
        );
    }
    Ok(merged)
}

/// Tests only: the placements against the truth, when an agent shares
/// the controller's host and so its monotonic clock.
#[derive(Default)]
struct Truth {
    checked: u64,
    beyond: u64,
    largest_us: i64,
}

impl Truth {
    fn check(&mut self, zero: i64, agent_us: u64, (placed, bound): (i64, i64)) {
        let error = (placed - (zero + agent_us as i64)).abs();
        self.checked += 1;
        self.largest_us = self.largest_us.max(error);
        if error > bound {
            self.beyond += 1;
        }
    }
}

/// A time on the controller's line, held at 0 if it maps before it: the
/// time, how far it was held, and its error.
fn place(route: &Route<'_>, agent_us: u64) -> (u64, i64, i64) {
    let (t, off) = route.map(agent_us);
    (t.max(0) as u64, (-t).max(0), off)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::time_line::Anchor;

    fn anchor(local_us: i64, coord_us: i64, uncertainty_us: i64) -> Anchor {
        Anchor {
            local_us,
            coord_us,
            uncertainty_us,
            wall_us: 0,
        }
    }

    #[test]
    fn an_agent_time_goes_through_both_machines_anchors() {
        // The agent's origin reads coordinator 10 s; it started 2 ms later.
        let agent = Mapping::new(vec![
            anchor(0, 10_000_000, 50),
            anchor(2_000_000, 12_000_000, 50),
        ])
        .unwrap();
        // The controller's trace 0 is coordinator 10.001 s.
        let controller = Mapping::new(vec![
            anchor(0, 10_001_000, 20),
            anchor(1_000_000, 11_001_000, 30),
        ])
        .unwrap();
        let route = Route {
            agent: &agent,
            start_local_us: 2_000,
            controller: &controller,
            truth: None,
        };
        // Agent trace 500 ms: local 502 ms, coordinator 10.502 s, the
        // controller's 501 ms; off by 50 + 200 and 30 + 100 (neither
        // offset moved).
        assert_eq!(route.map(500_000), (501_000, 250 + 130));
    }

    #[tokio::test]
    async fn times_before_the_controllers_zero_are_held_and_counted_as_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.spool");
        let mut bytes = Vec::new();
        crate::events::binary::Encoder::start(&mut bytes).unwrap();
        let mut enc = crate::events::binary::Encoder::default();
        let e = Event {
            seq: 4,
            key: "k".into(),
            replica: 1,
            intended_us: 0,
            sent_us: 100,
            done_us: 900,
            status: 200,
            outcome: crate::events::Outcome::Admitted,
            error: None,
            advertised: None,
            retry_of: None,
            agent: 0,
        };
        enc.write(&mut bytes, &e).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        // The agent's clock puts its start 300 µs before the controller's 0.
        let agent = Mapping::new(vec![
            anchor(0, 1_000_000, 10),
            anchor(1_000_000, 2_000_000, 10),
        ])
        .unwrap();
        let controller = Mapping::new(vec![
            anchor(0, 1_000_300, 10),
            anchor(1_000_000, 2_000_300, 10),
        ])
        .unwrap();
        let route = Route {
            agent: &agent,
            start_local_us: 0,
            controller: &controller,
            truth: None,
        };
        let (tx, mut rx) = mpsc::channel(4);
        let mut seen = Checker::default();
        let merged = spool(&path, 3, &route, &mut seen, &tx).await.unwrap();
        let got = rx.recv().await.unwrap();
        assert_eq!(got.len(), 1);
        // The same request in a second spool is left out, and counted.
        let again = spool(&path, 4, &route, &mut seen, &tx).await.unwrap();
        assert_eq!((again.events, again.duplicates), (0, 1));
        // An agent lost before its first chunk arrived left an empty
        // spool: nothing of it, and no error.
        let empty = dir.path().join("b.spool");
        std::fs::write(&empty, b"").unwrap();
        let none = spool(&empty, 5, &route, &mut seen, &tx).await.unwrap();
        assert_eq!((none.events, none.duplicates), (0, 0));
        // A spool that is not a trace at all is still an error.
        std::fs::write(&empty, b"junk").unwrap();
        assert!(spool(&empty, 5, &route, &mut seen, &tx).await.is_err());
        drop(tx);
        assert!(rx.recv().await.is_none());
        let m = &got[0];
        // Sent at -200 µs, held at 0; done at 600 µs.
        assert_eq!((m.sent_us, m.done_us, m.agent, m.seq), (0, 600, 3, 4));
        // The send: the agent's chord (10 + 100 ppm of 1 s), the
        // controller's line 200 µs before its first anchor (10 + 600 ppm
        // of 200 µs), and the 200 µs it was held; the answer's error is
        // smaller (110 + 110).
        assert_eq!(merged.uncertainty_us, 110 + 11 + 200);
        assert_eq!(merged.events, 1);
    }
}
