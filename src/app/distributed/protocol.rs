//! What the controller and its agents say to each other through the
//! coordinator (any Redis both reach), and where: agents register in a
//! sorted set scored by their last heartbeat (the coordinator's clock, ms)
//! with their details in a hash; each agent reads its inbox (a list,
//! `BLPOP`); each agent writes what it has for one arm — readiness, clock
//! anchors, event chunks (the binary trace, deflated), its end — to a
//! stream of that arm that the controller reads and trims as it goes.

use super::clock::Anchor;
use serde::{Deserialize, Serialize};

/// Every key rlbench keeps in a coordinator starts with this.
const ROOT: &str = "rlbench:coord";
/// An agent whose heartbeat is older than this is gone (ms).
pub(crate) const HEARTBEAT_TIMEOUT_MS: i64 = 3_000;
/// The stream entries an agent lets wait unread before it waits itself:
/// what the coordinator holds for a slow controller stays bounded.
pub(crate) const MAX_UNREAD: u64 = 256;

/// The sorted set of agents by last heartbeat.
pub(crate) fn agents() -> String {
    format!("{ROOT}:agents")
}

/// An agent's details (a hash).
pub(crate) fn agent(name: &str) -> String {
    format!("{ROOT}:agent:{name}")
}

/// An agent's inbox (a list).
pub(crate) fn inbox(name: &str) -> String {
    format!("{ROOT}:inbox:{name}")
}

/// Where an agent writes for one arm of one run.
pub(crate) fn stream(run: &str, arm: &str, name: &str) -> String {
    format!("{ROOT}:run:{run}:{arm}:{name}")
}

/// An agent as it registers: its name, its segment when a Kubernetes
/// Indexed Job placed it, and the rlbench that runs it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Registration {
    pub name: String,
    /// `(index, of)` from `JOB_COMPLETION_INDEX` and the agents' count.
    pub index: Option<(usize, usize)>,
    pub host: String,
    pub pid: u32,
    pub version: String,
    /// Busy with a run's arm, or waiting for work.
    pub busy: bool,
}

/// One arm's work for one agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Work {
    pub run: String,
    pub arm: String,
    /// The scenario as the controller read it (its name for errors).
    pub scenario_file: String,
    pub scenario_text: String,
    /// `run --duration`, in place of the scenario's (µs).
    pub duration_us: Option<u64>,
    /// The URLs the load goes to (the replicas the controller started);
    /// empty: the scenario's own.
    pub targets: Vec<String>,
    pub segment: usize,
    pub of: usize,
    pub stream: String,
    /// Off only in tests: the agent trusts its own wall clock to be the
    /// coordinator's, to show what that costs.
    pub estimate_clock: bool,
}

/// What the controller tells an agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum ToAgent {
    Work(Work),
    /// The load starts when the coordinator's clock reads `at_us`; the
    /// schedule is phased by the controller's wall clock, `phase_us` at
    /// that instant, so every segment walks the same schedule.
    Start {
        run: String,
        arm: String,
        at_us: i64,
        phase_us: i64,
    },
    /// Stop the load now (Ctrl-C on the controller, or a lost peer).
    Stop {
        run: String,
        arm: String,
    },
    /// The run is over: an agent started with `--once` exits.
    Bye {
        run: String,
    },
}

/// How an agent's load ended, as it tells the controller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Ended {
    /// Requests of its segment it reached in the schedule.
    pub scheduled: u64,
    /// From the start to its last send (µs).
    pub paced_us: u64,
    pub interrupted: bool,
    pub events: u64,
}

/// What an agent writes to its stream, as `kind` and `body` fields (an
/// event chunk's body is the deflated trace bytes; the others JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum FromAgent {
    /// The plan is built and the first anchors taken: ready to start.
    Ready {
        lanes: usize,
    },
    Anchor(Anchor),
    /// The load starts: its trace's time 0 is this local time (µs from
    /// the agent's origin, the time its anchors count from).
    Started {
        start_local_us: i64,
        /// Its origin on its host's monotonic clock (µs): meaningful only
        /// to a controller on the same host, which checks its placements
        /// against it in tests (`RLBENCH_TEST_CLOCK_TRUTH`).
        #[serde(default)]
        origin_mono_us: i64,
    },
    Ended(Ended),
    /// The agent could not do the work (one line, as it would print it).
    Failed {
        message: String,
    },
}

/// The stream field naming an entry's kind, and the kind of event chunks.
pub(crate) const KIND: &str = "kind";
pub(crate) const BODY: &str = "body";
pub(crate) const CHUNK: &str = "chunk";
/// A chunk's counts, for the controller's progress line: `done admitted
/// rejected failed`.
pub(crate) const COUNTS: &str = "counts";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_back_as_written() {
        let all = [
            ToAgent::Work(Work {
                run: "r".into(),
                arm: "a".into(),
                scenario_file: "s.toml".into(),
                scenario_text: "name = 1".into(),
                duration_us: Some(5),
                targets: vec!["http://127.0.0.1:1/api/transfers".into()],
                segment: 1,
                of: 3,
                stream: stream("r", "a", "n"),
                estimate_clock: true,
            }),
            ToAgent::Start {
                run: "r".into(),
                arm: "a".into(),
                at_us: 1,
                phase_us: 2,
            },
            ToAgent::Bye { run: "r".into() },
        ];
        for m in all {
            let text = serde_json::to_string(&m).unwrap();
            assert_eq!(serde_json::from_str::<ToAgent>(&text).unwrap(), m);
        }
        let ended = FromAgent::Ended(Ended {
            scheduled: 3,
            paced_us: 5,
            interrupted: false,
            events: 3,
        });
        let text = serde_json::to_string(&ended).unwrap();
        assert!(text.starts_with(r#"{"kind":"ended""#), "{text}");
        assert_eq!(serde_json::from_str::<FromAgent>(&text).unwrap(), ended);
    }
}
