//! One arm as an agent runs it, stage by stage: the plan built and its
//! clock anchored, ready said; the start waited for (within a bound,
//! beating, watching its controller); the start said; the load run with
//! its events streamed and what runs beside it; then how it ended.

use super::args::AgentArgs;
use super::beside::{beside_the_load, Beside};
use super::dead_man::{controller_beat, Beating, DeadMan};
use super::inbox::{unseal, INBOX_POLL_S};
use super::registration::beat;
use crate::distributed::link::{self, ClockSource};
use crate::distributed::outbox::{stream_events, Streamer};
use crate::distributed::protocol::{self, Ended, FromAgent, ToAgent, Work};
use crate::distributed::seal::Sequence;
use crate::distributed::takeover::{halt_of, take_over, TakeOver};
use crate::distributed::time_line::{Anchor, Mapping};
use crate::distributed::voice::{say, Chain, Me};
use crate::distributed::work::plan_of;
use crate::error::Error;
use crate::events::Batch;
use crate::interrupt::Interrupt;
use crate::load::{self, Counters, LoadReport};
use redis::AsyncCommands;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

/// How long an agent waits for the start once it said it is ready.
const START_WITHIN: Duration = Duration::from_secs(60);
/// How long past its instant a start is still gone by (µs): the
/// controller fixes it half a second ahead.
const START_LATE_US: i64 = 5_000_000;

/// How an arm ended for the agent, beside an error.
pub(super) enum ArmEnd {
    Done,
    /// The run is over (its controller said so).
    Bye,
    /// Its controller stopped beating: the load was stopped.
    ControllerGone,
}

/// One arm under way: what it was handed, and what the agent says with.
struct Arm<'a> {
    work: &'a Work,
    args: &'a AgentArgs,
    url: &'a str,
    conn: &'a mut crate::distributed::link::Conn,
    me: &'a mut Me,
    /// Its chain of entries in the arm's stream.
    chain: Chain,
    clock: ClockSource,
    /// Its local times count from here.
    origin: Instant,
}

/// An error saying the coordinator at `url` failed the agent at `what`.
fn failed<'u>(url: &'u str, what: &'u str) -> impl Fn(redis::RedisError) -> Error + 'u {
    move |e: redis::RedisError| Error::from(link::failed(url, what, e))
}

/// One arm: plan, anchors, ready, start, load with its events streamed,
/// then how it ended. `conns`: the agent's connection, and the one it
/// waits on its inboxes with.
pub(super) async fn run_arm(
    work: &Work,
    args: &AgentArgs,
    (conn, inbox): (
        &mut crate::distributed::link::Conn,
        &mut crate::distributed::link::Conn,
    ),
    me: &mut Me,
    chain: &Chain,
    run_seq: &mut Sequence,
    interrupt: &Interrupt,
) -> Result<ArmEnd, Error> {
    let mut plan = plan_of(work, args.allow_remote_targets)?;
    let clock = match (work.estimate_clock, args.clock) {
        (true, ClockSource::OwnWall { shift_us }) => ClockSource::Coordinator {
            wall_shift_us: shift_us,
        },
        (_, clock) => clock,
    };
    let mut arm = Arm {
        work,
        args,
        url: &args.coordinator,
        conn,
        me,
        chain: chain.clone(),
        clock,
        origin: Instant::now(),
    };
    let origin_mono_us = crate::distributed::time_line::monotonic_us();
    let anchors = arm.ready().await?;
    let (at_us, phase_us) = match arm.wait_start(inbox, run_seq, interrupt).await? {
        Ok(at) => at,
        Err(end) => return Ok(end),
    };
    plan.phase_us = Some(phase_us);
    let start = arm.say_started(anchors, at_us, origin_mono_us).await?;
    tokio::time::sleep_until(start).await;
    let loaded = arm.load(&plan, phase_us, start, run_seq, interrupt).await?;
    if loaded.gone {
        if let Some(why) = loaded.blame {
            return Err(Error::environment(why));
        }
        tracing::warn!(
            "agent {}: the controller of run {} stopped beating: its load was stopped",
            arm.me.reg.name,
            work.run
        );
        return Ok(ArmEnd::ControllerGone);
    }
    arm.say_ended(loaded.report, loaded.streamed).await?;
    if interrupt.fired() {
        return Err(Error::interrupted());
    }
    Ok(if loaded.bye {
        ArmEnd::Bye
    } else {
        ArmEnd::Done
    })
}

/// The arm's load, run: the report of its own segment and those it took
/// over, what the streamer made of its events, and whether its controller
/// was gone or said the run is over.
struct Loaded {
    report: LoadReport,
    streamed: Result<redis::RedisResult<u64>, tokio::task::JoinError>,
    gone: bool,
    /// Why it counted its controller gone, when the coordinator is to blame.
    blame: Option<String>,
    bye: bool,
}

