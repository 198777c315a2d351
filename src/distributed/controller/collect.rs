//! One arm's load as the agents stream it: until each has ended or is
//! lost, the controller reads their streams (chunks spooled, what they
//! say kept per agent), reads the coordinator's clock, watches the
//! agents' heartbeats and hands a lost agent's segment to a survivor; then
//! `tally` merges it all.

use super::agent_state::{AgentState, Streams};
use super::hearts::Heart;
use super::hold::{failed, Controller};
use super::prepare::Prepared;
use super::tally::{shares, Collected, Tally};
use crate::distributed::link::{self, ClockSource};
use crate::distributed::protocol::{self, FromAgent};
use crate::distributed::streams::Entry;
use crate::distributed::time_line::Anchor;
use crate::error::Error;
use crate::events::Batch;
use crate::interrupt::Interrupt;
use crate::load::Counters;
use redis::AsyncCommands;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// After the schedule's end (and one request timeout), how long agents may
/// take to say they ended before they count as lost.
const END_GRACE: Duration = Duration::from_secs(15);
/// How long the coordinator may refuse or drop the controller's reads (a
/// restart, out of memory) before the run gives up on it.
const RETRY_WITHIN: Duration = Duration::from_secs(10);
/// How long an agent may be missing from the heartbeats (the coordinator
/// restarted and forgot them) before it counts as lost.
pub(super) const ABSENT_WITHIN: Duration = Duration::from_secs(10);
/// A lost agent's segment is taken over from this long after it was found
/// lost (the survivor looks into its inbox four times a second).
const TAKE_LEAD: Duration = Duration::from_millis(500);
/// A coordinator that did not answer for this long stalled: the agents'
/// heartbeats it could not take meanwhile say nothing of them.
const STALL: Duration = Duration::from_secs(1);

/// An arm's collection under way.
struct Collecting {
    arm: String,
    start: Instant,
    /// The schedule's length, and one request's timeout.
    duration: Duration,
    timeout: Duration,
    streams: Streams,
    /// Each agent, in the agents' order.
    agents: Vec<AgentState>,
    /// The controller's anchors, local times from `start`.
    anchors: Vec<Anchor>,
    /// Told to stop (interrupted).
    stopping: bool,
    /// Since when the coordinator has failed the reads, if it does now.
    failing_since: Option<Instant>,
    /// When the coordinator last answered a read.
    last_answer: Instant,
    /// Heartbeats are judged again only from here (after a stall: the
    /// agents beat again within their timeout once it answers).
    hearts_from: Instant,
    next_anchor: Instant,
    next_check: Instant,
    give_up: Instant,
    /// Where this trace's 0 was on the host's monotonic clock.
    start_mono: i64,
}

impl Collecting {
    /// The coordinator answered. When it had
    /// not answered for [`STALL`] or more, it stalled (or its connections
    /// were dropped): the agents' heartbeats could not be written
    /// meanwhile, so they are judged again only once the agents had time
    /// to beat, and the arm is given that long more.
    fn answered(&mut self) {
        let now = Instant::now();
        // (Healthy, the controller asks several times a second.)
        let silent = now.saturating_duration_since(self.last_answer);
        self.last_answer = now;
        if silent < STALL {
            return;
        }
        let grace = Duration::from_millis(protocol::HEARTBEAT_TIMEOUT_MS as u64 + 1_000);
        tracing::warn!(
            "arm {}: the coordinator did not answer for {:.1} s (it stalled, or its \
             connections were dropped): heartbeats are judged again {:.0} s from now",
            self.arm,
            silent.as_secs_f64(),
            grace.as_secs_f64()
        );
        self.hearts_from = now + grace;
        self.give_up += silent;
    }

    /// Whether any agent is still neither ended, nor lost, nor failed.
    fn open(&self) -> bool {
        self.agents.iter().any(AgentState::is_open)
    }
}

/// Where an arm's collected load goes.
pub(crate) struct Destination {
    /// The folder each agent's chunks are spooled in.
    pub spool: PathBuf,
    /// The trace's writer, fed the merged events.
    pub events: mpsc::Sender<Batch>,
    /// The arm's live counts.
    pub counters: Arc<Counters>,
}

