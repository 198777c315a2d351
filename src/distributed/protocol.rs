//! What the controller and its agents say to each other through the
//! coordinator (any Redis both reach), and where: agents register in a
//! sorted set scored by their last heartbeat (the coordinator's clock, ms)
//! with their signed details in a hash, and claim their name; a controller
//! leases each agent it takes for its run; work comes to an agent's inbox
//! (a list, `BLPOP`), the run's starts and stops to its inbox for that run;
//! each agent writes what it has for one arm — readiness, clock anchors,
//! event chunks (the binary trace, deflated), its end — to a stream of
//! that arm that the controller reads and trims as it goes; the controller
//! beats under its run's key, and an agent whose controller stops beating
//! stops its load. Every message is signed (`seal`); every key expires.

use super::seal::{Header, Token};
use super::time_line::Anchor;
use serde::{Deserialize, Serialize};

/// Every key rlbench keeps in a coordinator starts with this.
const ROOT: &str = "rlbench:coord";
/// An agent whose heartbeat is older than this is gone (ms).
pub(crate) const HEARTBEAT_TIMEOUT_MS: i64 = 3_000;
/// A controller's beat counts while it is at most this old (µs, on the
/// coordinator's clock)...
pub(crate) const BEAT_FRESH_US: i64 = 1_000_000;
/// ...and an agent stops its load once it has not seen a fresh one for
/// this long (a coordinator restarting loses a beat or two): within 2 s
/// of the controller's last beat, all told.
pub(crate) const DEAD_MAN_GRACE_MS: u64 = 1_000;
/// How often the controller beats.
pub(crate) const BEAT_EVERY_MS: u64 = 400;
/// Work older than this on the coordinator's clock is not done (µs): a
/// replay of an earlier run's.
pub(crate) const WORK_FRESH_US: i64 = 30_000_000;
/// How long keys live unless refreshed (s): an agent's details, its name's
/// claim and inboxes; a lease; the controller's beat.
pub(crate) const AGENT_TTL_S: i64 = 60;
pub(crate) const LEASE_TTL_MS: u64 = 60_000;
pub(crate) const BEAT_TTL_MS: u64 = 10_000;
pub(crate) const CLAIM_TTL_MS: u64 = 10_000;
/// How long a stream of an arm lives past its last entry (s).
pub(crate) const STREAM_SLACK_S: i64 = 600;
/// The most one event chunk may inflate to (a chunk is sent at 256 KiB).
pub(crate) const MAX_CHUNK_BYTES: u64 = 16 * 1024 * 1024;
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

/// An agent's inbox for work (a list).
pub(crate) fn inbox(name: &str) -> String {
    format!("{ROOT}:inbox:{name}")
}

/// An agent's inbox for one run's starts, stops and end (a list).
pub(crate) fn run_inbox(name: &str, run: &str) -> String {
    format!("{ROOT}:inbox:{name}:run:{run}")
}

/// Which process holds an agent's name (its nonce, expiring).
pub(crate) fn claim(name: &str) -> String {
    format!("{ROOT}:claim:{name}")
}

/// Which run holds an agent (a sealed [`Lease`], expiring).
pub(crate) fn lease(name: &str) -> String {
    format!("{ROOT}:lease:{name}")
}

/// The works an agent has served under one lease (a set of their nonces,
/// expiring after the lease): a work replayed is spent, even to another
/// process of the agent's name.
pub(crate) fn served(name: &str, lease_nonce: &str) -> String {
    format!("{ROOT}:served:{name}:{lease_nonce}")
}

/// A run's hold on an agent, as its controller signed it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Lease {
    pub run: String,
    /// This lease's own random mark: the works handed out under it name it.
    pub nonce: String,
}

impl Lease {
    /// The lease an agent's lease key holds (`text`), when `token` signed
    /// it for `agent`; none for anything else.
    pub(crate) fn read(text: &str, token: &Token, agent: &str) -> Option<Lease> {
        let sealed: Sealed = serde_json::from_str(text).ok()?;
        if !sealed.verified(token, &lease(agent))
            || sealed.from != CONTROLLER
            || sealed.to != agent
            || sealed.kind != "lease"
        {
            return None;
        }
        let l: Lease = serde_json::from_str(&sealed.body).ok()?;
        (l.run == sealed.run).then_some(l)
    }
}

