//! Who sends an arm's load: this machine, or load agents on others
//! through the controller (`run --agents`). The one place the pipeline
//! tells them apart: how the load gets ready (agents are each given their
//! segment, and start together at an instant fixed on the coordinator's
//! clock), how it is sent and collected, and how the run lets them go.

use crate::distributed::controller::{AgentsWanted, Controller, Destination, Prepared};
use crate::error::Error;
use crate::events::Batch;
use crate::interrupt::Interrupt;
use crate::load::{self, Counters, LoadReport};
use crate::store::folder::RunFolder;
use crate::store::records::AgentRecord;
use std::path::Path;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Who sends the load.
pub(crate) enum Sender {
    /// This process.
    Local,
    /// Load agents, held by the controller.
    Agents(Box<Agents>),
}

/// Load agents on other machines send a run's load: the controller's hold
/// on them, and what they build each arm's plan from.
pub(crate) struct Agents {
    controller: Controller,
    /// The scenario's file name and text, as the agents parse it.
    scenario: (String, String),
    /// `run --duration` (µs), in place of the scenario's.
    duration_us: Option<u64>,
}

/// What a run tells its load agents, when it has them.
pub(crate) struct Hire<'a> {
    pub wanted: &'a AgentsWanted,
    pub run_id: &'a str,
    pub quiet: bool,
    /// The scenario's file, and the scenario read from it.
    pub file: &'a Path,
    pub scenario: &'a crate::scenario::Scenario,
    /// `run --duration`, in place of the scenario's.
    pub duration: Option<std::time::Duration>,
}

/// An arm's load, ready to be sent.
pub(crate) enum Ready {
    /// Here, from whenever it starts.
    Now,
    /// By the agents, from the instant they were given.
    At(Box<Prepared>),
}

impl Ready {
    /// Waits for the agreed start, if there is one.
    pub(crate) async fn wait(&self) {
        if let Ready::At(p) = self {
            tokio::time::sleep_until(p.start).await;
        }
    }

    /// When the load starts: the agreed instant, else now.
    pub(crate) fn start(&self) -> Instant {
        match self {
            Ready::Now => Instant::now(),
            Ready::At(p) => p.start,
        }
    }
}

/// What sending an arm's load gave.
pub(crate) struct Sent {
    pub report: LoadReport,
    /// Each agent's share (none on one machine).
    pub agents: Vec<AgentRecord>,
    /// The most an agent's times may be off before nothing is judged (µs).
    pub max_clock_uncertainty_us: Option<i64>,
}

impl Sent {
    /// A load an error stopped from `start`: what reached the disk is
    /// kept, on the clock mapping of the arm's provisional record.
    pub(crate) fn broken(start: Instant, epoch_offset_us: i64, epoch_uncertainty_us: i64) -> Self {
        Sent {
            report: LoadReport {
                scheduled: 0,
                not_sent: Default::default(),
                send_window: start.elapsed(),
                interrupted: true,
                epoch_offset_us,
                epoch_uncertainty_us,
            },
            agents: Vec::new(),
            max_clock_uncertainty_us: None,
        }
    }
}

/// Where the events go and what follows them.
pub(crate) struct Outlet<'f> {
    pub folder: &'f RunFolder,
    pub arm: &'f str,
    pub events: mpsc::Sender<Batch>,
    pub counters: Arc<Counters>,
}

impl Sender {
    /// The load agents `hire` wants, gathered at the coordinator; this
    /// machine when it wants none.
    pub(crate) async fn hire(hire: Option<Hire<'_>>, interrupt: &Interrupt) -> Result<Self, Error> {
        let Some(hire) = hire else {
            return Ok(Sender::Local);
        };
        let controller =
            Controller::gather(hire.wanted, hire.run_id, interrupt, hire.quiet).await?;
        // The agents get the scenario without its passwords (they never
        // reach Redis), never written into their inboxes in clear.
        let text = std::fs::read_to_string(hire.file)
            .map_err(|e| Error::input(format!("{}: {e}", hire.file.display())))?;
        let text = crate::app::pipeline::scenario_copy::for_agents(&text, hire.scenario)
            .ok_or_else(|| {
                Error::input(format!(
                    "{}: a password in it is written in a way rlbench cannot hide from the \
                     agents (escapes?): write it plainly",
                    hire.file.display()
                ))
            })?;
        Ok(Sender::Agents(Box::new(Agents {
            controller,
            scenario: (hire.file.display().to_string(), text),
            duration_us: hire
                .duration
                .map(|d| d.as_micros().min(u64::MAX as u128) as u64),
        })))
    }

    /// Gets arm `arm`'s load ready against `targets`: with agents, each
    /// gets its segment and they agree on a start.
    pub(crate) async fn ready(
        &mut self,
        arm: &str,
        targets: &[hyper::Uri],
        interrupt: &Interrupt,
    ) -> Result<Ready, Error> {
        match self {
            Sender::Local => Ok(Ready::Now),
            Sender::Agents(a) => a
                .controller
                .prepare(
                    arm,
                    (&a.scenario.0, &a.scenario.1),
                    a.duration_us,
                    targets,
                    interrupt,
                )
                .await
                .map(|p| Ready::At(Box::new(p))),
        }
    }

    /// Sends `plan` from `start` (here), or collects what the agents send.
    pub(crate) async fn send(
        &mut self,
        ready: Ready,
        start: Instant,
        plan: &load::Plan,
        outlet: Outlet<'_>,
        interrupt: &Interrupt,
    ) -> Result<Sent, Error> {
        match (ready, self) {
            (Ready::At(prepared), Sender::Agents(a)) => {
                let collected = a
                    .controller
                    .collect(
                        *prepared,
                        plan,
                        Destination {
                            spool: outlet.folder.spool(outlet.arm),
                            events: outlet.events,
                            counters: outlet.counters,
                        },
                        interrupt,
                    )
                    .await?;
                Ok(Sent {
                    report: collected.report,
                    agents: collected.agents,
                    max_clock_uncertainty_us: Some(collected.max_clock_uncertainty_us),
                })
            }
            _ => Ok(Sent {
                report: load::run(
                    plan,
                    outlet.events,
                    outlet.counters,
                    interrupt.wait(),
                    start,
                )
                .await,
                agents: Vec::new(),
                max_clock_uncertainty_us: None,
            }),
        }
    }

    /// The run is over: the agents are let go.
    pub(crate) async fn bye(&mut self) {
        if let Sender::Agents(a) = self {
            a.controller.bye().await;
        }
    }
}