impl Controller {
    /// Collects the arm's load as the agents stream it, until each has
    /// ended or is lost; spools chunks under `to.spool`, then merges them
    /// into `to.events` on the controller's time line.
    pub(crate) async fn collect(
        &mut self,
        prepared: Prepared,
        plan: &crate::load::Plan,
        to: Destination,
        interrupt: &Interrupt,
    ) -> Result<Collected, Error> {
        let Destination {
            spool: spool_dir,
            events: out,
            counters,
        } = to;
        let phase_us = prepared.phase_us;
        let shares = shares(plan, phase_us, self.agents.len());
        let mut c = self.begin(prepared, plan, &spool_dir)?;
        let host = crate::distributed::agent::host_name();
        while c.open() {
            if interrupt.fired() && !c.stopping {
                c.stopping = true;
                self.stop(&c.arm).await;
                c.give_up = c
                    .give_up
                    .min(Instant::now() + c.timeout + Duration::from_secs(5));
            }
            let now = Instant::now();
            if now >= c.next_anchor {
                c.next_anchor = now + Duration::from_millis(250);
                self.anchor_to(c.start, &mut c.anchors).await;
            }
            let at_s = now.saturating_duration_since(c.start).as_secs_f64();
            if now >= c.give_up {
                for a in c.agents.iter_mut().filter(|a| a.is_open()) {
                    a.lost = Some(at_s);
                }
                break;
            }
            if now >= c.next_check {
                c.next_check = now + Duration::from_secs(1);
                self.watch_hearts(&mut c, now, at_s).await;
            }
            let Some(entries) = self.read_or_wait(&mut c).await? else {
                continue;
            };
            self.take_entries(&mut c, entries, &counters).await?;
        }
        for a in &mut c.agents {
            a.flush()?;
        }
        let names: Vec<String> = self.agents.iter().map(|a| a.name.clone()).collect();
        c.streams.say_skipped(&names);
        for (i, (a, r)) in c.agents.iter_mut().zip(&c.streams.readers).enumerate() {
            // An end is taken only as the last link of an unbroken chain.
            if a.ended.is_some() && a.broken.is_none() && !r.complete() {
                a.broken = Some("its end is not the last link of its chain".to_string());
            }
            // Taken for lost (its heartbeat late), yet every event it sent
            // arrived, whole, and nobody took its segment over: not lost.
            let whole = r.complete() && a.handed.is_none();
            if let (Some(at), true) = (a.lost, whole) {
                if a.ended.as_ref().is_some_and(|e| !e.interrupted) {
                    tracing::warn!(
                        "arm {}: agent {} was taken for lost at {at:.1} s, but all it sent \
                         arrived: it is not lost",
                        c.arm,
                        names[i]
                    );
                    a.lost = None;
                }
            }
        }
        self.chains_read(&c.streams.readers);
        self.anchor_to(c.start, &mut c.anchors).await;
        for s in &c.streams.names {
            let _: redis::RedisResult<()> = self.conn.del(s).await;
        }
        let tally = Tally {
            arm: c.arm,
            start: c.start,
            start_mono: c.start_mono,
            host,
            phase_us,
            shares,
            agents: c.agents,
            anchors: c.anchors,
            stopping: c.stopping,
        };
        self.tally(tally, plan, &spool_dir, &out).await
    }

    /// The collection begun: a spool for each agent under `spool_dir`,
    /// the bounds on the wait set.
    fn begin(
        &self,
        prepared: Prepared,
        plan: &crate::load::Plan,
        spool_dir: &std::path::Path,
    ) -> Result<Collecting, Error> {
        let Prepared {
            start,
            streams,
            heard,
            anchors,
            arm,
            ..
        } = prepared;
        std::fs::create_dir_all(spool_dir).map_err(|e| {
            Error::environment(format!("cannot create {}: {e}", spool_dir.display()))
        })?;
        let mut agents = Vec::new();
        for (a, heard) in self.agents.iter().zip(heard) {
            let spool = spool_dir.join(format!("{}.spool", a.segment));
            agents.push(AgentState::spooled_to(spool, heard)?);
        }
        // Where each agent's origin and this trace's 0 were on the host's
        // monotonic clock (for the tests' check of the placements).
        let start_mono = {
            let (now, m) = (
                Instant::now(),
                crate::distributed::time_line::monotonic_us(),
            );
            if now >= start {
                m - (now - start).as_micros() as i64
            } else {
                m + (start - now).as_micros() as i64
            }
        };
        Ok(Collecting {
            arm,
            start,
            duration: plan.duration,
            timeout: plan.timeout,
            streams,
            agents,
            anchors,
            stopping: false,
            failing_since: None,
            last_answer: Instant::now(),
            hearts_from: Instant::now(),
            next_anchor: Instant::now(),
            next_check: Instant::now(),
            give_up: start + plan.duration + plan.timeout + END_GRACE,
            start_mono,
        })
    }

    /// A reading of the coordinator's clock, local time from `start`,
    /// added to `anchors` (none when it does not answer).
    async fn anchor_to(&mut self, start: Instant, anchors: &mut Vec<Anchor>) {
        if let Ok(a) = link::anchor(
            &mut self.conn,
            start,
            ClockSource::Coordinator { wall_shift_us: 0 },
        )
        .await
        {
            anchors.push(a);
        }
    }