/// A run's controller's last beat (a sealed [`Beat`], expiring).
pub(crate) fn beat(run: &str) -> String {
    format!("{ROOT}:beat:{run}")
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
    /// The protocol it speaks ([`super::seal::VERSION`]).
    #[serde(default)]
    pub protocol: u32,
    /// This process's own random mark: two agents of one name differ.
    #[serde(default)]
    pub nonce: String,
    /// The coordinator's clock when it registered (µs): a registration
    /// is signed afresh at each beat, so an old one cannot be replayed.
    #[serde(default)]
    pub beat_us: i64,
    /// Busy with a run's arm, or waiting for work.
    pub busy: bool,
}

/// A controller's beat: its run is alive at `at_us` on the coordinator's
/// clock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Beat {
    pub at_us: i64,
}

/// A message to an agent as it travels: the body (a [`ToAgent`] as JSON,
/// or a [`Registration`], a [`Beat`]) and its signature.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sealed {
    pub v: u32,
    pub run: String,
    #[serde(default)]
    pub arm: String,
    pub from: String,
    pub to: String,
    /// The key it was written at: read from another, it is refused.
    #[serde(default)]
    pub place: String,
    pub seq: u64,
    pub at_us: i64,
    pub kind: String,
    pub body: String,
    pub mac: String,
}

impl Sealed {
    /// `body` under header `h`, signed by `token`.
    pub(crate) fn new(token: &Token, h: &Header<'_>, body: String) -> Sealed {
        Sealed {
            v: super::seal::VERSION,
            mac: token.sign(h, body.as_bytes()),
            run: h.run.to_string(),
            arm: h.arm.to_string(),
            from: h.from.to_string(),
            to: h.to.to_string(),
            place: h.place.to_string(),
            seq: h.seq,
            at_us: h.at_us,
            kind: h.kind.to_string(),
            body,
        }
    }

    /// Whether `token` signed it (and in this protocol's version) for the
    /// key `place` it was read from.
    pub(crate) fn verified(&self, token: &Token, place: &str) -> bool {
        self.v == super::seal::VERSION
            && self.place == place
            && token.verify(
                &Header {
                    run: &self.run,
                    arm: &self.arm,
                    from: &self.from,
                    to: &self.to,
                    place: &self.place,
                    seq: self.seq,
                    at_us: self.at_us,
                    kind: &self.kind,
                    prev: "",
                },
                self.body.as_bytes(),
                &self.mac,
            )
    }
}

pub(crate) use super::seal::CONTROLLER;

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
    /// The coordinator's clock when the controller handed it out (µs): an
    /// agent does no work older than [`WORK_FRESH_US`], nor work handed out
    /// before it registered (an earlier agent's of its name).
    #[serde(default)]
    pub issued_us: i64,
    /// This work's own random mark: an agent does each once.
    #[serde(default)]
    pub nonce: String,
    /// The mark of the lease it was handed out under.
    #[serde(default)]
    pub lease: String,
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
    /// Also send the requests of `segment` (of the arm's split) due from
    /// `from_us` (trace time) on: a lost agent's, taken over.
    Take {
        run: String,
        arm: String,
        segment: usize,
        from_us: u64,
    },
    /// The run is over: an agent started with `--once` exits.
    Bye {
        run: String,
    },
}

impl ToAgent {
    /// Its kind, as its signature names it.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            ToAgent::Work(_) => "work",
            ToAgent::Start { .. } => "start",
            ToAgent::Stop { .. } => "stop",
            ToAgent::Take { .. } => "take",
            ToAgent::Bye { .. } => "bye",
        }
    }

    /// The arm it is about ("" for the run's end).
    pub(crate) fn arm(&self) -> &str {
        match self {
            ToAgent::Work(w) => &w.arm,
            ToAgent::Start { arm, .. } | ToAgent::Stop { arm, .. } | ToAgent::Take { arm, .. } => {
                arm
            }
            ToAgent::Bye { .. } => "",
        }
    }

    /// The run it is about.
    pub(crate) fn run(&self) -> &str {
        match self {
            ToAgent::Work(w) => &w.run,
            ToAgent::Start { run, .. }
            | ToAgent::Stop { run, .. }
            | ToAgent::Take { run, .. }
            | ToAgent::Bye { run } => run,
        }
    }
}

