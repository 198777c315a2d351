//! One arm's pipeline, the same for `run` and `attack`: bring its stack up
//! (when rlbench runs the target), get the load ready (`sender`: here or
//! by load agents), send it beside the faults, read what Redis and the
//! limiter counted, probe Retry-After, bring the stack down on every path,
//! and write the arm's record beside its events. [`run_all`] runs a run's
//! arms in order and says how the run ended.

use crate::app::pipeline::arm_record::{self, Gave};
use crate::app::pipeline::journal::Journal;
use crate::app::pipeline::progress::Progress;
use crate::app::pipeline::sender::{Outlet, Sender, Sent};
use crate::app::pipeline::stack_up::stack_up;
use crate::error::{Error, Exit};
use crate::events::clock::ClockSample;
use crate::events::write::EventWriter;
use crate::faults;
use crate::interrupt::Interrupt;
use crate::live::Board;
use crate::load::{self, Counters};
use crate::plan::ArmSpec;
use crate::stack::{redis_use, Stack};
use crate::store::folder::RunFolder;
use crate::store::records::{self, ArmRecord};
use std::sync::Arc;
use tracing::{info, warn};

/// How a run's arms went.
pub(crate) struct Ran {
    /// The arms that finished (an interrupted one too), with their specs' index.
    pub done: Vec<(usize, ArmRecord)>,
    pub interrupted: bool,
    /// An environment failure that stopped the run.
    pub error: Option<Error>,
}

impl Ran {
    /// Ends the journal: run.json says how the run ended.
    pub(crate) fn close(
        &self,
        journal: Journal,
    ) -> (
        crate::store::records::RunRecord,
        Option<crate::store::StoreError>,
    ) {
        let arms = self.done.iter().map(|(_, r)| r.name.clone()).collect();
        journal.close(arms, self.interrupted, self.error.as_ref())
    }

    /// The exit code, once the run's first error (the arms' or a write's)
    /// and the gate's failures are known.
    pub(crate) fn exit(&self, error: Option<&Error>, gate_failures: usize) -> Exit {
        match (error, self.interrupted) {
            (_, true) => Exit::Interrupted,
            (Some(e), false) => e.exit,
            (None, false) if gate_failures == 0 => Exit::Passed,
            (None, false) => Exit::GateFailed,
        }
    }
}

/// Who follows the arms as they run: the terminal's progress lines
/// (unless quiet) and the live page (`run --live`).
#[derive(Clone, Copy)]
pub(crate) struct Followers<'a> {
    pub quiet: bool,
    pub live: Option<&'a Board>,
}

/// What a run's arms run within: where they write, who follows them,
/// what stops them, and who sends their load.
pub(crate) struct Course<'a, 'j> {
    pub folder: &'a RunFolder,
    pub journal: &'a mut Journal<'j>,
    pub run_id: &'a str,
    pub interrupt: &'a Interrupt,
    pub followers: Followers<'a>,
    pub sender: Sender,
}

/// Runs the arms in order; stops after an interrupt or an arm that fails.
pub(crate) async fn run_all(specs: &[ArmSpec], course: &mut Course<'_, '_>) -> Ran {
    let mut ran = Ran {
        done: Vec::new(),
        interrupted: false,
        error: None,
    };
    for (i, spec) in specs.iter().enumerate() {
        let ran_arm = run(spec, course).await;
        if let Some(live) = course.followers.live {
            live.arm_ended();
        }
        let stopped = |e: &Error| Error {
            exit: e.exit,
            message: format!("stopped: arm {} {}", spec.name, e.message),
        };
        match ran_arm {
            Ok((record, broken)) => {
                // Cut short by an error (the coordinator gone, a disk
                // full): the error's exit, not an interrupt's.
                ran.interrupted = record.interrupted && broken.is_none();
                ran.done.push((i, record));
                ran.error = broken.as_ref().map(stopped);
            }
            Err(e) if e.exit == Exit::Interrupted => ran.interrupted = true,
            Err(e) => ran.error = Some(stopped(&e)),
        }
        if ran.interrupted || ran.error.is_some() {
            break;
        }
    }
    ran
}