/// What the load and what runs beside it share: the load stopped, ended,
/// the controller gone, the run over.
struct Flags {
    stopped: Arc<Notify>,
    finished: Arc<AtomicBool>,
    streamed: Arc<AtomicBool>,
    gone: Arc<AtomicBool>,
    bye: Arc<AtomicBool>,
    blame: Arc<std::sync::Mutex<Option<String>>>,
}

impl Arm<'_> {
    /// Says one entry in the arm's stream.
    async fn say(&mut self, message: &FromAgent) -> Result<(), Error> {
        say(self.conn, &self.chain, message)
            .await
            .map_err(failed(self.url, "writing"))
    }

    /// A reading of the coordinator's clock, local time from the origin.
    async fn anchor(&mut self) -> Result<Anchor, Error> {
        link::anchor(self.conn, self.origin, self.clock)
            .await
            .map_err(failed(self.url, "reading its clock"))
    }

    /// Two anchors said, then ready: the anchors.
    async fn ready(&mut self) -> Result<Vec<Anchor>, Error> {
        let mut anchors = Vec::new();
        for _ in 0..2 {
            let a = self.anchor().await?;
            self.say(&FromAgent::Anchor(a)).await?;
            anchors.push(a);
        }
        let lanes = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.say(&FromAgent::Ready { lanes }).await?;
        Ok(anchors)
    }

    /// The start, within a bound: `(at_us, phase_us)`, or how the arm
    /// ended before it. The agent keeps beating meanwhile, and gives up
    /// when its controller stops beating.
    async fn wait_start(
        &mut self,
        inbox: &mut crate::distributed::link::Conn,
        run_seq: &mut Sequence,
        interrupt: &Interrupt,
    ) -> Result<Result<(i64, i64), ArmEnd>, Error> {
        let work = self.work;
        let deadline = Instant::now() + START_WITHIN;
        let run_inbox = protocol::run_inbox(&self.me.reg.name, &work.run);
        let mut dead_man = DeadMan::new();
        loop {
            if Instant::now() >= deadline {
                return Err(Error::environment(format!(
                    "no start for arm {} within {START_WITHIN:?}",
                    work.arm
                )));
            }
            let popped: Option<(String, String)> = tokio::select! {
                biased;
                () = interrupt.wait() => return Err(Error::interrupted()),
                p = inbox.blpop(&run_inbox, INBOX_POLL_S) => p.map_err(failed(self.url, "reading the inbox"))?,
            };
            if let Err(e) = beat(self.conn, self.url, self.me).await {
                tracing::warn!("agent {}: {e}", self.me.reg.name);
            }
            let message = popped
                .and_then(|(key, text)| unseal(self.me, &key, &text))
                .filter(|(s, _)| s.run == work.run && run_seq.take(s.seq));
            match message.map(|(_, m)| m) {
                Some(ToAgent::Start {
                    run,
                    arm,
                    at_us,
                    phase_us,
                }) if run == work.run && arm == work.arm => {
                    if self.start_is_live(at_us).await {
                        return Ok(Ok((at_us, phase_us)));
                    }
                    tracing::warn!(
                        "agent {}: ignoring a start of arm {} that is late or whose controller \
                         is not beating (a replay)",
                        self.me.reg.name,
                        work.arm
                    );
                }
                Some(ToAgent::Stop { run, arm }) if run == work.run && arm == work.arm => {
                    return Err(Error::interrupted());
                }
                Some(ToAgent::Bye { run }) if run == work.run => return Ok(Err(ArmEnd::Bye)),
                _ => {}
            }
            if !dead_man.alive(self.conn, &self.me.token, &work.run).await {
                if let Some(why) = dead_man.coordinator_blamed() {
                    return Err(Error::environment(why));
                }
                tracing::warn!(
                    "agent {}: the controller of run {} stopped beating before the start",
                    self.me.reg.name,
                    work.run
                );
                return Ok(Err(ArmEnd::ControllerGone));
            }
        }
    }

    /// Whether a start at `at_us` (the coordinator's clock) is one to go
    /// by: not long past, and its controller beating now.
    async fn start_is_live(&mut self, at_us: i64) -> bool {
        let Ok(now) = link::time(self.conn).await else {
            return false;
        };
        now - at_us <= START_LATE_US
            && controller_beat(self.conn, &self.me.token, &self.work.run).await == Beating::Fresh
    }

    /// The start on the agent's own clock, placed by its `anchors`, and
    /// said (with where its origin is on the host's monotonic clock).
    async fn say_started(
        &mut self,
        anchors: Vec<Anchor>,
        at_us: i64,
        origin_mono_us: i64,
    ) -> Result<Instant, Error> {
        let origin = self.origin;
        let mapping = Mapping::new(anchors).expect("two anchors were taken");
        let (at_local, _) = mapping.to_local(at_us);
        let start = if at_local >= 0 {
            origin + Duration::from_micros(at_local as u64)
        } else {
            origin
        };
        let start_local_us = (start - origin).as_micros() as i64;
        self.say(&FromAgent::Started {
            start_local_us,
            origin_mono_us,
        })
        .await?;
        Ok(start)
    }

    /// Beside the load: anchors every quarter second, the run's inbox
    /// watched for a stop, the controller's beat for its life; events
    /// deflated and streamed.
    async fn load(
        &mut self,
        plan: &load::Plan,
        phase_us: i64,
        start: Instant,
        run_seq: &mut Sequence,
        interrupt: &Interrupt,
    ) -> Result<Loaded, Error> {
        let flags = Flags {
            stopped: Arc::new(Notify::new()),
            finished: Arc::new(AtomicBool::new(false)),
            streamed: Arc::new(AtomicBool::new(false)),
            gone: Arc::new(AtomicBool::new(false)),
            bye: Arc::new(AtomicBool::new(false)),
            blame: Arc::new(std::sync::Mutex::new(None)),
        };
        let signer = Arc::new(self.me.clone());
        // Its own connection: a reading queued behind a chunk is a loose one.
        let clock_conn = link::connect(self.url).await?;
        let (take_tx, take_rx) = mpsc::channel::<(usize, u64)>(8);
        let beside = tokio::spawn(beside_the_load(Beside {
            conn: clock_conn,
            url: self.url.to_string(),
            me: signer.clone(),
            work: self.work.clone(),
            chain: self.chain.clone(),
            origin: self.origin,
            clock: self.clock,
            stopped: flags.stopped.clone(),
            gone: flags.gone.clone(),
            bye: flags.bye.clone(),
            blame: flags.blame.clone(),
            finished: flags.finished.clone(),
            streamed: flags.streamed.clone(),
            run_seq: std::mem::take(run_seq),
            takes: Some(take_tx),
        }));
        let (tx, rx) = mpsc::channel::<Batch>(16_384);
        let streamer = tokio::spawn(stream_events(Streamer {
            conn: self.conn.clone(),
            chain: self.chain.clone(),
            stream: self.work.stream.clone(),
            gone: flags.gone.clone(),
            rx,
        }));
        let counters = Arc::new(Counters::default());
        // Every load of the arm (its own, and segments it takes over) stops
        // at once.
        let (halt, halted) = tokio::sync::watch::channel(false);
        let (own_events, own_counters) = (tx.clone(), counters.clone());
        let own = async {
            let report = load::run(plan, own_events, own_counters, halt_of(&halted), start).await;
            flags.finished.store(true, Ordering::Relaxed);
            report
        };
        let taken = take_over(TakeOver {
            work: self.work,
            allow_remote: self.args.allow_remote_targets,
            phase_us,
            start,
            conn: self.conn.clone(),
            me: signer.clone(),
            chain: self.chain.clone(),
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
                    () = flags.stopped.notified() => {}
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
        // The agent beats on while its events wait for the controller.
        let streamed = streamer.await;
        flags.streamed.store(true, Ordering::Relaxed);
        let (beside_seq, beats) = match beside.await {
            Ok(b) => b,
            Err(_) => (Sequence::default(), self.me.beats),
        };
        *run_seq = beside_seq;
        self.me.beats = self.me.beats.max(beats);
        Ok(Loaded {
            report,
            streamed,
            gone: flags.gone.load(Ordering::Relaxed),
            blame: flags.blame.lock().ok().and_then(|mut b| b.take()),
            bye: flags.bye.load(Ordering::Relaxed),
        })
    }

    /// How its load ended, said after a last anchor.
    async fn say_ended(
        &mut self,
        report: LoadReport,
        streamed: Result<redis::RedisResult<u64>, tokio::task::JoinError>,
    ) -> Result<(), Error> {
        let sent = match streamed {
            Ok(Ok(n)) => n,
            Ok(Err(e)) => return Err(failed(self.url, "streaming events")(e)),
            Err(_) => return Err(Error::environment("the event streamer stopped")),
        };
        let last = self.anchor().await?;
        self.say(&FromAgent::Anchor(last)).await?;
        let ended = Ended {
            scheduled: report.scheduled,
            not_sent: report.not_sent,
            paced_us: report.send_window.as_micros() as u64,
            interrupted: report.interrupted,
            events: sent,
            // Filled in as it is signed: the chain before it.
            entries: 0,
            digest: String::new(),
        };
        self.say(&FromAgent::Ended(ended)).await
    }
}
