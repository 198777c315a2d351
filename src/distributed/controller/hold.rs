//! The controller's hold on its agents for one run: gathering (within a
//! bound) the agents it was asked for, telling them what to do in signed
//! messages, letting lost ones go and splitting the next arms among the
//! others, and saying goodbye at the run's end.

use super::lease::{beat, keep_lease, lease_all};
use crate::distributed::chain::{Place, Reader};
use crate::distributed::choose::{choose, live_agents, Chosen, Looked, MOST_LISTED};
use crate::distributed::link::{self, DistributedError};
use crate::distributed::protocol::{self, Registration, Sealed, ToAgent};
use crate::distributed::seal::{Header, Token};
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
    /// Each agent's last stream entry taken in the run: one sequence per
    /// run per agent, across its arms.
    pub(super) last_seq: std::collections::HashMap<String, u64>,
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
        // How many were said to be ignored: said again only when it at
        // least doubles, so a flood of forged agents costs a few lines.
        let mut said = 0usize;
        loop {
            let looked = live_agents(&mut conn, url, &wanted.token).await?;
            let refused =
                looked.refused.len() + looked.listed.saturating_sub(MOST_LISTED as u64) as usize;
            if refused > 0 && refused >= said.saturating_mul(2).max(1) {
                said = refused;
                tracing::warn!("{}", ignored(&looked, refused, url));
            }
            let live = looked.live;
            let (free, busy) = free_or_busy(&mut conn, url, run, &wanted.token, live).await?;
            let chosen = match choose(&free, wanted.agents) {
                Ok(mut agents) => lease_all(&mut conn, url, run, &wanted.token, &mut agents)
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
                        leases(&agents),
                    ));
                    return Ok(Controller {
                        url: url.clone(),
                        conn,
                        agents,
                        estimate_clock: wanted.estimate_clock,
                        run: run.to_string(),
                        token: wanted.token.clone(),
                        seq: 0,
                        last_seq: Default::default(),
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
            let (name, lease) = (self.agents[i].name.clone(), self.agents[i].lease.clone());
            let _ = keep_lease(&mut self.conn, &name, &lease, 0).await;
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
            leases(&self.agents),
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
        for (name, lease) in leases(&self.agents) {
            let bye = ToAgent::Bye {
                run: self.run.clone(),
            };
            let _ = self.tell(&name, &bye).await;
            let _ = keep_lease(&mut self.conn, &name, &lease, 0).await;
        }
        let _: redis::RedisResult<()> = self.conn.del(protocol::beat(&self.run)).await;
    }

    /// Puts a signed message in an agent's inbox: work in its inbox, the
    /// run's starts, stops and end in its inbox for the run. Both expire.
    pub(super) async fn tell(&mut self, agent: &str, message: &ToAgent) -> redis::RedisResult<()> {
        let now = link::time(&mut self.conn).await?;
        self.seq += 1;
        let inbox = match message {
            ToAgent::Work(_) => protocol::inbox(agent),
            _ => protocol::run_inbox(agent, &self.run),
        };
        let sealed = Sealed::new(
            &self.token,
            &Header::of_controller(
                &self.run,
                message.arm(),
                agent,
                &inbox,
                self.seq,
                now,
                message.kind(),
            ),
            serde_json::to_string(message).unwrap_or_default(),
        );
        redis::pipe()
            .rpush(&inbox, serde_json::to_string(&sealed).unwrap_or_default())
            .expire(&inbox, protocol::AGENT_TTL_S)
            .query_async(&mut self.conn)
            .await
    }

    /// A reader of each agent's chain in its stream of `arm` (`streams`,
    /// in the agents' order), numbered on from its last entry of the run.
    pub(super) fn readers(&self, arm: &str, streams: &[String]) -> Vec<Reader> {
        self.agents
            .iter()
            .zip(streams)
            .map(|(a, stream)| {
                Reader::new(
                    self.token.clone(),
                    Place {
                        run: self.run.clone(),
                        arm: arm.to_string(),
                        agent: a.name.clone(),
                        stream: stream.clone(),
                    },
                    self.last_seq.get(&a.name).copied().unwrap_or(0),
                )
            })
            .collect()
    }

    /// Keeps where each agent's chain got to in this arm, for the next.
    pub(super) fn chains_read(&mut self, readers: &[Reader]) {
        for (a, r) in self.agents.iter().zip(readers) {
            self.last_seq.insert(a.name.clone(), r.last_seq());
        }
    }
}

/// The line saying which listed agents are ignored, and why.
fn ignored(looked: &Looked, refused: usize, url: &str) -> String {
    let named: Vec<String> = looked
        .refused
        .iter()
        .take(3)
        .map(|n| format!("{n:?}"))
        .collect();
    let more = refused.saturating_sub(named.len());
    format!(
        "ignoring {refused} agent(s) at {}: their registration is not signed with this run's \
         token, is stale, or was not looked at (only the {MOST_LISTED} latest of {} are): {}{}",
        link::redacted(url),
        looked.listed,
        named.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )
}

/// Each agent's name and its lease, as the beat keeps them.
fn leases(agents: &[Chosen]) -> Vec<(String, String)> {
    agents
        .iter()
        .map(|a| (a.name.clone(), a.lease.clone()))
        .collect()
}

/// The live agents no run holds (`free`), and the others named with the
/// run that holds them (`busy`; a lease nobody with the token signed
/// holds one too, until it expires).
async fn free_or_busy(
    conn: &mut link::Conn,
    url: &str,
    run: &str,
    token: &Token,
    live: Vec<Registration>,
) -> Result<(Vec<Registration>, Vec<String>), Error> {
    let mut free = Vec::new();
    let mut busy = Vec::new();
    for r in live {
        let held: Option<String> = conn
            .get(protocol::lease(&r.name))
            .await
            .map_err(|e| link::failed(url, "reading leases", e))?;
        match held.map(|h| protocol::Lease::read(&h, token, &r.name)) {
            None => free.push(r),
            Some(Some(l)) if l.run == run => free.push(r),
            Some(Some(l)) => busy.push(format!("{} (run {})", r.name, l.run)),
            Some(None) => busy.push(format!("{} (a lease not signed with the token)", r.name)),
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
