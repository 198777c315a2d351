//! An agent serving, run after run: registered under its claimed name, it
//! waits on its inboxes (beating between looks, a failing coordinator
//! waited for within a bound), takes the work it accepts and runs its arm,
//! says an arm's failure, and ends when interrupted, when idle too long,
//! or (with `--once`) when the run it served is over.

use super::args::AgentArgs;
use super::arm::{run_arm, ArmEnd};
use super::dead_man::DeadMan;
use super::inbox::{accept, next_message, Popped};
use super::registration::{beat, claim, host_name};
use crate::distributed::chain::{Place, Writer};
use crate::distributed::link::{self, DistributedError};
use crate::distributed::protocol::{self, FromAgent, Registration, Work};
use crate::distributed::seal::nonce;
use crate::distributed::seal::Sequence;
use crate::distributed::voice::{chain, say, Chain, Me};
use crate::error::Error;
use crate::interrupt::Interrupt;
use redis::AsyncCommands;
use std::collections::HashSet;
use std::time::Duration;
use tokio::time::Instant;

/// How long an idle agent waits for a coordinator that fails it before
/// it gives up (exit 3).
const COORDINATOR_WITHIN: Duration = Duration::from_secs(60);

/// An agent registered, and where its serving stands.
struct Agent<'a> {
    args: &'a AgentArgs,
    url: &'a str,
    conn: link::Conn,
    inbox_conn: link::Conn,
    me: Me,
    /// Each run's arm it took work for (again: a replay).
    served: HashSet<String>,
    dead_man: DeadMan,
    idle_since: Instant,
    /// Since when the coordinator has failed us, if it does now.
    failing: Option<Instant>,
    /// The run whose end it waits for (`--once`), and its inbox's count.
    last_run: Option<(String, Sequence)>,
    /// The run it wrote for last, and the number its next entry takes:
    /// one sequence per run, across its arms.
    next_seq: Option<(String, u64)>,
}

/// What the serving loop does after a look into the inboxes.
enum Next {
    /// Goes on with what it found (if anything).
    Go(Option<Popped>),
    /// Looks again.
    Again,
    /// Stops serving, so.
    End(Result<(), Error>),
}

/// Serves until interrupted (or, with `--once`, until a run it served
/// ends or its controller is gone).
pub(crate) async fn serve(args: &AgentArgs, interrupt: &Interrupt) -> Result<(), Error> {
    let mut agent = Agent::register(args).await?;
    let outcome = loop {
        let waiting = agent.last_run.as_ref().map(|(r, _)| r.as_str());
        let popped = tokio::select! {
            biased;
            () = interrupt.wait() => break Ok(()),
            m = next_message(&mut agent.inbox_conn, &agent.me, waiting, agent.url) => m,
        };
        let popped = match agent.beat_after(popped).await {
            Next::Go(p) => p,
            Next::Again => continue,
            Next::End(outcome) => break outcome,
        };
        if let Some(e) = agent.idle_too_long(popped.as_ref()) {
            break Err(e);
        }
        if let Some(outcome) = agent.on_message(popped, interrupt).await? {
            break outcome;
        }
    };
    agent.retire().await;
    outcome
}

