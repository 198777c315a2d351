//! One arm made ready: agents that stopped beating let go, each other
//! agent handed its segment of the arm, all waited for (within a bound)
//! until ready, then the start fixed on the coordinator's clock and told.

use super::agent_state::{Heard, Streams};
use super::hold::{failed, Controller};
use crate::distributed::link::{self, ClockSource, DistributedError};
use crate::distributed::protocol::{self, FromAgent, ToAgent, Work};
use crate::distributed::streams::Entry;
use crate::distributed::time_line::{Anchor, Mapping};
use crate::error::Error;
use crate::interrupt::Interrupt;
use redis::AsyncCommands;
use std::time::Duration;
use tokio::time::Instant;

/// How long the agents may take to be ready for an arm.
const READY_WITHIN: Duration = Duration::from_secs(60);
/// The start is this far after the controller fixes it: time for the
/// message to reach every agent.
const LEAD: Duration = Duration::from_millis(500);

/// One arm made ready: the local instant every agent starts at.
pub(crate) struct Prepared {
    pub start: Instant,
    /// The controller's wall clock at `start` (µs), as predicted.
    pub phase_us: i64,
    /// The arm's streams, and which entries of each were read.
    pub(super) streams: Streams,
    /// What each agent said before the start.
    pub(super) heard: Vec<Heard>,
    /// The controller's anchors, local times from `start`.
    pub(super) anchors: Vec<Anchor>,
    pub(super) arm: String,
}

/// What an arm is, as each agent is handed it.
struct Arm<'a> {
    name: &'a str,
    scenario: (&'a str, &'a str),
    duration_us: Option<u64>,
    targets: &'a [hyper::Uri],
}

/// The start fixed: its local instant, the controller's wall clock then
/// (µs), the instant on the coordinator's clock, and the controller's
/// anchor, local time from the start.
struct Start {
    start: Instant,
    phase_us: i64,
    at_us: i64,
    anchor: Anchor,
}

impl Controller {
    /// Hands each agent its segment of the arm and waits until all are
    /// ready; then fixes the start on the coordinator's clock and tells them.
    pub(crate) async fn prepare(
        &mut self,
        arm: &str,
        scenario: (&str, &str),
        duration_us: Option<u64>,
        targets: &[hyper::Uri],
        interrupt: &Interrupt,
    ) -> Result<Prepared, Error> {
        self.let_go_of_stopped(arm).await?;
        let names = self
            .hand_out(&Arm {
                name: arm,
                scenario,
                duration_us,
                targets,
            })
            .await?;
        let readers = self.readers(arm, &names);
        let mut streams = Streams::new(names, readers);
        let heard = self.wait_ready(arm, &mut streams, interrupt).await?;
        let fixed = self.fix_start().await?;
        self.say_start(arm, &fixed).await?;
        Ok(Prepared {
            start: fixed.start,
            phase_us: fixed.phase_us,
            streams,
            heard,
            anchors: vec![fixed.anchor],
            arm: arm.to_string(),
        })
    }

    /// Agents that stopped beating since the last arm are let go first;
    /// an error when none is left.
    async fn let_go_of_stopped(&mut self, arm: &str) -> Result<(), Error> {
        let alive = self
            .alive()
            .await
            .map_err(failed(&self.url, "reading heartbeats"))?;
        let dead: Vec<usize> = (0..alive.len()).filter(|&i| !alive[i]).collect();
        for &i in &dead {
            tracing::warn!(
                "arm {arm}: agent {} stopped beating before the arm",
                self.agents[i].name
            );
        }
        self.drop_agents(&dead).await;
        if self.agents.is_empty() {
            return Err(DistributedError::Agents(format!(
                "no agent left for arm {arm}: every one was lost"
            ))
            .into());
        }
        Ok(())
    }

    /// Hands each agent its segment of the arm, its stream cleared first:
    /// the streams, in the agents' order.
    async fn hand_out(&mut self, arm: &Arm<'_>) -> Result<Vec<String>, Error> {
        let of = self.agents.len();
        let mut streams = Vec::new();
        for a in self.agents.clone() {
            let stream = protocol::stream(&self.run, arm.name, &a.name);
            let work = ToAgent::Work(Work {
                run: self.run.clone(),
                arm: arm.name.to_string(),
                scenario_file: arm.scenario.0.to_string(),
                scenario_text: arm.scenario.1.to_string(),
                duration_us: arm.duration_us,
                targets: arm.targets.iter().map(ToString::to_string).collect(),
                segment: a.segment,
                of,
                stream: stream.clone(),
                estimate_clock: self.estimate_clock,
                issued_us: link::time(&mut self.conn)
                    .await
                    .map_err(failed(&self.url, "reading its clock"))?,
                nonce: crate::distributed::seal::nonce()?,
                lease: a.lease_nonce.clone(),
            });
            let _: () = self
                .conn
                .del(&stream)
                .await
                .map_err(failed(&self.url, "clearing a stream"))?;
            let name = a.name.clone();
            self.tell(&name, &work)
                .await
                .map_err(failed(&self.url, "handing out work"))?;
            streams.push(stream);
        }
        Ok(streams)
    }