/// How an agent's load ended, as it tells the controller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Ended {
    /// Requests of its segment in the schedule, sent or not.
    pub scheduled: u64,
    /// Of those, the ones never sent, by why.
    #[serde(default)]
    pub not_sent: crate::store::records::NotSent,
    /// From the start to its last send (µs).
    pub paced_us: u64,
    pub interrupted: bool,
    pub events: u64,
    /// The entries the agent wrote for this arm before this one, and the
    /// last one's signature: the chain the controller must have read
    /// (`chain`).
    #[serde(default)]
    pub entries: u64,
    #[serde(default)]
    pub digest: String,
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
    /// It sends `segment`'s requests due from `from_us` on, as asked
    /// ([`ToAgent::Take`]); its [`Ended`] counts them in.
    Took {
        segment: usize,
        from_us: u64,
    },
    Ended(Ended),
    /// The agent could not do the work (one line, as it would print it).
    Failed {
        message: String,
    },
}

impl FromAgent {
    /// Its kind, as its stream entry names it.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            FromAgent::Ready { .. } => "ready",
            FromAgent::Anchor(_) => "anchor",
            FromAgent::Started { .. } => "started",
            FromAgent::Took { .. } => "took",
            FromAgent::Ended(_) => "ended",
            FromAgent::Failed { .. } => "failed",
        }
    }
}

/// The stream field naming an entry's kind, and the kind of event chunks.
pub(crate) const KIND: &str = "kind";
pub(crate) const BODY: &str = "body";
pub(crate) const CHUNK: &str = "chunk";
/// A stream entry's chain fields: its number, the signature of the entry
/// before it, and its own (its run, arm and sender are the stream's).
pub(crate) const SEQ: &str = "seq";
pub(crate) const PREV: &str = "prev";
pub(crate) const MAC: &str = "mac";
/// An entry's signed body: for a chunk, its counts and its bytes.
pub(crate) fn signed_body(counts: Option<&[u8]>, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 32);
    if let Some(c) = counts {
        out.extend_from_slice(&(c.len() as u64).to_le_bytes());
        out.extend_from_slice(c);
    }
    out.extend_from_slice(body);
    out
}
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
                issued_us: 7,
                nonce: "n".into(),
                lease: "l".into(),
            }),
            ToAgent::Start {
                run: "r".into(),
                arm: "a".into(),
                at_us: 1,
                phase_us: 2,
            },
            ToAgent::Take {
                run: "r".into(),
                arm: "a".into(),
                segment: 2,
                from_us: 1_500_000,
            },
            ToAgent::Bye { run: "r".into() },
        ];
        for m in all {
            let text = serde_json::to_string(&m).unwrap();
            assert_eq!(serde_json::from_str::<ToAgent>(&text).unwrap(), m);
        }
        let ended = FromAgent::Ended(Ended {
            not_sent: Default::default(),
            scheduled: 3,
            paced_us: 5,
            interrupted: false,
            events: 3,
            entries: 4,
            digest: "ab".into(),
        });
        let text = serde_json::to_string(&ended).unwrap();
        assert!(text.starts_with(r#"{"kind":"ended""#), "{text}");
        assert_eq!(serde_json::from_str::<FromAgent>(&text).unwrap(), ended);
        let took = FromAgent::Took {
            segment: 2,
            from_us: 1_500_000,
        };
        let text = serde_json::to_string(&took).unwrap();
        assert!(text.starts_with(r#"{"kind":"took""#), "{text}");
        assert_eq!(serde_json::from_str::<FromAgent>(&text).unwrap(), took);
    }
}