/// One arm, from stack up to its record on disk; with the error that
/// broke its trace, if one did (the record then says the trace is
/// unfinished, and holds what reached the disk).
pub(crate) async fn run(
    spec: &ArmSpec,
    course: &mut Course<'_, '_>,
) -> Result<(ArmRecord, Option<Error>), Error> {
    if let Some(live) = course.followers.live {
        live.arm_starting(&spec.name);
    }
    let (mut stack, plan) = stack_up(
        spec,
        course.run_id,
        course.interrupt,
        course.followers.quiet,
    )
    .await?;
    // Between the stack's start and its planned end, however that ends,
    // the stack is taken down after, in order (not by Drop's kill).
    let sent = send(spec, course, stack.as_mut(), &plan).await;
    if let Some(mut stack) = stack {
        stack.down().await;
    }
    let (writer, provisional, gave, load_error) = sent?;
    // Sealed when the writer finished; else what reached the disk is kept,
    // and the run stops with the write that failed.
    let (seal, broken) = match writer.finish() {
        Ok(seal) => (Some(seal), None),
        Err(e) => (None, Some(Error::from(e))),
    };
    let record = arm_record::finished(&plan, provisional, Gave { seal, ..gave });
    let written = records::write(&course.folder.arm_record(&spec.name), &record);
    let broken = load_error
        .or(broken)
        .or_else(|| written.err().map(Error::from));
    Ok((record, broken))
}

/// Everything that needs the stack up: the trace opened, the load made
/// ready and sent beside the faults, then what Redis and the limiter
/// counted, the Retry-After probes and the replicas' fallbacks. The trace
/// writer and the provisional record come back to be finished; an error
/// that stopped the load after it began comes back beside what it gave.
async fn send(
    spec: &ArmSpec,
    course: &mut Course<'_, '_>,
    mut stack: Option<&mut Stack>,
    plan: &load::Plan,
) -> Result<(EventWriter, ArmRecord, Gave, Option<Error>), Error> {
    let quiet = course.followers.quiet;
    let target_rps = plan.shape.target_rate(plan.duration);
    let writer = EventWriter::create(&course.folder.trace(&spec.name))?;
    let counters = Arc::new(Counters::default());
    if spec.announce && !quiet {
        announce(spec, plan, target_rps);
    }
    let (redis_nodes, prefix) = match stack.as_deref() {
        Some(stack) if spec.mode.uses_redis() => (
            stack.redis_nodes().await,
            stack.redis_prefix().map(str::to_string),
        ),
        _ => (Vec::new(), None),
    };
    let ready = course
        .sender
        .ready(&spec.name, &plan.targets, course.interrupt)
        .await?;
    let replica_urls = stack.as_deref().map(|s| s.urls()).unwrap_or_default();
    let mut metrics =
        super::limiter_metrics::before(spec.metrics.as_ref(), &replica_urls, course.interrupt)
            .await;
    let redis_before = redis_use::sample(&redis_nodes, None).await;
    ready.wait().await;
    let progress = (!quiet).then(|| Progress::start(&spec.name, plan.duration, counters.clone()));
    let start = ready.start();
    if let Some(m) = metrics.as_mut() {
        m.sample_from(start);
    }
    if let Some(live) = course.followers.live {
        live.arm_begun(
            &spec.name,
            plan.duration,
            counters.clone(),
            start.into_std(),
        );
    }
    let (provisional, clocks) = begin_record(spec, course, target_rps, start)?;
    let outlet = Outlet {
        folder: course.folder,
        arm: &spec.name,
        events: writer.sender(),
        counters,
    };
    let load = course
        .sender
        .send(ready, start, plan, outlet, course.interrupt);
    let faults = async {
        match stack.as_deref_mut() {
            Some(stack) => faults::drive(stack, &spec.faults, start, course.interrupt.wait()).await,
            None => Vec::new(),
        }
    };
    let (loaded, faults) = tokio::join!(load, faults);
    let clock_samples = clocks.finish().await;
    let (sent, load_error) = match loaded {
        Ok(sent) => (sent, None),
        // What reached the disk is kept; the run stops with this error.
        Err(e) => (
            Sent::broken(
                start,
                provisional.epoch_offset_us,
                provisional.epoch_uncertainty_us,
            ),
            Some(e),
        ),
    };
    // Before the probes: their requests are not the load's decisions.
    let redis_after = redis_use::sample(&redis_nodes, prefix.as_deref()).await;
    for f in &faults {
        if let Some(e) = &f.error {
            warn!("arm {}: undoing {}: {e}", spec.name, f.fault);
        }
    }
    if let Some(p) = progress {
        p.finish();
    }
    if let Some(live) = course.followers.live {
        live.arm_ended();
    }
    let limiter_metrics = match metrics {
        Some(m) => Some(m.after(course.interrupt).await),
        None => None,
    };
    let probes = if sent.report.interrupted || spec.probes.keys.is_empty() {
        Vec::new()
    } else {
        probe(spec, plan, course.interrupt).await
    };
    let redis_fallbacks = match stack.as_deref() {
        Some(stack) if spec.mode.uses_redis() => Some(stack.redis_fallbacks().await),
        _ => None,
    };
    let gave = Gave {
        report: sent.report,
        agents: sent.agents,
        max_clock_uncertainty_us: sent.max_clock_uncertainty_us,
        faults,
        probes,
        clock_samples,
        redis_nodes: redis_use::between(&redis_before, &redis_after),
        redis_fallbacks,
        limiter_metrics,
        seal: None,
    };
    Ok((writer, provisional, gave, load_error))
}