    /// Reads the streams until every agent said it is ready (within
    /// [`READY_WITHIN`]): what each said meanwhile. An agent that failed or
    /// stopped beating is an error, and so is an interrupt (the agents are
    /// told to stop).
    async fn wait_ready(
        &mut self,
        arm: &str,
        streams: &mut Streams,
        interrupt: &Interrupt,
    ) -> Result<Vec<Heard>, Error> {
        let of = self.agents.len();
        let mut ready = vec![false; of];
        let mut heard: Vec<Heard> = (0..of).map(|_| Heard::default()).collect();
        let deadline = Instant::now() + READY_WITHIN;
        while ready.iter().any(|r| !r) {
            if interrupt.fired() {
                self.stop(arm).await;
                return Err(Error::interrupted());
            }
            if Instant::now() >= deadline {
                let late: Vec<&str> = self
                    .agents
                    .iter()
                    .zip(&ready)
                    .filter(|(_, r)| !**r)
                    .map(|(a, _)| a.name.as_str())
                    .collect();
                return Err(DistributedError::Agents(format!(
                    "agent(s) {} not ready for arm {arm} within {READY_WITHIN:?}",
                    late.join(", ")
                ))
                .into());
            }
            let entries = streams
                .read(&mut self.conn)
                .await
                .map_err(failed(&self.url, "reading"))?;
            let mut skipped: Vec<Vec<String>> = vec![Vec::new(); of];
            for (i, id, entry) in entries {
                streams.ids[i] = id.clone();
                match entry {
                    Entry::Skipped => skipped[i].push(id),
                    Entry::Broken => {
                        return Err(DistributedError::Coordinator(format!(
                            "agent {}'s stream for arm {arm} was tampered with: {}",
                            self.agents[i].name,
                            streams.readers[i].broken().unwrap_or("its chain broke")
                        ))
                        .into())
                    }
                    Entry::Message(FromAgent::Ready { .. }) => ready[i] = true,
                    Entry::Message(FromAgent::Anchor(a)) => heard[i].anchors.push(a),
                    Entry::Message(FromAgent::Failed { message }) => {
                        return Err(DistributedError::AgentFailed {
                            agent: self.agents[i].name.clone(),
                            message,
                        }
                        .into())
                    }
                    _ => {}
                }
            }
            // What cannot be a link is removed: the streams stay small.
            for (i, ids) in skipped.iter().enumerate().filter(|(_, s)| !s.is_empty()) {
                let _: redis::RedisResult<u64> = self.conn.xdel(&streams.names[i], ids).await;
            }
            self.check_alive(&ready, arm).await?;
        }
        Ok(heard)
    }

    /// The start: [`LEAD`] from now on the coordinator's clock.
    async fn fix_start(&mut self) -> Result<Start, Error> {
        let origin = Instant::now();
        let mine = link::anchor(
            &mut self.conn,
            origin,
            ClockSource::Coordinator { wall_shift_us: 0 },
        )
        .await
        .map_err(failed(&self.url, "reading its clock"))?;
        let at_us = mine.coord_us + LEAD.as_micros() as i64;
        let (at_local, _) = Mapping::new(vec![mine])
            .expect("one anchor")
            .to_local(at_us);
        let start = origin + Duration::from_micros(at_local.max(0) as u64);
        let sample = crate::load::clock_watch::sample(origin);
        let phase_us = sample.wall_us + (at_local.max(0) - sample.trace_us);
        let shift = at_local.max(0);
        Ok(Start {
            start,
            phase_us,
            at_us,
            anchor: Anchor {
                local_us: mine.local_us - shift,
                ..mine
            },
        })
    }

    /// Tells every agent the start.
    async fn say_start(&mut self, arm: &str, fixed: &Start) -> Result<(), Error> {
        for name in self
            .agents
            .iter()
            .map(|a| a.name.clone())
            .collect::<Vec<_>>()
        {
            let go = ToAgent::Start {
                run: self.run.clone(),
                arm: arm.to_string(),
                at_us: fixed.at_us,
                phase_us: fixed.phase_us,
            };
            self.tell(&name, &go)
                .await
                .map_err(failed(&self.url, "starting the agents"))?;
        }
        Ok(())
    }
}
