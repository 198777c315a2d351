//! The controller's side of a distributed run (`rlbench run --agents N`):
//! wait (within a bound) for N agents, and for each arm hand each its
//! segment, wait until all are ready, fix a common start on the
//! coordinator's clock, then collect what they stream — event chunks
//! spooled to the run folder, anchors, how each ended — noticing an agent
//! whose heartbeat stops and handing the rest of its segment to a
//! survivor. At the end the spools are merged onto the controller's time
//! line (`merge`), each request once. Faults and probes stay the
//! controller's, on its own time line, as on one machine.

use super::choose::{choose, live_agents, Chosen};
use super::clock::{Anchor, Mapping};
use super::link::{self, ClockSource, DistributedError};
use super::merge::{self, Route};
use super::protocol::{self, Beat, FromAgent, Sealed, ToAgent, Work};
use super::seal::{Seen, Token};
use super::streams::{read, Check, Entry};
use crate::error::Error;
use crate::events::Batch;
use crate::interrupt::Interrupt;
use crate::load::{Counters, LoadReport};
use crate::store::records::{AgentRecord, TakenOver};
use redis::AsyncCommands;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How long the agents may take to be ready for an arm.
const READY_WITHIN: Duration = Duration::from_secs(60);
/// The start is this far after the controller fixes it: time for the
/// message to reach every agent.
const LEAD: Duration = Duration::from_millis(500);
/// After the schedule's end (and one request timeout), how long agents may
/// take to say they ended before they count as lost.
const END_GRACE: Duration = Duration::from_secs(15);
/// Tests only: check each placement of an agent on this host against the
/// host's monotonic clock, and say how many were beyond their bound.
const TRUTH_ENV: &str = "RLBENCH_TEST_CLOCK_TRUTH";

/// What `run` was asked of agents, checked.
#[derive(Clone, Debug)]
pub(crate) struct Wanted {
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

/// Keeps a lease only for the run that holds it: `KEYS[1]` the lease,
/// `ARGV[1]` the run, `ARGV[2]` its lifetime (ms); with `ARGV[2]` = 0 the
/// lease is let go. A lease the coordinator lost (a restart) is taken
/// again; one another run holds is left alone.
const LEASE_KEEP: &str = r"
local held = redis.call('GET', KEYS[1])
if ARGV[2] == '0' then
  if held == ARGV[1] then return redis.call('DEL', KEYS[1]) end
  return 0
end
if held and held ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
";

/// How long the coordinator may refuse or drop the controller's reads (a
/// restart, out of memory) before the run gives up on it.
const RETRY_WITHIN: Duration = Duration::from_secs(10);
/// How long an agent may be missing from the heartbeats (the coordinator
/// restarted and forgot them) before it counts as lost.
const ABSENT_WITHIN: Duration = Duration::from_secs(10);
/// A lost agent's segment is taken over from this long after it was found
/// lost (the survivor looks into its inbox four times a second).
const TAKE_LEAD: Duration = Duration::from_millis(500);

/// An agent's heartbeat as the coordinator holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Heart {
    Beating,
    Stale,
    Absent,
}

/// The controller's hold on its agents for one run.
pub(crate) struct Controller {
    url: String,
    conn: super::link::Conn,
    agents: Vec<Chosen>,
    estimate_clock: bool,
    run: String,
    token: Token,
    /// The number of the last message it signed.
    seq: u64,
    /// Beats for the run and keeps its leases; stopped when dropped.
    beater: tokio::task::JoinHandle<()>,
    max_clock_uncertainty_us: i64,
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.beater.abort();
    }
}

/// One arm made ready: the local instant every agent starts at.
pub(crate) struct Prepared {
    pub start: Instant,
    /// The controller's wall clock at `start` (µs), as predicted.
    pub phase_us: i64,
    streams: Vec<String>,
    /// The last entry read of each stream.
    ids: Vec<String>,
    agent_anchors: Vec<Vec<Anchor>>,
    /// The controller's anchors, local times from `start`.
    anchors: Vec<Anchor>,
    arm: String,
    /// What the streams' entries are checked against, and which streams'
    /// refusals were said.
    check: Check,
    warned: Vec<bool>,
}

