//! `rlbench agent`: a load agent. It registers with the coordinator and
//! beats every second; for each arm the controller hands it, it builds the
//! arm's load plan from the scenario exactly as `run` does (`app::plan`),
//! takes its segment of the schedule, anchors its clock to the
//! coordinator's, starts at the common instant and runs the same load code
//! as one machine (`load::run`), streaming its events back in deflated
//! chunks with an anchor every second, then says how its load ended.

use super::link::{self, ClockSource, DistributedError};
use super::protocol::{self, Ended, FromAgent, Registration, ToAgent, Work};
use crate::error::Error;
use crate::events::binary::Encoder;
use crate::events::Batch;
use crate::interrupt::Interrupt;
use crate::load::{self, Counters, Segment};
use redis::aio::MultiplexedConnection;
use redis::AsyncCommands;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

/// What `rlbench agent` was asked, checked.
pub(crate) struct AgentArgs {
    pub coordinator: String,
    pub name: String,
    /// `(index, of)`: placed by a Kubernetes Indexed Job.
    pub index: Option<(usize, usize)>,
    /// Exit after the first run ends.
    pub once: bool,
    pub clock: ClockSource,
}

/// How long an agent waits for the start once it said it is ready.
const START_WITHIN: Duration = Duration::from_secs(60);
/// A chunk is sent once it holds this many bytes, or is this old.
const CHUNK_BYTES: usize = 256 * 1024;
const CHUNK_AGE: Duration = Duration::from_millis(250);
/// How often an agent reads the coordinator's clock while its load runs:
/// the shorter the pieces between readings, the less a slewing clock can
/// stray from them.
const ANCHOR_EVERY: Duration = Duration::from_millis(250);
/// How long a blocking read of the inbox waits before the agent beats.
const INBOX_POLL_S: f64 = 1.0;

