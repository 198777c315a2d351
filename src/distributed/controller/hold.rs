//! The controller's hold on its agents for one run: gathering (within a
//! bound) the agents it was asked for, telling them what to do in signed
//! messages, letting lost ones go and splitting the next arms among the
//! others, and saying goodbye at the run's end.

use super::lease::{beat, keep_lease, lease_all};
use crate::distributed::choose::{choose, live_agents, Chosen};
use crate::distributed::link::{self, DistributedError};
use crate::distributed::protocol::{self, Registration, Sealed, ToAgent};
use crate::distributed::seal::{Header, Seen, Token};
use crate::distributed::streams::Check;
use crate::error::Error;
use crate::interrupt::Interrupt;
use redis::AsyncCommands;
use std::time::Duration;
use tokio::time::Instant;

/// What `run` was asked of agents, checked.
#[derive(Clone, Debug)]
pub(crate) struct AgentsWanted {
    pub agents: usize,
    pub coordinator: String,
    /// The secret shared with the agents: every message is signed with it.
    pub token: Token,
    pub wait: Duration,
    /// Off only in tests: agents trust their own wall clocks.
    pub estimate_clock: bool,
    /// Past this (µs) an agent's times prove nothing: the gate fails.
    pub max_clock_uncertainty_us: i64,
}

/// The controller's hold on its agents for one run.
pub(crate) struct Controller {
    pub(super) url: String,
    pub(super) conn: link::Conn,
    pub(super) agents: Vec<Chosen>,
    pub(super) estimate_clock: bool,
    pub(super) run: String,
    pub(super) token: Token,
    /// The number of the last message it signed.
    pub(super) seq: u64,
    /// Beats for the run and keeps its leases; stopped when dropped.
    pub(super) beater: tokio::task::JoinHandle<()>,
    pub(super) max_clock_uncertainty_us: i64,
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.beater.abort();
    }
}

impl Controller {
    /// Waits for `wanted.agents` agents at the coordinator: those an
    /// Indexed Job placed take the segment of their index; others are taken
    /// in name order. An error names who is missing after the wait.
    pub(crate) async fn gather(
        wanted: &AgentsWanted,
        run: &str,
        interrupt: &Interrupt,
        quiet: bool,
    ) -> Result<Controller, Error> {
        let url = &wanted.coordinator;
        let mut conn = link::connect(url).await?;
        if !quiet {
            tracing::info!(
                "waiting up to {:?} for {} agent(s) at {} (start each with: rlbench agent --coordinator URL)",
                wanted.wait,
                wanted.agents,
                link::redacted(url)
            );
        }
        let deadline = Instant::now() + wanted.wait;
        let mut warned = std::collections::BTreeSet::new();
        loop {
            let mut refused = Vec::new();
            let live = live_agents(&mut conn, url, &wanted.token, &mut refused).await?;
            for name in refused {
                if warned.insert(name.clone()) {
                    tracing::warn!(
                        "ignoring agent {name:?} at {}: its registration is not signed with this \
                         run's token, or is stale",
                        link::redacted(url)
                    );
                }
            }
            let (free, busy) = free_or_busy(&mut conn, url, run, live).await?;
            let chosen = match choose(&free, wanted.agents) {
                Ok(agents) => lease_all(&mut conn, url, run, &agents)
                    .await?
                    .then_some(agents),
                Err(missing) => {
                    if Instant::now() >= deadline {
                        let busy = if busy.is_empty() {
                            String::new()
                        } else {
                            format!("; busy with another run: {}", busy.join(", "))
                        };
                        return Err(DistributedError::Agents(format!(
                            "{} agent(s) wanted at {} within {:?}: {missing}{busy}",
                            wanted.agents,
                            link::redacted(url),
                            wanted.wait
                        ))
                        .into());
                    }
                    None
                }
            };
            match chosen {
                Some(agents) => {
                    if !quiet {
                        say_chosen(&agents, wanted.agents);
                    }
                    let beater = tokio::spawn(beat(
                        link::connect(url).await?,
                        wanted.token.clone(),
                        run.to_string(),
                        agents.iter().map(|a| a.name.clone()).collect(),
                    ));
                    return Ok(Controller {
                        url: url.clone(),
                        conn,
                        agents,
                        estimate_clock: wanted.estimate_clock,
                        run: run.to_string(),
                        token: wanted.token.clone(),
                        seq: 0,
                        beater,
                        max_clock_uncertainty_us: wanted.max_clock_uncertainty_us,
                    });
                }
                None if Instant::now() >= deadline => {
                    return Err(DistributedError::Agents(format!(
                        "{} agent(s) wanted at {} within {:?}: another run took some of them \
                         first",
                        wanted.agents,
                        link::redacted(url),
                        wanted.wait
                    ))
                    .into())
                }
                None => {}
            }
            tokio::select! {
                biased;
                () = interrupt.wait() => return Err(Error::interrupted()),
                () = tokio::time::sleep(Duration::from_millis(250)) => {}
            }
        }
    }

