//! `rlbench agent`: a load agent. It claims its name and registers with
//! the coordinator, beating every second; for each arm a controller that
//! leased it hands it (signed with the token they share, fresh, for a run
//! it has not served), it builds the arm's load plan from the scenario
//! exactly as `run` does (`app::plan`), takes its segment of the schedule,
//! anchors its clock to the coordinator's, starts at the common instant
//! and runs the same load code as one machine (`load::run`), streaming its
//! events back in signed, deflated chunks (`outbox`) with an anchor every
//! quarter second (and, asked to, a lost agent's segment beside its own:
//! `takeover`), then
//! says how its load ended. It stops its load within 2 s of
//! its controller's last beat, and every wait is bounded; a coordinator
//! that restarts or refuses writes is tried again for a while.

use super::link::{self, ClockSource, DistributedError};
use super::outbox::{stream_events, Streamer};
use super::protocol::{self, Beat, Ended, FromAgent, Registration, Sealed, ToAgent, Work};
use super::seal::{Sequence, Token};
use super::takeover::{halt_of, take_over, TakeOver};
use super::voice::{say, Me};
use super::work::plan_of;
use crate::error::Error;
use crate::events::Batch;
use crate::interrupt::Interrupt;
use crate::load::{self, Counters};
use redis::AsyncCommands;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

/// What `rlbench agent` was asked, checked.
pub(crate) struct AgentArgs {
    pub coordinator: String,
    /// The secret shared with the controllers it serves.
    pub token: Token,
    pub name: String,
    /// `(index, of)`: placed by a Kubernetes Indexed Job.
    pub index: Option<(usize, usize)>,
    /// Exit once a run it served ends.
    pub once: bool,
    pub clock: ClockSource,
    /// `--allow-remote-targets`: load may go off this machine's loopback.
    /// Only this agent's own command line can say so, never a scenario.
    pub allow_remote_targets: bool,
    /// `--idle-timeout`: with no run for this long, give up (exit 3).
    pub idle_timeout: Option<Duration>,
}

/// How long an agent waits for the start once it said it is ready.
const START_WITHIN: Duration = Duration::from_secs(60);
/// How often an agent reads the coordinator's clock while its load runs:
/// the shorter the pieces between readings, the less a slewing clock can
/// stray from them. Its controller's beat is looked at as often.
const ANCHOR_EVERY: Duration = Duration::from_millis(250);
/// How long a blocking read of an inbox waits before the agent beats.
const INBOX_POLL_S: f64 = 0.5;
/// How long an idle agent waits for a coordinator that fails it before
/// it gives up (exit 3).
const COORDINATOR_WITHIN: Duration = Duration::from_secs(60);

/// Claims a name only for the process that holds it: `KEYS[1]` the claim,
/// `ARGV[1]` this process's nonce, `ARGV[2]` its lifetime (ms).
const CLAIM: &str = r"
local held = redis.call('GET', KEYS[1])
if held and held ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
";