/// Before any event: the record a kill leaves, written, and a watch that
/// rewrites it with each clock sample (and the load's reach) every second.
fn begin_record(
    spec: &ArmSpec,
    course: &mut Course<'_, '_>,
    target_rps: f64,
    start: tokio::time::Instant,
) -> Result<(ArmRecord, load::clock_watch::ClockWatch), Error> {
    let provisional = arm_record::provisional(spec, target_rps, load::clock_watch::sample(start));
    let record_path = course.folder.arm_record(&spec.name);
    records::write(&record_path, &provisional)
        .and_then(|()| course.journal.arm_begun(&spec.name))?;
    let clocks = load::clock_watch::ClockWatch::start(start, {
        let mut so_far = provisional.clone();
        move |samples: &[ClockSample]| {
            so_far.clock_samples = samples.to_vec();
            so_far.send_window_s = samples.last().map_or(0.0, |s| s.trace_us as f64 / 1e6);
            // Best effort: a disk that refuses it refuses the trace too,
            // and that error is the one reported.
            let _ = records::write(&record_path, &so_far);
        }
    });
    Ok((provisional, clocks))
}

/// Says the load about to be sent.
fn announce(spec: &ArmSpec, plan: &load::Plan, target_rps: f64) {
    info!(
        "arm {}: {:.0} requests/s ({}) for {:?} across {}",
        spec.name,
        target_rps,
        plan.shape.name(),
        plan.duration,
        plan.targets
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// The Retry-After probes, unless interrupted.
async fn probe(
    spec: &ArmSpec,
    plan: &load::Plan,
    interrupt: &Interrupt,
) -> Vec<crate::store::probes::Probe> {
    tokio::select! {
        biased;
        () = interrupt.wait() => Vec::new(),
        probes = crate::headers::probe::run(
            &plan.targets,
            plan.tls.as_ref(),
            &plan.template,
            &spec.probes.keys,
            plan.timeout,
            spec.probes.max_wait,
        ) => probes,
    }
}