    /// Agents whose heartbeat stopped (or is missing for
    /// [`ABSENT_WITHIN`]) are lost, this far (`at_s`) into the arm; the
    /// rest of a lost one's segment is handed to a survivor.
    async fn watch_hearts(&mut self, c: &mut Collecting, now: Instant, at_s: f64) {
        let of = self.agents.len();
        // A coordinator that does not answer says nothing of the
        // agents: the reads below count its silence.
        let Ok(hearts) = self.hearts().await else {
            return;
        };
        c.answered();
        if Instant::now() < c.hearts_from {
            return;
        }
        for (i, heart) in hearts.into_iter().enumerate() {
            let gone = match heart {
                Heart::Beating => {
                    c.agents[i].absent = None;
                    false
                }
                Heart::Stale => true,
                Heart::Absent | Heart::Forged => {
                    c.agents[i].absent.get_or_insert(now).elapsed() >= ABSENT_WITHIN
                }
            };
            if gone && c.agents[i].is_open() {
                if heart == Heart::Forged {
                    // The coordinator's doing, not the agent's: said so.
                    let why = format!(
                        "the coordinator held a registration of it not signed with the token \
                         for {ABSENT_WITHIN:?} (someone without the token wrote over it): taken \
                         for lost at {at_s:.1} s"
                    );
                    tracing::warn!("arm {}: agent {}: {why}", c.arm, self.agents[i].name);
                    c.agents[i].broken = Some(why);
                } else {
                    tracing::warn!(
                        "arm {}: agent {} (segment {} of {of}) was lost at {at_s:.1} s",
                        c.arm,
                        self.agents[i].name,
                        self.agents[i].segment
                    );
                }
                c.agents[i].lost = Some(at_s);
                let from = Duration::from_secs_f64(at_s) + TAKE_LEAD;
                if !c.stopping && from < c.duration {
                    c.agents[i].handed = self.hand_over(&c.arm, i, from, &c.agents).await;
                }
            }
        }
    }

    /// The streams' new entries; `None` after a pause while the
    /// coordinator fails the reads, an error once it has for
    /// [`RETRY_WITHIN`].
    async fn read_or_wait(
        &mut self,
        c: &mut Collecting,
    ) -> Result<Option<Vec<(usize, String, Entry)>>, Error> {
        match c.streams.read(&mut self.conn).await {
            Ok(entries) => {
                c.failing_since = None;
                c.answered();
                Ok(Some(entries))
            }
            Err(e) => {
                let since = *c.failing_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= RETRY_WITHIN {
                    return Err(failed(&self.url, "reading")(e));
                }
                tracing::debug!("coordinator: {e}; trying again");
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(None)
            }
        }
    }

    /// Takes what was read, then removes it from the streams: what the
    /// coordinator holds stays bounded.
    async fn take_entries(
        &mut self,
        c: &mut Collecting,
        entries: Vec<(usize, String, Entry)>,
        counters: &Counters,
    ) -> Result<(), Error> {
        let mut read_ids: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for (i, id, entry) in entries {
            read_ids.entry(i).or_default().push(id.clone());
            c.streams.ids[i] = id;
            self.take_entry(c, i, entry, counters)?;
        }
        // Read is done with: what the coordinator holds stays bounded.
        for (i, done) in read_ids {
            let _: redis::RedisResult<u64> = self.conn.xdel(&c.streams.names[i], &done).await;
        }
        Ok(())
    }

    /// One entry of agent `i`'s stream.
    fn take_entry(
        &self,
        c: &mut Collecting,
        i: usize,
        entry: Entry,
        counters: &Counters,
    ) -> Result<(), Error> {
        let name = &self.agents[i].name;
        let agent = &mut c.agents[i];
        match entry {
            Entry::Skipped => {}
            Entry::Broken => {
                let why = c.streams.readers[i]
                    .broken()
                    .unwrap_or("its chain broke")
                    .to_string();
                tracing::warn!(
                    "arm {}: agent {name}'s stream was tampered with ({why}): its events \
                     cannot be trusted whole",
                    c.arm
                );
                agent.broken = Some(why);
            }
            Entry::Chunk { bytes, counts } => {
                agent.spool_chunk(&bytes)?;
                counters.done.fetch_add(counts[0], Ordering::Relaxed);
                counters.admitted.fetch_add(counts[1], Ordering::Relaxed);
                counters.rejected.fetch_add(counts[2], Ordering::Relaxed);
                counters.failed.fetch_add(counts[3], Ordering::Relaxed);
            }
            Entry::Message(FromAgent::Anchor(a)) => agent.heard.anchors.push(a),
            Entry::Message(FromAgent::Started {
                start_local_us,
                origin_mono_us,
            }) => {
                agent.started = Some(start_local_us);
                agent.mono = origin_mono_us;
            }
            Entry::Message(FromAgent::Ended(e)) => {
                agent.ended = Some(e);
                agent.ended_at = Some(c.start.elapsed());
            }
            Entry::Message(FromAgent::Took { segment, from_us }) => {
                match (0..c.agents.len()).find(|&l| {
                    self.agents[l].segment == segment && c.agents[l].handed == Some((i, from_us))
                }) {
                    Some(l) => c.agents[l].took = true,
                    None => tracing::warn!(
                        "arm {}: agent {name} took over segment {segment}, which it was not handed",
                        c.arm
                    ),
                }
            }
            Entry::Message(FromAgent::Failed { message }) => {
                tracing::warn!("arm {}: agent {name}: {message}", c.arm);
                agent.failure = Some(message);
            }
            Entry::Message(FromAgent::Ready { .. }) => {}
        }
        Ok(())
    }
}