/// Serves until interrupted (or, with `--once`, until a run it served
/// ends or its controller is gone).
pub(crate) async fn serve(args: &AgentArgs, interrupt: &Interrupt) -> Result<(), Error> {
    let url = &args.coordinator;
    let mut conn = link::connect(url).await?;
    let mut inbox_conn = link::connect(url).await?;
    let mut me = Me {
        reg: Registration {
            name: args.name.clone(),
            index: args.index,
            host: host_name(),
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            protocol: super::seal::VERSION,
            nonce: nonce()?,
            beat_us: 0,
            busy: false,
        },
        token: args.token.clone(),
        beats: 0,
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
    tracing::info!(
        "agent {}: registered at {}, waiting for work",
        me.reg.name,
        link::redacted(url)
    );
    let mut served: HashSet<String> = HashSet::new();
    let mut dead_man = DeadMan::new();
    let mut idle_since = Instant::now();
    // Since when the coordinator has failed us, if it does now.
    let mut failing: Option<Instant> = None;
    // The run whose end it waits for (`--once`), and its inbox's count.
    let mut last_run: Option<(String, Sequence)> = None;
    let outcome = loop {
        let waiting = last_run.as_ref().map(|(r, _)| r.as_str());
        let popped = tokio::select! {
            biased;
            () = interrupt.wait() => break Ok(()),
            m = next_message(&mut inbox_conn, &me, waiting, url) => m,
        };
        // A coordinator that restarts or refuses us for a while is waited
        // for (another name's claim is not: that ends this agent).
        let popped = match (popped, beat(&mut conn, url, &mut me).await) {
            (_, Err(e @ DistributedError::Agents(_))) => break Err(e.into()),
            (Ok(p), Ok(())) => {
                failing = None;
                p
            }
            (Err(e), _) | (_, Err(e)) => {
                let since = *failing.get_or_insert_with(Instant::now);
                if since.elapsed() >= COORDINATOR_WITHIN {
                    break Err(e.into());
                }
                tracing::warn!("agent {}: {e}; trying again", me.reg.name);
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if let (Some(limit), None) = (args.idle_timeout, &popped) {
            if idle_since.elapsed() >= limit && last_run.is_none() {
                break Err(Error::environment(format!(
                    "agent {}: no run leased it within {} (--idle-timeout)",
                    me.reg.name,
                    humantime::format_duration(limit)
                )));
            }
        }
        match popped {
            Some(Popped::Work(work)) => {
                let fresh = served.insert(format!("{}\0{}", work.run, work.arm));
                if let Err(why) = accept(&mut conn, &me, &work, fresh, url).await? {
                    tracing::warn!(
                        "agent {}: refused work for run {}: {why}",
                        me.reg.name,
                        work.run
                    );
                    continue;
                }
                me.reg.busy = true;
                if let Err(e) = beat(&mut conn, url, &mut me).await {
                    tracing::warn!("agent {}: {e}", me.reg.name);
                }
                let mut run_seq = match last_run.take() {
                    Some((r, s)) if r == work.run => s,
                    _ => Sequence::default(),
                };
                let done = run_arm(
                    &work,
                    args,
                    &mut conn,
                    &mut inbox_conn,
                    &mut me,
                    &mut run_seq,
                    interrupt,
                )
                .await;
                me.reg.busy = false;
                let bye = matches!(done, Ok(ArmEnd::Bye));
                let gone = matches!(done, Ok(ArmEnd::ControllerGone));
                last_run = Some((work.run.clone(), run_seq));
                dead_man = DeadMan::new();
                idle_since = Instant::now();
                if let Err(e) = &done {
                    tracing::warn!("agent {}: arm {}: {e}", me.reg.name, work.arm);
                    let failed = FromAgent::Failed {
                        message: e.message.clone(),
                    };
                    let _ = say(
                        &mut conn,
                        &me,
                        &work,
                        &AtomicU64::new(u64::MAX / 2),
                        &failed,
                    )
                    .await;
                    if e.exit == crate::error::Exit::Interrupted && interrupt.fired() {
                        break Ok(());
                    }
                }
                if let Err(e) = beat(&mut conn, url, &mut me).await {
                    tracing::warn!("agent {}: {e}", me.reg.name);
                }
                if args.once && (bye || gone) {
                    tracing::info!("agent {}: run {} is over", me.reg.name, work.run);
                    break Ok(());
                }
            }
            Some(Popped::Bye(run)) if args.once => {
                tracing::info!("agent {}: run {run} is over", me.reg.name);
                break Ok(());
            }
            Some(Popped::Bye(_)) => {
                last_run = None;
                idle_since = Instant::now();
            }
            None => {
                // Waiting for a run's end with `--once`: a controller that
                // stopped beating ended it too.
                if let (true, Some((run, _))) = (args.once, &last_run) {
                    if !dead_man.alive(&mut conn, &me.token, run).await {
                        tracing::info!(
                            "agent {}: the controller of run {run} stopped beating: the run is over",
                            me.reg.name
                        );
                        break Ok(());
                    }
                }
            }
        }
    };
    let _: redis::RedisResult<()> = conn.zrem(protocol::agents(), &me.reg.name).await;
    let _: redis::RedisResult<()> = conn.del(protocol::agent(&me.reg.name)).await;
    let _: redis::RedisResult<()> = conn.del(protocol::claim(&me.reg.name)).await;
    outcome
}

/// A fresh random mark for this process.
fn nonce() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::environment(format!("no randomness from the system: {e}")))?;
    Ok(hex::encode(bytes))
}

/// Takes (or keeps) the agent's name: false when another process holds it.
async fn claim(conn: &mut super::link::Conn, url: &str, me: &Me) -> Result<bool, DistributedError> {
    let held: i64 = redis::Script::new(CLAIM)
        .key(protocol::claim(&me.reg.name))
        .arg(&me.reg.nonce)
        .arg(protocol::CLAIM_TTL_MS)
        .invoke_async(conn)
        .await
        .map_err(|e| link::failed(url, "claiming its name", e))?;
    Ok(held == 1)
}

/// What came to an agent's inboxes, signed and checked.
enum Popped {
    Work(Work),
    /// The run (whose inbox it waited on) is over.
    Bye(String),
}

/// The next message in the agent's work inbox (or, with `waiting`, that
/// run's inbox), or `None` after half a second. Messages not signed with
/// the token, not for this agent, or not from a controller are dropped
/// with a warning.
async fn next_message(
    conn: &mut super::link::Conn,
    me: &Me,
    waiting: Option<&str>,
    url: &str,
) -> Result<Option<Popped>, DistributedError> {
    let name = &me.reg.name;
    let mut keys = vec![protocol::inbox(name)];
    if let Some(run) = waiting {
        keys.push(protocol::run_inbox(name, run));
    }
    let popped: Option<(String, String)> = conn
        .blpop(&keys, INBOX_POLL_S)
        .await
        .map_err(|e| link::failed(url, "reading the inbox", e))?;
    let Some((_, text)) = popped else {
        return Ok(None);
    };
    let Some((sealed, message)) = unseal(me, &text) else {
        return Ok(None);
    };
    Ok(match message {
        ToAgent::Work(work) if sealed.run == work.run => Some(Popped::Work(work)),
        ToAgent::Bye { run } if Some(run.as_str()) == waiting && sealed.run == run => {
            Some(Popped::Bye(run))
        }
        _ => None,
    })
}

/// A sealed message to this agent, checked: signed with the token, in this
/// protocol, from a controller, to this agent.
fn unseal(me: &Me, text: &str) -> Option<(Sealed, ToAgent)> {
    let name = &me.reg.name;
    let Ok(sealed) = serde_json::from_str::<Sealed>(text) else {
        tracing::warn!("agent {name}: ignoring a message that is not rlbench's");
        return None;
    };
    if !sealed.verified(&me.token) {
        tracing::warn!(
            "agent {name}: ignoring a message not signed with this agent's token \
             (or of another protocol version)"
        );
        return None;
    }
    if sealed.to != *name || sealed.from != protocol::CONTROLLER {
        tracing::warn!("agent {name}: ignoring a message for {:?}", sealed.to);
        return None;
    }
    match serde_json::from_str::<ToAgent>(&sealed.body) {
        Ok(m) => Some((sealed, m)),
        Err(_) => {
            tracing::warn!("agent {name}: ignoring a signed message it cannot read");
            None
        }
    }
}

/// Whether to do `work`: a run it has not served (`fresh`), handed out
/// recently on the coordinator's clock, by the controller that leased it.
async fn accept(
    conn: &mut super::link::Conn,
    me: &Me,
    work: &Work,
    fresh: bool,
    url: &str,
) -> Result<Result<(), String>, DistributedError> {
    if !fresh {
        return Ok(Err("it served that run already (a replay)".into()));
    }
    let now = link::time(conn)
        .await
        .map_err(|e| link::failed(url, "reading its clock", e))?;
    let lease: Option<String> = conn
        .get(protocol::lease(&me.reg.name))
        .await
        .map_err(|e| link::failed(url, "reading its lease", e))?;
    Ok(if lease.as_deref() != Some(work.run.as_str()) {
        Err("the run does not hold this agent's lease".into())
    } else if (now - work.issued_us).abs() > protocol::WORK_FRESH_US {
        Err(format!(
            "handed out {:.0} s ago on the coordinator's clock (a replay)",
            (now - work.issued_us) as f64 / 1e6
        ))
    } else {
        Ok(())
    })
}

/// The controller's beat as an agent reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Beating {
    /// Signed, of this run, at most [`protocol::BEAT_FRESH_US`] old.
    Fresh,
    /// There, but old or not the controller's: it stopped beating.
    Stale,
    /// Not there, or the coordinator does not answer: the coordinator's
    /// trouble (a restart forgets the beat) as likely as the controller's.
    Unknown,
}

