//! One load agent of a distributed arm as the controller saw it, and who
//! took a lost agent's segment over.

use serde::{Deserialize, Serialize};

/// One load agent of a distributed arm (`rlbench run --agents`), as the
/// controller saw it; the trace's events name it by its index here.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct AgentRecord {
    pub name: String,
    /// The machine it said it runs on.
    pub host: String,
    /// Its share of the schedule: index `segment` of `of`.
    pub segment: usize,
    pub of: usize,
    /// How far its wall clock was behind the coordinator's (µs; negative:
    /// ahead), at its first reading. Shown; nothing is judged by it.
    pub wall_offset_us: i64,
    /// The most any of its times may be off on the run's time line (µs):
    /// the analysis widens each of its requests' `[sent, done]` by it.
    pub uncertainty_us: i64,
    /// Requests of its segment it reached in the schedule.
    pub scheduled: u64,
    /// Events it sent back, as merged into the trace.
    pub events: u64,
    /// Events it said it sent, when it said how its load ended: more than
    /// reached the trace means some were lost on the way, and the trace
    /// cannot be judged as whole (a missing admit makes a reject look false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub said_events: Option<u64>,
    /// When it stopped beating (s from the load's start): its segment's
    /// requests after its last chunk are missing and the run is partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_at_s: Option<f64>,
    /// What it said when it could not do the work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// Its stream could not be taken whole (someone without the token
    /// wrote to the coordinator, or it lost entries): why. What arrived
    /// before is the agent's own, but the trace is not whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broken: Option<String>,
    /// Lost, its segment's requests due from then on went to another
    /// agent (`scheduled` is then its share before that).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_over: Option<TakenOver>,
    pub interrupted: bool,
    /// Its clock was read against the coordinator's (always but in tests
    /// that show what trusting each machine's own wall clock costs).
    pub clock_estimated: bool,
}

impl AgentRecord {
    /// Why its segment is incomplete, if it is.
    pub(crate) fn incomplete(&self) -> Option<String> {
        let who = format!(
            "agent {} (segment {} of {})",
            self.name, self.segment, self.of
        );
        if let Some(why) = &self.broken {
            return Some(format!(
                "{who} was not heard whole through the coordinator: {why}"
            ));
        }
        match (&self.lost_at_s, &self.failed) {
            (Some(at), _) => Some(match &self.taken_over {
                Some(t) => format!(
                    "{who} was lost at {at:.1} s: its requests after its last report are \
                     missing until {:.1} s, when {} took its segment over",
                    t.from_s, t.by
                ),
                None => format!(
                    "{who} was lost at {at:.1} s: its requests after its last report are missing"
                ),
            }),
            (None, Some(why)) => Some(format!("{who} failed: {why}")),
            (None, None) => match self.said_events {
                Some(said) if said != self.events => Some(format!(
                    "{who} sent {said} events, of which {} reached the trace",
                    self.events
                )),
                _ => None,
            },
        }
    }
}

/// Who sent a lost agent's requests from when on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct TakenOver {
    /// The agent that took its segment over.
    pub by: String,
    /// From this trace time on (s).
    pub from_s: f64,
    /// Its segment's requests due from then on.
    pub requests: u64,
}

#[cfg(test)]
mod tests {
    use super::AgentRecord;

    fn agent() -> AgentRecord {
        AgentRecord {
            name: "a1".into(),
            host: "h".into(),
            segment: 1,
            of: 3,
            wall_offset_us: 0,
            uncertainty_us: 100,
            scheduled: 400,
            events: 400,
            said_events: Some(400),
            lost_at_s: None,
            failed: None,
            broken: None,
            taken_over: None,
            interrupted: false,
            clock_estimated: true,
        }
    }

    #[test]
    fn an_agent_is_incomplete_when_lost_failed_or_short_of_what_it_sent() {
        assert_eq!(agent().incomplete(), None);
        // An agent that never said how it ended is judged by the rest.
        let silent = AgentRecord {
            said_events: None,
            ..agent()
        };
        assert_eq!(silent.incomplete(), None);
        let short = AgentRecord {
            events: 399,
            ..agent()
        };
        assert_eq!(
            short.incomplete().unwrap(),
            "agent a1 (segment 1 of 3) sent 400 events, of which 399 reached the trace"
        );
        let lost = AgentRecord {
            lost_at_s: Some(2.5),
            ..short.clone()
        };
        assert!(lost.incomplete().unwrap().contains("was lost at 2.5 s"));
        let taken = AgentRecord {
            taken_over: Some(super::TakenOver {
                by: "a2".into(),
                from_s: 3.0,
                requests: 50,
            }),
            ..lost.clone()
        };
        assert!(
            taken
                .incomplete()
                .unwrap()
                .ends_with("missing until 3.0 s, when a2 took its segment over"),
            "{:?}",
            taken.incomplete()
        );
        // Not heard whole: said first, naming the coordinator, whatever
        // else is true of it.
        let broken = AgentRecord {
            broken: Some("entry 9 came where entry 8 belongs".into()),
            ..lost.clone()
        };
        assert_eq!(
            broken.incomplete().unwrap(),
            "agent a1 (segment 1 of 3) was not heard whole through the coordinator: entry 9 \
             came where entry 8 belongs"
        );
        let failed = AgentRecord {
            failed: Some("no start".into()),
            ..agent()
        };
        assert_eq!(
            failed.incomplete().unwrap(),
            "agent a1 (segment 1 of 3) failed: no start"
        );
    }
}