/// One arm's load as the agents sent it.
pub(crate) struct Collected {
    pub report: LoadReport,
    pub agents: Vec<AgentRecord>,
    /// The most an agent's times may be off before nothing is judged (µs).
    pub max_clock_uncertainty_us: i64,
}

impl Controller {
    /// Waits for `wanted.agents` agents at the coordinator: those an
    /// Indexed Job placed take the segment of their index; others are taken
    /// in name order. An error names who is missing after the wait.
    pub(crate) async fn gather(
        wanted: &Wanted,
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
                        tracing::info!(
                            "agents: {}",
                            agents
                                .iter()
                                .map(|a| format!(
                                    "{} (segment {} of {})",
                                    a.name, a.segment, wanted.agents
                                ))
                                .collect::<Vec<_>>()
                                .join(", ")
                        );
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
        let url = self.url.clone();
        let failed = |what: &'static str| {
            let url = url.clone();
            move |e: redis::RedisError| Error::from(link::failed(&url, what, e))
        };
        // Agents that stopped beating since the last arm are let go first.
        let alive = self.alive().await.map_err(failed("reading heartbeats"))?;
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
        let of = self.agents.len();
        let mut streams = Vec::new();
        for a in self.agents.clone() {
            let stream = protocol::stream(&self.run, arm, &a.name);
            let work = ToAgent::Work(Work {
                run: self.run.clone(),
                arm: arm.to_string(),
                scenario_file: scenario.0.to_string(),
                scenario_text: scenario.1.to_string(),
                duration_us,
                targets: targets.iter().map(ToString::to_string).collect(),
                segment: a.segment,
                of,
                stream: stream.clone(),
                estimate_clock: self.estimate_clock,
                issued_us: link::time(&mut self.conn)
                    .await
                    .map_err(failed("reading its clock"))?,
            });
            let _: () = self
                .conn
                .del(&stream)
                .await
                .map_err(failed("clearing a stream"))?;
            let name = a.name.clone();
            self.tell(&name, &work)
                .await
                .map_err(failed("handing out work"))?;
            streams.push(stream);
        }
        let mut ready = vec![false; of];
        let mut agent_anchors = vec![Vec::new(); of];
        let mut ids = vec!["0".to_string(); of];
        let mut check = self.check();
        let mut warned = vec![false; of];
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
            let entries = read(&mut self.conn, &streams, &ids, &mut check)
                .await
                .map_err(failed("reading"))?;
            for (i, id, entry) in entries {
                ids[i] = id.clone();
                match entry {
                    Entry::Refused(why) => {
                        refused(&mut warned, &self.agents, i, why);
                        let _: redis::RedisResult<u64> = self.conn.xdel(&streams[i], &[&id]).await;
                    }
                    Entry::Said(FromAgent::Ready { .. }) => ready[i] = true,
                    Entry::Said(FromAgent::Anchor(a)) => agent_anchors[i].push(a),
                    Entry::Said(FromAgent::Failed { message }) => {
                        return Err(DistributedError::AgentFailed {
                            agent: self.agents[i].name.clone(),
                            message,
                        }
                        .into())
                    }
                    _ => {}
                }
            }
            self.check_alive(&ready, arm).await?;
        }
        // The start: LEAD from now on the coordinator's clock.
        let origin = Instant::now();
        let mine = link::anchor(
            &mut self.conn,
            origin,
            ClockSource::Coordinator { wall_shift_us: 0 },
        )
        .await
        .map_err(failed("reading its clock"))?;
        let at_us = mine.coord_us + LEAD.as_micros() as i64;
        let (at_local, _) = Mapping::new(vec![mine])
            .expect("one anchor")
            .to_local(at_us);
        let start = origin + Duration::from_micros(at_local.max(0) as u64);
        let sample = crate::load::clocks::sample(origin);
        let phase_us = sample.wall_us + (at_local.max(0) - sample.trace_us);
        for name in self
            .agents
            .iter()
            .map(|a| a.name.clone())
            .collect::<Vec<_>>()
        {
            let go = ToAgent::Start {
                run: self.run.clone(),
                arm: arm.to_string(),
                at_us,
                phase_us,
            };
            self.tell(&name, &go)
                .await
                .map_err(failed("starting the agents"))?;
        }
        let shift = at_local.max(0);
        Ok(Prepared {
            start,
            phase_us,
            streams,
            ids,
            agent_anchors,
            anchors: vec![Anchor {
                local_us: mine.local_us - shift,
                ..mine
            }],
            arm: arm.to_string(),
            check,
            warned,
        })
    }

    /// Collects the arm's load as the agents stream it, until each has
    /// ended or is lost; spools chunks under `spool_dir`, then merges them
    /// into `out` on the controller's time line.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn collect(
        &mut self,
        prepared: Prepared,
        plan: &crate::load::Plan,
        spool_dir: PathBuf,
        out: mpsc::Sender<Batch>,
        counters: Arc<Counters>,
        interrupt: &Interrupt,
    ) -> Result<Collected, Error> {
        let url = self.url.clone();
        let failed = |what: &'static str| {
            let url = url.clone();
            move |e: redis::RedisError| Error::from(link::failed(&url, what, e))
        };
        let Prepared {
            start,
            phase_us,
            streams,
            mut ids,
            mut agent_anchors,
            mut anchors,
            arm,
            mut check,
            mut warned,
        } = prepared;
        let (duration, timeout) = (plan.duration, plan.timeout);
        let of = self.agents.len();
        // Each segment's share of the schedule, as the agents walk it.
        let mut shares = vec![0u64; of];
        let schedule =
            crate::load::schedule::Schedule::new(&plan.shape, plan.duration, plan.seed, phase_us);
        for (index, _) in schedule.enumerate() {
            shares[index % of] += 1;
        }
        std::fs::create_dir_all(&spool_dir).map_err(|e| {
            Error::environment(format!("cannot create {}: {e}", spool_dir.display()))
        })?;
        let spools: Vec<PathBuf> = self
            .agents
            .iter()
            .map(|a| spool_dir.join(format!("{}.spool", a.segment)))
            .collect();
        let mut files = Vec::new();
        for p in &spools {
            files.push(std::io::BufWriter::new(std::fs::File::create(p).map_err(
                |e| Error::environment(format!("cannot create {}: {e}", p.display())),
            )?));
        }
        let mut started: Vec<Option<i64>> = vec![None; of];
        // Where each agent's origin and this trace's 0 were on the host's
        // monotonic clock (for the tests' check of the placements).
        let mut monos: Vec<i64> = vec![0; of];
        let host = super::agent::host_name();
        let start_mono = {
            let (now, m) = (Instant::now(), super::clock::monotonic_us());
            if now >= start {
                m - (now - start).as_micros() as i64
            } else {
                m + (start - now).as_micros() as i64
            }
        };
        let mut ended: Vec<Option<protocol::Ended>> = vec![None; of];
        let mut lost: Vec<Option<f64>> = vec![None; of];
        // A lost agent's segment handed to another: (that agent, from µs),
        // and whether it said it took it.
        let mut handed: Vec<Option<(usize, u64)>> = vec![None; of];
        let mut took = vec![false; of];
        let mut failures: Vec<Option<String>> = vec![None; of];
        let mut stopping = false;
        let mut failing_since: Option<Instant> = None;
        let mut absent: Vec<Option<Instant>> = vec![None; of];
        let mut next_anchor = Instant::now();
        let mut next_check = Instant::now();
        let mut give_up = start + duration + timeout + END_GRACE;
        let open = |ended: &[Option<protocol::Ended>],
                    lost: &[Option<f64>],
                    failures: &[Option<String>]| {
            (0..of).any(|i| ended[i].is_none() && lost[i].is_none() && failures[i].is_none())
        };
        while open(&ended, &lost, &failures) {
            if interrupt.fired() && !stopping {
                stopping = true;
                self.stop(&arm).await;
                give_up = give_up.min(Instant::now() + timeout + Duration::from_secs(5));
            }
            let now = Instant::now();
            if now >= next_anchor {
                next_anchor = now + Duration::from_millis(250);
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
            let at_s = now.saturating_duration_since(start).as_secs_f64();
            if now >= give_up {
                for i in 0..of {
                    if ended[i].is_none() && failures[i].is_none() && lost[i].is_none() {
                        lost[i] = Some(at_s);
                    }
                }
                break;
            }
            if now >= next_check {
                next_check = now + Duration::from_secs(1);
                // A coordinator that does not answer says nothing of the
                // agents: the reads below count its silence.
                let hearts = self
                    .hearts()
                    .await
                    .unwrap_or_else(|_| vec![Heart::Beating; self.agents.len()]);
                for i in 0..of {
                    let gone = match hearts[i] {
                        Heart::Beating => {
                            absent[i] = None;
                            false
                        }
                        Heart::Stale => true,
                        Heart::Absent => absent[i].get_or_insert(now).elapsed() >= ABSENT_WITHIN,
                    };
                    if gone && ended[i].is_none() && lost[i].is_none() && failures[i].is_none() {
                        tracing::warn!(
                            "arm {arm}: agent {} (segment {} of {of}) was lost at {at_s:.1} s",
                            self.agents[i].name,
                            self.agents[i].segment
                        );
                        lost[i] = Some(at_s);
                        let from = Duration::from_secs_f64(at_s) + TAKE_LEAD;
                        let open: Vec<bool> = (0..of)
                            .map(|j| {
                                ended[j].is_none() && lost[j].is_none() && failures[j].is_none()
                            })
                            .collect();
                        if !stopping && from < duration {
                            handed[i] = self.hand_over(&arm, i, from, &open, &handed).await;
                        }
                    }
                }
            }
            let entries = match read(&mut self.conn, &streams, &ids, &mut check).await {
                Ok(entries) => {
                    failing_since = None;
                    entries
                }
                Err(e) => {
                    let since = *failing_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= RETRY_WITHIN {
                        return Err(failed("reading")(e));
                    }
                    tracing::debug!("coordinator: {e}; trying again");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let mut read_ids: BTreeMap<usize, Vec<String>> = BTreeMap::new();
            for (i, id, entry) in entries {
                read_ids.entry(i).or_default().push(id.clone());
                ids[i] = id;
                match entry {
                    Entry::Refused(why) => refused(&mut warned, &self.agents, i, why),
                    Entry::Chunk { bytes, counts } => {
                        files[i].write_all(&bytes).map_err(|e| {
                            Error::environment(format!("cannot write {}: {e}", spools[i].display()))
                        })?;
                        counters.done.fetch_add(counts[0], Ordering::Relaxed);
                        counters.admitted.fetch_add(counts[1], Ordering::Relaxed);
                        counters.rejected.fetch_add(counts[2], Ordering::Relaxed);
                        counters.failed.fetch_add(counts[3], Ordering::Relaxed);
                    }
                    Entry::Said(FromAgent::Anchor(a)) => agent_anchors[i].push(a),
                    Entry::Said(FromAgent::Started {
                        start_local_us,
                        origin_mono_us,
                    }) => {
                        started[i] = Some(start_local_us);
                        monos[i] = origin_mono_us;
                    }
                    Entry::Said(FromAgent::Ended(e)) => ended[i] = Some(e),
                    Entry::Said(FromAgent::Took { segment, from_us }) => {
                        match (0..of).find(|&l| {
                            self.agents[l].segment == segment && handed[l] == Some((i, from_us))
                        }) {
                            Some(l) => took[l] = true,
                            None => refused(
                                &mut warned,
                                &self.agents,
                                i,
                                "it took over a segment it was not handed",
                            ),
                        }
                    }
                    Entry::Said(FromAgent::Failed { message }) => {
                        tracing::warn!("arm {arm}: agent {}: {message}", self.agents[i].name);
                        failures[i] = Some(message);
                    }
                    Entry::Said(FromAgent::Ready { .. }) => {}
                }
            }
            // Read is done with: what the coordinator holds stays bounded.
            for (i, done) in read_ids {
                let _: redis::RedisResult<u64> = self.conn.xdel(&streams[i], &done).await;
            }
        }
        for (f, p) in files.iter_mut().zip(&spools) {
            f.flush()
                .map_err(|e| Error::environment(format!("cannot write {}: {e}", p.display())))?;
        }
        if let Ok(a) = link::anchor(
            &mut self.conn,
            start,
            ClockSource::Coordinator { wall_shift_us: 0 },
        )
        .await
        {
            anchors.push(a);
        }
        for s in &streams {
            let _: redis::RedisResult<()> = self.conn.del(s).await;
        }
        let controller = Mapping::new(anchors)
            .ok_or_else(|| Error::environment("no reading of the coordinator's clock"))?;
        let mut records = Vec::new();
        let mut not_sent = crate::store::records::NotSent::default();
        let mut last_sent = 0u64;
        // Segments taken over: requests each agent took on (`extra`) and
        // gave away (`given`).
        let taken: Vec<Option<(usize, u64)>> =
            (0..of).map(|l| handed[l].filter(|_| took[l])).collect();
        let (extra, given) = handed_over(plan, phase_us, &self.agents, &taken);
        // Agents that handed their segment over are merged last: a request
        // both sent (a lost agent still alive) is kept once, as its taker's.
        let mut order: Vec<usize> = (0..of).collect();
        order.sort_by_key(|&i| taken[i].is_some());
        let mut merges = vec![(merge::Merged::default(), None); of];
        let mut seen = crate::events::integrity::Checker::default();
        for &i in &order {
            let agent_map = Mapping::new(std::mem::take(&mut agent_anchors[i]));
            let merged = match (&agent_map, started[i]) {
                (Some(agent), Some(start_local_us)) => {
                    let route = Route {
                        agent,
                        start_local_us,
                        controller: &controller,
                        truth: (std::env::var_os(TRUTH_ENV).is_some()
                            && self.agents[i].host == host)
                            .then(|| monos[i] + start_local_us - start_mono),
                    };
                    merge::spool(&spools[i], i as u16, &route, &mut seen, &out).await?
                }
                _ => merge::Merged::default(),
            };
            if merged.duplicates > 0 {
                tracing::warn!(
                    "arm {arm}: {} requests of agent {} were sent again by the agent that took \
                     its segment over; they are left out of the trace",
                    merged.duplicates,
                    self.agents[i].name
                );
            }
            merges[i] = (merged, agent_map);
        }
        for (i, (merged, agent_map)) in merges.into_iter().enumerate() {
            last_sent = last_sent.max(merged.last_sent_us);
            let first = agent_map
                .as_ref()
                .and_then(|m| m.anchors().first().copied());
            let a = &self.agents[i];
            let share = (shares[a.segment] + extra[i]).saturating_sub(given[i]);
            match &ended[i] {
                Some(e) if taken[i].is_none() => not_sent.add(&e.not_sent),
                // Lost or failed: what did not arrive was not sent, as far
                // as the run knows (its retries counted in, at least this).
                _ => not_sent.lost += share.saturating_sub(merged.events),
            }
            records.push(AgentRecord {
                name: a.name.clone(),
                host: a.host.clone(),
                segment: a.segment,
                of,
                wall_offset_us: first.map_or(0, |f| f.wall_offset_us()),
                uncertainty_us: merged.uncertainty_us,
                scheduled: share,
                events: merged.events,
                said_events: ended[i].as_ref().map(|e| e.events),
                lost_at_s: lost[i],
                failed: failures[i].clone(),
                taken_over: taken[i].map(|(by, from_us)| TakenOver {
                    by: self.agents[by].name.clone(),
                    from_s: from_us as f64 / 1e6,
                    requests: given[i],
                }),
                // A lost agent woken again is stopped by this controller:
                // its record says it was lost, not that the run was cut.
                interrupted: lost[i].is_none() && ended[i].as_ref().is_some_and(|e| e.interrupted),
                clock_estimated: self.estimate_clock,
            });
        }
        let _ = std::fs::remove_dir_all(&spool_dir);
        // The run goes on with the survivors: later arms are split among
        // them (a lost agent's share of this arm is counted as not sent).
        let gone: Vec<usize> = (0..of)
            .filter(|&i| lost[i].is_some() || failures[i].is_some())
            .collect();
        self.drop_agents(&gone).await;
        let sample = crate::load::clocks::sample(start);
        let measured = sample.wall_us - sample.trace_us;
        // Stopped, not lost: a lost or failed agent makes the run partial
        // (its record says so) without stopping the run's other arms.
        let interrupted = stopping || records.iter().any(|r| r.interrupted);
        Ok(Collected {
            report: LoadReport {
                scheduled: records.iter().map(|r| r.scheduled).sum(),
                not_sent,
                send_window: Duration::from_micros(last_sent),
                interrupted,
                // The phase every agent's schedule took; the prediction's
                // error against this reading counts as uncertainty.
                epoch_offset_us: phase_us,
                epoch_uncertainty_us: sample.uncertainty_us + (measured - phase_us).abs(),
            },
            agents: records,
            max_clock_uncertainty_us: self.max_clock_uncertainty_us,
        })
    }

    /// Hands lost agent `lost`'s segment, from `from` on, to the open
    /// agent that took over fewest (first stopping the lost one, which may
    /// yet be alive): the agent it was handed to, when there is one.
    async fn hand_over(
        &mut self,
        arm: &str,
        lost: usize,
        from: Duration,
        open: &[bool],
        handed: &[Option<(usize, u64)>],
    ) -> Option<(usize, u64)> {
        let load = |j: usize| handed.iter().flatten().filter(|(t, _)| *t == j).count();
        let taker = (0..open.len())
            .filter(|&j| j != lost && open[j])
            .min_by_key(|&j| (load(j), j))?;
        let (run, arm) = (self.run.clone(), arm.to_string());
        let name = self.agents[lost].name.clone();
        let stop = ToAgent::Stop {
            run: run.clone(),
            arm: arm.clone(),
        };
        let _ = self.tell(&name, &stop).await;
        let from_us = from.as_micros() as u64;
        let take = ToAgent::Take {
            run,
            arm: arm.clone(),
            segment: self.agents[lost].segment,
            from_us,
        };
        let to = self.agents[taker].name.clone();
        match self.tell(&to, &take).await {
            Ok(()) => {
                tracing::warn!(
                    "arm {arm}: agent {to} takes over segment {} of {} from {:.1} s",
                    self.agents[lost].segment,
                    open.len(),
                    from.as_secs_f64()
                );
                Some((taker, from_us))
            }
            Err(e) => {
                tracing::warn!("arm {arm}: cannot hand segment over to {to}: {e}");
                None
            }
        }
    }

    /// Lets the agents at `gone` go (their leases too) and splits the
    /// schedule among the others, in their order.
    async fn drop_agents(&mut self, gone: &[usize]) {
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
    async fn stop(&mut self, arm: &str) {
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

    /// Whether each chosen agent still beats.
    ///
    /// An agent whose heartbeat is old stopped beating; one the coordinator
    /// holds no heartbeat of at all may be one it forgot (a restart): only
    /// an old one counts as stopped (`false`), the caller gives an absent
    /// one [`ABSENT_WITHIN`] to register again.
    async fn alive(&mut self) -> redis::RedisResult<Vec<bool>> {
        Ok(self
            .hearts()
            .await?
            .into_iter()
            .map(|h| h != Heart::Stale)
            .collect())
    }

    async fn hearts(&mut self) -> redis::RedisResult<Vec<Heart>> {
        let now_ms = link::time(&mut self.conn).await? / 1_000;
        let mut hearts = Vec::new();
        for a in &self.agents {
            let score: Option<i64> = self.conn.zscore(protocol::agents(), &a.name).await?;
            hearts.push(match score {
                Some(s) if s >= now_ms - protocol::HEARTBEAT_TIMEOUT_MS => Heart::Beating,
                Some(_) => Heart::Stale,
                None => Heart::Absent,
            });
        }
        Ok(hearts)
    }

    /// An error naming an agent that stopped beating before it was ready.
    async fn check_alive(&mut self, ready: &[bool], arm: &str) -> Result<(), Error> {
        let url = self.url.clone();
        let alive = self
            .alive()
            .await
            .map_err(|e| Error::from(link::failed(&url, "reading heartbeats", e)))?;
        if let Some(i) = (0..alive.len()).find(|&i| !alive[i] && !ready[i]) {
            return Err(DistributedError::Agents(format!(
                "agent {} was lost before arm {arm} started",
                self.agents[i].name
            ))
            .into());
        }
        Ok(())
    }
}

/// Leases every one of `agents` to `run`, atomically each (`SET NX`);
/// when another run took one first, lets go of the others and says no.
async fn lease_all(
    conn: &mut super::link::Conn,
    url: &str,
    run: &str,
    agents: &[Chosen],
) -> Result<bool, Error> {
    let mut taken: Vec<String> = Vec::new();
    for a in agents {
        let ok: Option<String> = redis::cmd("SET")
            .arg(protocol::lease(&a.name))
            .arg(run)
            .arg("NX")
            .arg("PX")
            .arg(protocol::LEASE_TTL_MS)
            .query_async(conn)
            .await
            .map_err(|e| Error::from(link::failed(url, "leasing agents", e)))?;
        if ok.is_none() {
            for name in &taken {
                let _ = keep_lease(conn, name, run, 0).await;
            }
            return Ok(false);
        }
        taken.push(a.name.clone());
    }
    Ok(true)
}

/// Keeps the lease of `agent` for `run` another `ttl_ms` (0: lets it go),
/// when it is still the run's.
async fn keep_lease(
    conn: &mut super::link::Conn,
    agent: &str,
    run: &str,
    ttl_ms: u64,
) -> redis::RedisResult<i64> {
    redis::Script::new(LEASE_KEEP)
        .key(protocol::lease(agent))
        .arg(run)
        .arg(ttl_ms)
        .invoke_async(conn)
        .await
}

/// The run's heartbeat, every [`protocol::BEAT_EVERY_MS`] until aborted:
/// a beat signed with the coordinator's time (agents stop their load when
/// it is older than [`protocol::DEAD_MAN_US`]), and the agents' leases
/// kept. A coordinator that does not answer is tried again at the next
/// beat.
async fn beat(mut conn: super::link::Conn, token: Token, run: String, agents: Vec<String>) {
    let mut every = tokio::time::interval(Duration::from_millis(protocol::BEAT_EVERY_MS));
    let mut n = 0u64;
    loop {
        every.tick().await;
        let Ok(now) = link::time(&mut conn).await else {
            continue;
        };
        n += 1;
        let body = serde_json::to_string(&Beat { at_us: now }).unwrap_or_default();
        let sealed = Sealed::new(&token, &run, protocol::CONTROLLER, "", n, now, "beat", body);
        let _: redis::RedisResult<()> = redis::cmd("SET")
            .arg(protocol::beat(&run))
            .arg(serde_json::to_string(&sealed).unwrap_or_default())
            .arg("PX")
            .arg(protocol::BEAT_TTL_MS)
            .query_async(&mut conn)
            .await;
        for a in &agents {
            let _ = keep_lease(&mut conn, a, &run, protocol::LEASE_TTL_MS).await;
        }
    }
}

impl Controller {
    /// Puts a signed message in an agent's inbox: work in its inbox, the
    /// run's starts, stops and end in its inbox for the run. Both expire.
    async fn tell(&mut self, agent: &str, message: &ToAgent) -> redis::RedisResult<()> {
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
            &self.run,
            protocol::CONTROLLER,
            agent,
            self.seq,
            now,
            kind,
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
    fn check(&self) -> Check {
        Check {
            token: self.token.clone(),
            run: self.run.clone(),
            senders: self.agents.iter().map(|a| a.name.clone()).collect(),
            seen: vec![Seen::default(); self.agents.len()],
        }
    }
}

/// Says once per stream that entries were refused, and why.
fn refused(warned: &mut [bool], agents: &[Chosen], i: usize, why: &str) {
    if !warned[i] {
        warned[i] = true;
        tracing::warn!(
            "ignoring entries in agent {}'s stream: {why} (skipped, and removed)",
            agents[i].name
        );
    }
}

/// Per agent, the requests of segments it took over (`extra`) and of its
/// own segment it handed over (`given`): each taken segment's requests due
/// from its `from` on, counted on the arm's schedule.
fn handed_over(
    plan: &crate::load::Plan,
    phase_us: i64,
    agents: &[Chosen],
    taken: &[Option<(usize, u64)>],
) -> (Vec<u64>, Vec<u64>) {
    let of = agents.len();
    let (mut extra, mut given) = (vec![0u64; of], vec![0u64; of]);
    for (l, t) in taken.iter().enumerate() {
        let Some((by, from_us)) = *t else { continue };
        let segment = crate::load::Segment {
            index: agents[l].segment,
            of,
            from: Duration::from_micros(from_us),
        };
        let n =
            crate::load::schedule::Schedule::new(&plan.shape, plan.duration, plan.seed, phase_us)
                .enumerate()
                .filter(|&(i, at)| segment.holds(i, at))
                .count() as u64;
        extra[by] += n;
        given[l] += n;
    }
    (extra, given)
}