/// The controller of `run`'s last beat, by the coordinator's clock.
async fn controller_beat(conn: &mut super::link::Conn, token: &Token, run: &str) -> Beating {
    let Ok(now) = link::time(conn).await else {
        return Beating::Unknown;
    };
    let text = match conn.get::<_, Option<String>>(protocol::beat(run)).await {
        Ok(Some(text)) => text,
        _ => return Beating::Unknown,
    };
    let Ok(sealed) = serde_json::from_str::<Sealed>(&text) else {
        return Beating::Stale;
    };
    if !sealed.verified(token) || sealed.run != run || sealed.from != protocol::CONTROLLER {
        return Beating::Stale;
    }
    match serde_json::from_str::<Beat>(&sealed.body) {
        Ok(b) if b.at_us == sealed.at_us && now - b.at_us <= protocol::BEAT_FRESH_US => {
            Beating::Fresh
        }
        _ => Beating::Stale,
    }
}

/// The controller's life as an agent watches it: gone once no fresh beat
/// was seen for [`protocol::DEAD_MAN_GRACE_MS`] of watching while its beat
/// is there and old (a controller killed leaves it so: within 2 s of its
/// last beat, all told), or for [`UNKNOWN_WITHIN`] while the beat cannot be
/// read at all (a coordinator restarting forgets it; the controller writes
/// it again within a beat of reconnecting). Time the agent itself was held
/// up (its writes retried while the coordinator refused them: then the
/// controller's beats were refused too) does not count.
struct DeadMan {
    seen: Instant,
    looked: Instant,
}