/// Serves until interrupted (or, with `--once`, until a run ends).
pub(crate) async fn serve(args: &AgentArgs, interrupt: &Interrupt) -> Result<(), Error> {
    let url = &args.coordinator;
    let mut conn = link::connect(url).await?;
    let mut inbox_conn = link::connect(url).await?;
    let mut me = Registration {
        name: args.name.clone(),
        index: args.index,
        host: host_name(),
        pid: std::process::id(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        busy: false,
    };
    // Work left for an earlier agent of this name is not this one's.
    let _: () = conn
        .del(protocol::inbox(&me.name))
        .await
        .map_err(|e| link::failed(url, "clearing the inbox", e))?;
    beat(&mut conn, url, &me).await?;
    tracing::info!(
        "agent {}: registered at {}, waiting for work",
        me.name,
        link::shown(url)
    );
    let outcome = loop {
        let message = tokio::select! {
            biased;
            () = interrupt.wait() => break Ok(()),
            m = next_message(&mut inbox_conn, &me.name, url) => m?,
        };
        beat(&mut conn, url, &me).await?;
        match message {
            Some(ToAgent::Work(work)) => {
                me.busy = true;
                beat(&mut conn, url, &me).await?;
                let done = run_arm(&work, args, &mut conn, &mut inbox_conn, &me, interrupt).await;
                me.busy = false;
                if let Err(e) = done {
                    tracing::warn!("agent {}: arm {}: {e}", me.name, work.arm);
                    let failed = FromAgent::Failed {
                        message: e.message.clone(),
                    };
                    let _ = say(&mut conn, &work.stream, &failed).await;
                    if e.exit == crate::error::Exit::Interrupted {
                        break Ok(());
                    }
                }
                beat(&mut conn, url, &me).await?;
            }
            Some(ToAgent::Bye { run }) if args.once => {
                tracing::info!("agent {}: run {run} is over", me.name);
                break Ok(());
            }
            // Stale starts and stops of an arm this agent is not running.
            Some(_) | None => {}
        }
    };
    let _: redis::RedisResult<()> = conn.zrem(protocol::agents(), &me.name).await;
    let _: redis::RedisResult<()> = conn.del(protocol::agent(&me.name)).await;
    outcome
}

/// The next message in the agent's inbox, or `None` after a second.
async fn next_message(
    conn: &mut MultiplexedConnection,
    name: &str,
    url: &str,
) -> Result<Option<ToAgent>, DistributedError> {
    let popped: Option<(String, String)> = conn
        .blpop(protocol::inbox(name), INBOX_POLL_S)
        .await
        .map_err(|e| link::failed(url, "reading the inbox", e))?;
    Ok(
        popped.and_then(|(_, text)| match serde_json::from_str(&text) {
            Ok(m) => Some(m),
            Err(e) => {
                tracing::warn!("agent {name}: ignoring a message that is not rlbench's: {e}");
                None
            }
        }),
    )
}

/// Registers (again): the heartbeat is the coordinator's clock, in ms.
async fn beat(
    conn: &mut MultiplexedConnection,
    url: &str,
    me: &Registration,
) -> Result<(), DistributedError> {
    let now = link::time(conn)
        .await
        .map_err(|e| link::failed(url, "reading its clock", e))?;
    let details = serde_json::to_string(me).unwrap_or_default();
    let _: () = redis::pipe()
        .hset(protocol::agent(&me.name), "registration", details)
        .expire(protocol::agent(&me.name), 60)
        .zadd(protocol::agents(), &me.name, now / 1_000)
        .query_async(conn)
        .await
        .map_err(|e| link::failed(url, "registering", e))?;
    Ok(())
}

/// Adds one entry to the arm's stream.
async fn say(
    conn: &mut MultiplexedConnection,
    stream: &str,
    message: &FromAgent,
) -> redis::RedisResult<()> {
    let body = serde_json::to_string(message).unwrap_or_default();
    let kind = match message {
        FromAgent::Ready { .. } => "ready",
        FromAgent::Anchor(_) => "anchor",
        FromAgent::Started { .. } => "started",
        FromAgent::Ended(_) => "ended",
        FromAgent::Failed { .. } => "failed",
    };
    conn.xadd(
        stream,
        "*",
        &[(protocol::KIND, kind), (protocol::BODY, &body)],
    )
    .await
}

/// The arm's load plan, built from the scenario as `run` builds it, with
/// the controller's targets and this agent's segment.
fn plan_of(work: &Work) -> Result<load::Plan, Error> {
    let mut scenario = crate::scenario::parse(&work.scenario_file, &work.scenario_text)?;
    if let Some(us) = work.duration_us {
        scenario.duration = Duration::from_micros(us);
    }
    let arm = scenario
        .arms
        .iter()
        .find(|a| a.name == work.arm)
        .ok_or_else(|| Error::input(format!("no arm {:?} in {}", work.arm, work.scenario_file)))?;
    let allow_remote = scenario.external.as_ref().is_some_and(|e| e.allow_remote);
    let spec = crate::app::plan::from_scenario(&scenario, arm, &work.run)?;
    let mut plan = spec.plan;
    if !work.targets.is_empty() {
        plan.targets = work
            .targets
            .iter()
            .map(|t| crate::target::target_url(t, allow_remote))
            .collect::<Result<_, _>>()?;
    }
    if work.of == 0 || work.segment >= work.of {
        return Err(Error::input(format!(
            "segment {} of {} does not exist",
            work.segment, work.of
        )));
    }
    plan.segment = Segment {
        index: work.segment,
        of: work.of,
    };
    // The agents together keep the scenario's bound on requests in flight.
    plan.max_in_flight = plan.max_in_flight.div_ceil(work.of).max(1);
    Ok(plan)
}

/// One arm: plan, anchors, ready, start, load with its events streamed,
/// then how it ended.
async fn run_arm(
    work: &Work,
    args: &AgentArgs,
    conn: &mut MultiplexedConnection,
    inbox: &mut MultiplexedConnection,
    me: &Registration,
    interrupt: &Interrupt,
) -> Result<(), Error> {
    let url = &args.coordinator;
    let failed = |what: &str| {
        let what = what.to_string();
        move |e: redis::RedisError| Error::from(link::failed(url, &what, e))
    };
    let mut plan = plan_of(work)?;
    let clock = match (work.estimate_clock, args.clock) {
        (true, ClockSource::OwnWall { shift_us }) => ClockSource::Coordinator {
            wall_shift_us: shift_us,
        },
        (_, clock) => clock,
    };
    let origin = Instant::now();
    let origin_mono_us = super::clock::monotonic_us();
    let mut anchors = Vec::new();
    for _ in 0..2 {
        let a = link::anchor(conn, origin, clock)
            .await
            .map_err(failed("reading its clock"))?;
        say(conn, &work.stream, &FromAgent::Anchor(a))
            .await
            .map_err(failed("writing"))?;
        anchors.push(a);
    }
    let lanes = std::thread::available_parallelism().map_or(1, |n| n.get());
    say(conn, &work.stream, &FromAgent::Ready { lanes })
        .await
        .map_err(failed("writing"))?;
    // The start, within a bound; the agent keeps beating meanwhile.
    let deadline = Instant::now() + START_WITHIN;
    let (at_us, phase_us) = loop {
        if Instant::now() >= deadline {
            return Err(Error::environment(format!(
                "no start for arm {} within {START_WITHIN:?}",
                work.arm
            )));
        }
        let message = tokio::select! {
            biased;
            () = interrupt.wait() => return Err(Error::interrupted()),
            m = next_message(inbox, &me.name, url) => m?,
        };
        beat(conn, url, me).await?;
        match message {
            Some(ToAgent::Start {
                run,
                arm,
                at_us,
                phase_us,
            }) if run == work.run && arm == work.arm => break (at_us, phase_us),
            Some(ToAgent::Stop { run, arm }) if run == work.run && arm == work.arm => {
                return Err(Error::interrupted());
            }
            _ => {}
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
        &work.stream,
        &FromAgent::Started {
            start_local_us,
            origin_mono_us,
        },
    )
    .await
    .map_err(failed("writing"))?;
    tokio::time::sleep_until(start).await;

    // Beside the load: anchors and heartbeats every second, the inbox
    // watched for a stop, events deflated and streamed.
    let stopped = Arc::new(Notify::new());
    // Its own connection: a reading queued behind a chunk is a loose one.
    let clock_conn = link::connect(url).await?;
    let beside = tokio::spawn(beside_the_load(
        clock_conn,
        url.clone(),
        me.clone(),
        work.clone(),
        origin,
        clock,
        stopped.clone(),
    ));
    let (tx, rx) = mpsc::channel::<Batch>(16_384);
    let streamer = tokio::spawn(stream_events(conn.clone(), work.stream.clone(), rx));
    let counters = Arc::new(Counters::default());
    let stop = async {
        tokio::select! {
            () = interrupt.wait() => {}
            () = stopped.notified() => {}
        }
    };
    let report = load::run(&plan, tx, counters, stop, start).await;
    beside.abort();
    let sent = match streamer.await {
        Ok(Ok(n)) => n,
        Ok(Err(e)) => return Err(failed("streaming events")(e)),
        Err(_) => return Err(Error::environment("the event streamer stopped")),
    };
    let last = link::anchor(conn, origin, clock)
        .await
        .map_err(failed("reading its clock"))?;
    say(conn, &work.stream, &FromAgent::Anchor(last))
        .await
        .map_err(failed("writing"))?;
    let ended = Ended {
        scheduled: report.scheduled,
        paced_us: report.send_window.as_micros() as u64,
        interrupted: report.interrupted,
        events: sent,
    };
    say(conn, &work.stream, &FromAgent::Ended(ended))
        .await
        .map_err(failed("writing"))?;
    if interrupt.fired() {
        return Err(Error::interrupted());
    }
    Ok(())
}

/// Every [`ANCHOR_EVERY`]: an anchor, a look into the inbox for a stop,
/// and (each second) a heartbeat. The inbox is looked into, never waited
/// on: a blocking read still pending when the load ends and this task is
/// dropped would take the next message (the next arm's work) with it.
async fn beside_the_load(
    mut conn: MultiplexedConnection,
    url: String,
    me: Registration,
    work: Work,
    origin: Instant,
    clock: ClockSource,
    stopped: Arc<Notify>,
) {
    let stop = serde_json::to_string(&ToAgent::Stop {
        run: work.run.clone(),
        arm: work.arm.clone(),
    })
    .unwrap_or_default();
    let mut every = tokio::time::interval(ANCHOR_EVERY);
    every.tick().await;
    let mut ticks = 0u32;
    loop {
        every.tick().await;
        if let Ok(a) = link::anchor(&mut conn, origin, clock).await {
            let _ = say(&mut conn, &work.stream, &FromAgent::Anchor(a)).await;
        }
        let found: redis::RedisResult<i64> = conn.lrem(protocol::inbox(&me.name), 1, &stop).await;
        if matches!(found, Ok(n) if n > 0) {
            stopped.notify_one();
        }
        ticks += 1;
        if ticks % 4 == 0 {
            if let Err(e) = beat(&mut conn, &url, &me).await {
                tracing::warn!("agent {}: {e}", me.name);
            }
        }
    }
}

/// Encodes the load's events as the trace does, and sends them deflated,
/// a chunk at a time; waits while the controller is far behind. The
/// number of events sent.
async fn stream_events(
    mut conn: MultiplexedConnection,
    stream: String,
    mut rx: mpsc::Receiver<Batch>,
) -> redis::RedisResult<u64> {
    let mut encoder = Encoder::default();
    let mut bytes = Vec::with_capacity(CHUNK_BYTES * 2);
    Encoder::start(&mut bytes).map_err(io)?;
    let mut counts = [0u64; 4];
    let mut sent = 0u64;
    let mut since = Instant::now();
    loop {
        let batch = tokio::select! {
            b = rx.recv() => b,
            () = tokio::time::sleep_until(since + CHUNK_AGE) => Some(Vec::new()),
        };
        let end = batch.is_none();
        for e in batch.iter().flatten() {
            encoder.write(&mut bytes, e).map_err(io)?;
            counts[0] += 1;
            match e.outcome {
                crate::events::Outcome::Admitted => counts[1] += 1,
                crate::events::Outcome::Rejected => counts[2] += 1,
                _ => counts[3] += 1,
            }
        }
        if !bytes.is_empty() && (end || bytes.len() >= CHUNK_BYTES || since.elapsed() >= CHUNK_AGE)
        {
            while conn.xlen::<_, u64>(&stream).await? >= protocol::MAX_UNREAD {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let chunk = deflate(&bytes).map_err(io)?;
            let counted = format!("{} {} {} {}", counts[0], counts[1], counts[2], counts[3]);
            let _: String = conn
                .xadd(
                    &stream,
                    "*",
                    &[
                        (protocol::KIND, protocol::CHUNK.as_bytes()),
                        (protocol::COUNTS, counted.as_bytes()),
                        (protocol::BODY, &chunk),
                    ],
                )
                .await?;
            sent += counts[0];
            counts = [0; 4];
            bytes.clear();
            since = Instant::now();
        } else if bytes.is_empty() {
            since = Instant::now();
        }
        if end {
            return Ok(sent);
        }
    }
}

fn io(e: std::io::Error) -> redis::RedisError {
    redis::RedisError::from(e)
}

fn deflate(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = flate2::write::DeflateEncoder::new(
        Vec::with_capacity(bytes.len() / 4),
        flate2::Compression::fast(),
    );
    out.write_all(bytes)?;
    out.finish()
}

/// This machine's name, as the kernel has it (for the agents' list).
pub(super) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}