impl Agent<'_> {
    /// Claims its name, clears its inbox and registers.
    async fn register(args: &AgentArgs) -> Result<Agent<'_>, Error> {
        let url = &args.coordinator;
        let mut conn = link::connect(url).await?;
        let inbox_conn = link::connect(url).await?;
        let mut me = Me {
            reg: Registration {
                name: args.name.clone(),
                index: args.index,
                host: host_name(),
                pid: std::process::id(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                protocol: crate::distributed::seal::VERSION,
                nonce: nonce()?,
                beat_us: 0,
                busy: false,
            },
            token: args.token.clone(),
            beats: 0,
            registered_us: 0,
        };
        if !claim(&mut conn, url, &me).await? {
            return Err(Error::environment(format!(
                "an agent named {:?} is already registered at {}: give this one another --name",
                me.reg.name,
                link::redacted(url)
            )));
        }
        // Work left for an earlier agent of this name is not this one's.
        let _: () = conn
            .del(protocol::inbox(&me.reg.name))
            .await
            .map_err(|e| link::failed(url, "clearing the inbox", e))?;
        beat(&mut conn, url, &mut me).await?;
        me.registered_us = me.reg.beat_us;
        tracing::info!(
            "agent {}: registered at {}, waiting for work",
            me.reg.name,
            link::redacted(url)
        );
        Ok(Agent {
            args,
            url,
            conn,
            inbox_conn,
            me,
            served: HashSet::new(),
            dead_man: DeadMan::new(),
            idle_since: Instant::now(),
            failing: None,
            last_run: None,
            next_seq: None,
        })
    }

    /// Beats after a look into the inboxes. A coordinator that restarts
    /// or refuses us for a while is waited for (another name's claim is
    /// not: that ends this agent).
    async fn beat_after(&mut self, popped: Result<Option<Popped>, DistributedError>) -> Next {
        match (popped, beat(&mut self.conn, self.url, &mut self.me).await) {
            (_, Err(e @ DistributedError::Agents(_))) => Next::End(Err(e.into())),
            (Ok(p), Ok(())) => {
                self.failing = None;
                Next::Go(p)
            }
            (Err(e), _) | (_, Err(e)) => {
                let since = *self.failing.get_or_insert_with(Instant::now);
                if since.elapsed() >= COORDINATOR_WITHIN {
                    return Next::End(Err(e.into()));
                }
                tracing::warn!("agent {}: {e}; trying again", self.me.reg.name);
                tokio::time::sleep(Duration::from_secs(1)).await;
                Next::Again
            }
        }
    }

    /// With `--idle-timeout`, nothing came and no run leased it within
    /// the limit: the error saying so.
    fn idle_too_long(&self, popped: Option<&Popped>) -> Option<Error> {
        if let (Some(limit), None) = (self.args.idle_timeout, popped) {
            if self.idle_since.elapsed() >= limit && self.last_run.is_none() {
                return Some(Error::environment(format!(
                    "agent {}: no run leased it within {} (--idle-timeout)",
                    self.me.reg.name,
                    humantime::format_duration(limit)
                )));
            }
        }
        None
    }

    /// Does what came (or, with nothing, watches the run it waits for):
    /// how serving ends, when it does.
    async fn on_message(
        &mut self,
        popped: Option<Popped>,
        interrupt: &Interrupt,
    ) -> Result<Option<Result<(), Error>>, Error> {
        match popped {
            Some(Popped::Work(work)) => self.on_work(*work, interrupt).await,
            Some(Popped::Bye(run)) if self.args.once => {
                tracing::info!("agent {}: run {run} is over", self.me.reg.name);
                Ok(Some(Ok(())))
            }
            Some(Popped::Bye(_)) => {
                self.last_run = None;
                self.idle_since = Instant::now();
                Ok(None)
            }
            None => {
                // Waiting for a run's end with `--once`: a controller that
                // stopped beating ended it too.
                if let (true, Some((run, _))) = (self.args.once, &self.last_run) {
                    if !self
                        .dead_man
                        .alive(&mut self.conn, &self.me.token, run)
                        .await
                    {
                        tracing::info!(
                            "agent {}: the controller of run {run} stopped beating: the run is over",
                            self.me.reg.name
                        );
                        return Ok(Some(Ok(())));
                    }
                }
                Ok(None)
            }
        }
    }

    /// Work accepted is run as one arm, busy meanwhile; work refused is
    /// said and left. How serving ends, when it does.
    async fn on_work(
        &mut self,
        work: Work,
        interrupt: &Interrupt,
    ) -> Result<Option<Result<(), Error>>, Error> {
        let fresh = self.served.insert(format!("{}\0{}", work.run, work.arm));
        if let Err(why) = accept(&mut self.conn, &self.me, &work, fresh, self.url).await? {
            tracing::warn!(
                "agent {}: refused work for run {}: {why}",
                self.me.reg.name,
                work.run
            );
            return Ok(None);
        }
        self.me.reg.busy = true;
        if let Err(e) = beat(&mut self.conn, self.url, &mut self.me).await {
            tracing::warn!("agent {}: {e}", self.me.reg.name);
        }
        let mut run_seq = match self.last_run.take() {
            Some((r, s)) if r == work.run => s,
            _ => Sequence::default(),
        };
        let first_seq = match &self.next_seq {
            Some((r, n)) if *r == work.run => *n,
            _ => 1,
        };
        let chain = chain(Writer::new(
            self.me.token.clone(),
            Place {
                run: work.run.clone(),
                arm: work.arm.clone(),
                agent: self.me.reg.name.clone(),
                stream: work.stream.clone(),
            },
            first_seq,
        ));
        let done = run_arm(
            &work,
            self.args,
            (&mut self.conn, &mut self.inbox_conn),
            &mut self.me,
            &chain,
            &mut run_seq,
            interrupt,
        )
        .await;
        self.me.reg.busy = false;
        self.last_run = Some((work.run.clone(), run_seq));
        let outcome = self.after_arm(&work, &chain, done, interrupt).await;
        self.next_seq = Some((work.run.clone(), chain.lock().await.next_seq()));
        Ok(outcome)
    }

    /// An arm done: its failure said, the agent idle again; how serving
    /// ends, when it does.
    async fn after_arm(
        &mut self,
        work: &Work,
        chain: &Chain,
        done: Result<ArmEnd, Error>,
        interrupt: &Interrupt,
    ) -> Option<Result<(), Error>> {
        let bye = matches!(done, Ok(ArmEnd::Bye));
        let gone = matches!(done, Ok(ArmEnd::ControllerGone));
        self.dead_man = DeadMan::new();
        self.idle_since = Instant::now();
        if let Err(e) = &done {
            tracing::warn!("agent {}: arm {}: {e}", self.me.reg.name, work.arm);
            let failed = FromAgent::Failed {
                message: e.message.clone(),
            };
            let _ = say(&mut self.conn, chain, &failed).await;
            if e.exit == crate::error::Exit::Interrupted && interrupt.fired() {
                return Some(Ok(()));
            }
        }
        if let Err(e) = beat(&mut self.conn, self.url, &mut self.me).await {
            tracing::warn!("agent {}: {e}", self.me.reg.name);
        }
        if self.args.once && (bye || gone) {
            tracing::info!("agent {}: run {} is over", self.me.reg.name, work.run);
            return Some(Ok(()));
        }
        None
    }

    /// Leaves the coordinator: its registration and its name's claim go.
    async fn retire(&mut self) {
        let name = &self.me.reg.name;
        let _: redis::RedisResult<()> = self.conn.zrem(protocol::agents(), name).await;
        let _: redis::RedisResult<()> = self.conn.del(protocol::agent(name)).await;
        let _: redis::RedisResult<()> = self.conn.del(protocol::claim(name)).await;
    }
}