/// How long a beat that cannot be read at all is waited for.
const UNKNOWN_WITHIN: Duration = Duration::from_secs(10);

impl DeadMan {
    fn new() -> DeadMan {
        DeadMan {
            seen: Instant::now(),
            looked: Instant::now(),
        }
    }

    /// Looks at the beat: false once the controller is gone.
    async fn alive(&mut self, conn: &mut super::link::Conn, token: &Token, run: &str) -> bool {
        let now = Instant::now();
        if now - self.looked > Duration::from_millis(protocol::DEAD_MAN_GRACE_MS / 2) {
            self.seen = now;
        }
        self.looked = now;
        let grace = match controller_beat(conn, token, run).await {
            Beating::Fresh => {
                self.seen = Instant::now();
                return true;
            }
            Beating::Stale => Duration::from_millis(protocol::DEAD_MAN_GRACE_MS),
            Beating::Unknown => UNKNOWN_WITHIN,
        };
        self.seen.elapsed() <= grace
    }
}

/// Registers (again), signed afresh: the heartbeat is the coordinator's
/// clock, in ms. Keeps its name's claim and its keys alive.
async fn beat(
    conn: &mut super::link::Conn,
    url: &str,
    me: &mut Me,
) -> Result<(), DistributedError> {
    let now = link::time(conn)
        .await
        .map_err(|e| link::failed(url, "reading its clock", e))?;
    if !claim(conn, url, me).await? {
        return Err(DistributedError::Agents(format!(
            "another agent took the name {:?} at {}",
            me.reg.name,
            link::redacted(url)
        )));
    }
    me.reg.beat_us = now;
    me.beats += 1;
    let details = serde_json::to_string(&me.reg).unwrap_or_default();
    let sealed = Sealed::new(
        &me.token,
        "",
        &me.reg.name,
        "",
        me.beats,
        now,
        "registration",
        details,
    );
    let name = &me.reg.name;
    let _: () = redis::pipe()
        .hset(
            protocol::agent(name),
            "registration",
            serde_json::to_string(&sealed).unwrap_or_default(),
        )
        .expire(protocol::agent(name), protocol::AGENT_TTL_S)
        .zadd(protocol::agents(), name, now / 1_000)
        .expire(protocol::agents(), protocol::AGENT_TTL_S)
        .expire(protocol::inbox(name), protocol::AGENT_TTL_S)
        .query_async(conn)
        .await
        .map_err(|e| link::failed(url, "registering", e))?;
    Ok(())
}