    /// Lets the agents at `gone` go (their leases too) and splits the
    /// schedule among the others, in their order.
    pub(super) async fn drop_agents(&mut self, gone: &[usize]) {
        if gone.is_empty() {
            return;
        }
        for &i in gone {
            let name = self.agents[i].name.clone();
            let _ = keep_lease(&mut self.conn, &name, &self.run, 0).await;
        }
        let mut i = 0;
        self.agents.retain(|_| {
            i += 1;
            !gone.contains(&(i - 1))
        });
        for (segment, a) in self.agents.iter_mut().enumerate() {
            a.segment = segment;
        }
        self.beater.abort();
        self.beater = tokio::spawn(beat(
            self.conn.clone(),
            self.token.clone(),
            self.run.clone(),
            self.agents.iter().map(|a| a.name.clone()).collect(),
        ));
        if !self.agents.is_empty() {
            tracing::warn!(
                "the next arms are split among {} agent(s): {}",
                self.agents.len(),
                self.agents
                    .iter()
                    .map(|a| a.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }

    /// Tells every agent to stop the arm's load.
    pub(super) async fn stop(&mut self, arm: &str) {
        for name in self
            .agents
            .iter()
            .map(|a| a.name.clone())
            .collect::<Vec<_>>()
        {
            let stop = ToAgent::Stop {
                run: self.run.clone(),
                arm: arm.to_string(),
            };
            let _ = self.tell(&name, &stop).await;
        }
    }

    /// The run is over: agents started with `--once` exit; the leases are
    /// let go and the beat stops.
    pub(crate) async fn bye(&mut self) {
        self.beater.abort();
        for name in self
            .agents
            .iter()
            .map(|a| a.name.clone())
            .collect::<Vec<_>>()
        {
            let bye = ToAgent::Bye {
                run: self.run.clone(),
            };
            let _ = self.tell(&name, &bye).await;
            let _ = keep_lease(&mut self.conn, &name, &self.run, 0).await;
        }
        let _: redis::RedisResult<()> = self.conn.del(protocol::beat(&self.run)).await;
    }

    /// Puts a signed message in an agent's inbox: work in its inbox, the
    /// run's starts, stops and end in its inbox for the run. Both expire.
    pub(super) async fn tell(&mut self, agent: &str, message: &ToAgent) -> redis::RedisResult<()> {
        let now = link::time(&mut self.conn).await?;
        self.seq += 1;
        let kind = match message {
            ToAgent::Work(_) => "work",
            ToAgent::Start { .. } => "start",
            ToAgent::Stop { .. } => "stop",
            ToAgent::Take { .. } => "take",
            ToAgent::Bye { .. } => "bye",
        };
        let sealed = Sealed::new(
            &self.token,
            &Header {
                run: &self.run,
                from: protocol::CONTROLLER,
                to: agent,
                seq: self.seq,
                at_us: now,
                kind,
            },
            serde_json::to_string(message).unwrap_or_default(),
        );
        let inbox = match message {
            ToAgent::Work(_) => protocol::inbox(agent),
            _ => protocol::run_inbox(agent, &self.run),
        };
        redis::pipe()
            .rpush(&inbox, serde_json::to_string(&sealed).unwrap_or_default())
            .expire(&inbox, protocol::AGENT_TTL_S)
            .query_async(&mut self.conn)
            .await
    }

    /// The checks of one arm's streams.
    pub(super) fn check(&self) -> Check {
        Check {
            token: self.token.clone(),
            run: self.run.clone(),
            senders: self.agents.iter().map(|a| a.name.clone()).collect(),
            seen: vec![Seen::default(); self.agents.len()],
        }
    }
}

/// The live agents no other run holds (`free`), and the others named with
/// the run that holds them (`busy`).
async fn free_or_busy(
    conn: &mut link::Conn,
    url: &str,
    run: &str,
    live: Vec<Registration>,
) -> Result<(Vec<Registration>, Vec<String>), Error> {
    // Agents another run holds are busy.
    let mut free = Vec::new();
    let mut busy = Vec::new();
    for r in live {
        let held: Option<String> = conn
            .get(protocol::lease(&r.name))
            .await
            .map_err(|e| link::failed(url, "reading leases", e))?;
        match held {
            Some(other) if other != run => busy.push(format!("{} (run {other})", r.name)),
            _ => free.push(r),
        }
    }
    Ok((free, busy))
}

/// Says which agents were chosen, each with its segment.
fn say_chosen(agents: &[Chosen], of: usize) {
    tracing::info!(
        "agents: {}",
        agents
            .iter()
            .map(|a| format!("{} (segment {} of {})", a.name, a.segment, of))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// What to do with the coordinator's error while the controller was doing
/// `what` at `url`: the error saying so.
pub(super) fn failed(url: &str, what: &'static str) -> impl Fn(redis::RedisError) -> Error {
    let url = url.to_string();
    move |e: redis::RedisError| Error::from(link::failed(&url, what, e))
}