/// How an arm ended for the agent, beside an error.
enum ArmEnd {
    Done,
    /// The run is over (its controller said so).
    Bye,
    /// Its controller stopped beating: the load was stopped.
    ControllerGone,
}

/// One arm: plan, anchors, ready, start, load with its events streamed,
/// then how it ended.
async fn run_arm(
    work: &Work,
    args: &AgentArgs,
    conn: &mut super::link::Conn,
    inbox: &mut super::link::Conn,
    me: &mut Me,
    run_seq: &mut Sequence,
    interrupt: &Interrupt,
) -> Result<ArmEnd, Error> {
    let url = &args.coordinator;
    let failed = |what: &str| {
        let what = what.to_string();
        move |e: redis::RedisError| Error::from(link::failed(url, &what, e))
    };
    let mut plan = plan_of(work, args.allow_remote_targets)?;
    let clock = match (work.estimate_clock, args.clock) {
        (true, ClockSource::OwnWall { shift_us }) => ClockSource::Coordinator {
            wall_shift_us: shift_us,
        },
        (_, clock) => clock,
    };
    let seq = Arc::new(AtomicU64::new(1));
    let origin = Instant::now();
    let origin_mono_us = super::clock::monotonic_us();
    let mut anchors = Vec::new();
    for _ in 0..2 {
        let a = link::anchor(conn, origin, clock)
            .await
            .map_err(failed("reading its clock"))?;
        say(conn, me, work, &seq, &FromAgent::Anchor(a))
            .await
            .map_err(failed("writing"))?;
        anchors.push(a);
    }
    let lanes = std::thread::available_parallelism().map_or(1, |n| n.get());
    say(conn, me, work, &seq, &FromAgent::Ready { lanes })
        .await
        .map_err(failed("writing"))?;
    // The start, within a bound; the agent keeps beating meanwhile, and
    // gives up when its controller stops beating.
    let deadline = Instant::now() + START_WITHIN;
    let run_inbox = protocol::run_inbox(&me.reg.name, &work.run);
    let mut dead_man = DeadMan::new();
    let (at_us, phase_us) = loop {
        if Instant::now() >= deadline {
            return Err(Error::environment(format!(
                "no start for arm {} within {START_WITHIN:?}",
                work.arm
            )));
        }
        let popped: Option<(String, String)> = tokio::select! {
            biased;
            () = interrupt.wait() => return Err(Error::interrupted()),
            p = inbox.blpop(&run_inbox, INBOX_POLL_S) => p.map_err(failed("reading the inbox"))?,
        };
        if let Err(e) = beat(conn, url, me).await {
            tracing::warn!("agent {}: {e}", me.reg.name);
        }
        let message = popped
            .and_then(|(_, text)| unseal(me, &text))
            .filter(|(s, _)| s.run == work.run && run_seq.take(s.seq));
        match message.map(|(_, m)| m) {
            Some(ToAgent::Start {
                run,
                arm,
                at_us,
                phase_us,
            }) if run == work.run && arm == work.arm => break (at_us, phase_us),
            Some(ToAgent::Stop { run, arm }) if run == work.run && arm == work.arm => {
                return Err(Error::interrupted());
            }
            Some(ToAgent::Bye { run }) if run == work.run => return Ok(ArmEnd::Bye),
            _ => {}
        }
        if !dead_man.alive(conn, &me.token, &work.run).await {
            tracing::warn!(
                "agent {}: the controller of run {} stopped beating before the start",
                me.reg.name,
                work.run
            );
            return Ok(ArmEnd::ControllerGone);
        }
    };
    plan.phase_us = Some(phase_us);
    let mapping = super::clock::Mapping::new(anchors).expect("two anchors were taken");
    let (at_local, _) = mapping.to_local(at_us);
    let start = if at_local >= 0 {
        origin + Duration::from_micros(at_local as u64)
    } else {
        origin
    };
    let start_local_us = (start - origin).as_micros() as i64;
    say(
        conn,
        me,
        work,
        &seq,
        &FromAgent::Started {
            start_local_us,
            origin_mono_us,
        },
    )
    .await
    .map_err(failed("writing"))?;
    tokio::time::sleep_until(start).await;

    // Beside the load: anchors every quarter second, the run's inbox
    // watched for a stop, the controller's beat for its life; events
    // deflated and streamed.
    let stopped = Arc::new(Notify::new());
    let finished = Arc::new(AtomicBool::new(false));
    let gone = Arc::new(AtomicBool::new(false));
    let bye = Arc::new(AtomicBool::new(false));
    let signer = Arc::new(Me {
        reg: me.reg.clone(),
        token: me.token.clone(),
        beats: me.beats,
    });
    // Its own connection: a reading queued behind a chunk is a loose one.
    let clock_conn = link::connect(url).await?;
    let (take_tx, take_rx) = mpsc::channel::<(usize, u64)>(8);
    let beside = tokio::spawn(beside_the_load(Beside {
        conn: clock_conn,
        url: url.clone(),
        me: signer.clone(),
        work: work.clone(),
        seq: seq.clone(),
        origin,
        clock,
        stopped: stopped.clone(),
        gone: gone.clone(),
        bye: bye.clone(),
        finished: finished.clone(),
        run_seq: std::mem::take(run_seq),
        takes: take_tx,
    }));
    let (tx, rx) = mpsc::channel::<Batch>(16_384);
    let streamer = tokio::spawn(stream_events(Streamer {
        conn: conn.clone(),
        me: signer.clone(),
        work: work.clone(),
        seq: seq.clone(),
        gone: gone.clone(),
        rx,
    }));
    let counters = Arc::new(Counters::default());
    // Every load of the arm (its own, and segments it takes over) stops
    // at once.
    let (halt, halted) = tokio::sync::watch::channel(false);
    let (own_events, own_counters) = (tx.clone(), counters.clone());
    let own = async {
        let report = load::run(&plan, own_events, own_counters, halt_of(&halted), start).await;
        finished.store(true, Ordering::Relaxed);
        report
    };
    let taken = take_over(TakeOver {
        work,
        allow_remote: args.allow_remote_targets,
        phase_us,
        start,
        conn: conn.clone(),
        me: signer.clone(),
        seq: seq.clone(),
        events: tx,
        counters,
        halted: halted.clone(),
        takes: take_rx,
    });
    let loads = async { tokio::join!(own, taken) };
    tokio::pin!(loads);
    let (mut report, taken) = tokio::select! {
        r = &mut loads => r,
        () = async {
            tokio::select! {
                () = interrupt.wait() => {}
                () = stopped.notified() => {}
            }
        } => {
            let _ = halt.send(true);
            loads.await
        }
    };
    for t in taken {
        report.scheduled += t.scheduled;
        report.not_sent.add(&t.not_sent);
        report.send_window = report.send_window.max(t.send_window);
        report.interrupted |= t.interrupted;
    }
    let (beside_seq, beats) = match beside.await {
        Ok(b) => b,
        Err(_) => (Sequence::default(), me.beats),
    };
    *run_seq = beside_seq;
    me.beats = me.beats.max(beats);
    let streamed = streamer.await;
    if gone.load(Ordering::Relaxed) {
        tracing::warn!(
            "agent {}: the controller of run {} stopped beating: its load was stopped",
            me.reg.name,
            work.run
        );
        return Ok(ArmEnd::ControllerGone);
    }
    let sent = match streamed {
        Ok(Ok(n)) => n,
        Ok(Err(e)) => return Err(failed("streaming events")(e)),
        Err(_) => return Err(Error::environment("the event streamer stopped")),
    };
    let last = link::anchor(conn, origin, clock)
        .await
        .map_err(failed("reading its clock"))?;
    say(conn, me, work, &seq, &FromAgent::Anchor(last))
        .await
        .map_err(failed("writing"))?;
    let ended = Ended {
        scheduled: report.scheduled,
        not_sent: report.not_sent,
        paced_us: report.send_window.as_micros() as u64,
        interrupted: report.interrupted,
        events: sent,
    };
    say(conn, me, work, &seq, &FromAgent::Ended(ended))
        .await
        .map_err(failed("writing"))?;
    if interrupt.fired() {
        return Err(Error::interrupted());
    }
    Ok(if bye.load(Ordering::Relaxed) {
        ArmEnd::Bye
    } else {
        ArmEnd::Done
    })
}

/// What runs beside the load.
struct Beside {
    conn: super::link::Conn,
    url: String,
    me: Arc<Me>,
    work: Work,
    seq: Arc<AtomicU64>,
    origin: Instant,
    clock: ClockSource,
    stopped: Arc<Notify>,
    gone: Arc<AtomicBool>,
    bye: Arc<AtomicBool>,
    /// Set when the load ended: this stops too.
    finished: Arc<AtomicBool>,
    run_seq: Sequence,
    /// Where a lost agent's segment to take over is handed on (dropped
    /// once this ends: no taking over once the agent's own load ended).
    takes: mpsc::Sender<(usize, u64)>,
}

/// Every [`ANCHOR_EVERY`]: an anchor; a look into the run's inbox for a
/// stop, a segment to take over, or the run's end (looked into, never waited on: the load must not
/// wait for it); the controller's beat (gone: the load stops); and each
/// second a heartbeat. Ends when the load ended or is told to stop; gives
/// back the run's inbox's count and its beats.
async fn beside_the_load(mut b: Beside) -> (Sequence, u64) {
    let mut every = tokio::time::interval(ANCHOR_EVERY);
    every.tick().await;
    let mut ticks = 0u64;
    let mut me = Me {
        reg: b.me.reg.clone(),
        token: b.me.token.clone(),
        beats: b.me.beats,
    };
    let inbox = protocol::run_inbox(&me.reg.name, &b.work.run);
    let mut dead_man = DeadMan::new();
    loop {
        every.tick().await;
        if b.finished.load(Ordering::Relaxed) {
            return (b.run_seq, me.beats);
        }
        if let Ok(a) = link::anchor(&mut b.conn, b.origin, b.clock).await {
            let _ = say(&mut b.conn, &me, &b.work, &b.seq, &FromAgent::Anchor(a)).await;
        }
        let popped: redis::RedisResult<Option<String>> = b.conn.lpop(&inbox, None).await;
        if let Ok(Some(text)) = popped {
            let message = unseal(&me, &text)
                .filter(|(s, _)| s.run == b.work.run && b.run_seq.take(s.seq))
                .map(|(_, m)| m);
            match message {
                Some(ToAgent::Stop { run, arm }) if run == b.work.run && arm == b.work.arm => {
                    b.stopped.notify_one();
                    return (b.run_seq, me.beats);
                }
                Some(ToAgent::Bye { run }) if run == b.work.run => {
                    b.bye.store(true, Ordering::Relaxed);
                    b.stopped.notify_one();
                    return (b.run_seq, me.beats);
                }
                Some(ToAgent::Take {
                    run,
                    arm,
                    segment,
                    from_us,
                }) if run == b.work.run && arm == b.work.arm => {
                    let _ = b.takes.try_send((segment, from_us));
                }
                _ => {}
            }
        }
        if !dead_man.alive(&mut b.conn, &me.token, &b.work.run).await {
            b.gone.store(true, Ordering::Relaxed);
            b.stopped.notify_one();
            return (b.run_seq, me.beats);
        }
        ticks += 1;
        if ticks % 4 == 0 {
            if let Err(e) = beat(&mut b.conn, &b.url, &mut me).await {
                tracing::warn!("agent {}: {e}", me.reg.name);
            }
        }
    }
}

/// This machine's name, as the kernel has it (for the agents' list).
pub(super) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}
