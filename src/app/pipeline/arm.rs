//! One arm's pipeline, the same for `run` and `attack`: bring its stack up
//! (when rlbench runs the target), drive the load and the faults side by
//! side, probe Retry-After, bring the stack down on every path, and write
//! the arm's record beside its events. [`run_all`] runs a run's arms in
//! order and says how the run ended.

use crate::app::pipeline::journal::Journal;
use crate::app::pipeline::progress::Progress;
use crate::distributed::controller::Controller;
use crate::error::{Error, Exit};
use crate::events::clock::ClockSample;
use crate::events::write::EventWriter;
use crate::faults;
use crate::interrupt::Interrupt;
use crate::live::Board;
use crate::load::schedule::{Schedule, Shape};
use crate::load::{self, Counters};
use crate::plan::{ArmSpec, StackSpec};
use crate::stack::{redis_use, Stack};
use crate::store::folder::RunFolder;
use crate::store::records::{self, ArmRecord};
use std::sync::Arc;

use tracing::{info, warn};

/// Set to make rlbench panic right after the first stack is up: lets a
/// test prove that a panic leaves no replica behind.
pub(crate) const PANIC_HOOK_ENV: &str = "RLBENCH_TEST_PANIC_AFTER_UP";

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
pub(crate) struct Watch<'a> {
    pub quiet: bool,
    pub live: Option<&'a Board>,
}

/// Runs the arms in order; stops after an interrupt or an arm that fails.
pub(crate) async fn run_all(
    specs: &[ArmSpec],
    folder: &RunFolder,
    journal: &mut Journal<'_>,
    run_id: &str,
    interrupt: &Interrupt,
    watch: Watch<'_>,
    mut agents: Option<&mut Agents<'_>>,
) -> Ran {
    let mut ran = Ran {
        done: Vec::new(),
        interrupted: false,
        error: None,
    };
    for (i, spec) in specs.iter().enumerate() {
        let agents = agents.as_deref_mut();
        let ran_arm = run(spec, folder, journal, run_id, interrupt, watch, agents).await;
        if let Some(live) = watch.live {
            live.arm_ended();
        }
        match ran_arm {
            Ok((record, broken)) => {
                // Cut short by an error (the coordinator gone, a disk
                // full): the error's exit, not an interrupt's.
                ran.interrupted = record.interrupted && broken.is_none();
                ran.done.push((i, record));
                if let Some(e) = broken {
                    ran.error = Some(Error {
                        exit: e.exit,
                        message: format!("stopped: arm {} {}", spec.name, e.message),
                    });
                }
            }
            Err(e) if e.exit == Exit::Interrupted => ran.interrupted = true,
            Err(e) => {
                ran.error = Some(Error {
                    exit: e.exit,
                    message: format!("stopped: arm {} {}", spec.name, e.message),
                })
            }
        }
        if ran.interrupted || ran.error.is_some() {
            break;
        }
    }
    ran
}

/// Starts the arm's replicas (and Redis), unless interrupted first.
async fn up(
    spec: &ArmSpec,
    stack: &StackSpec,
    run_id: &str,
    interrupt: &Interrupt,
    quiet: bool,
) -> Result<Stack, Error> {
    if !quiet {
        info!(
            "arm {}: starting {} {} replica(s)",
            spec.name,
            spec.replicas,
            spec.mode.as_str()
        );
    }
    let up = Stack::up(&stack.configs, stack.managed_redis, stack.proxy, run_id);
    let stack = tokio::select! {
        biased;
        () = interrupt.wait() => return Err(Error::interrupted()),
        stack = up => stack?,
    };
    if let (false, Some(said)) = (quiet, stack.redis_said()) {
        info!("arm {}: {said}", spec.name);
    }
    if std::env::var_os(PANIC_HOOK_ENV).is_some() {
        panic!(
            "{PANIC_HOOK_ENV} is set: panicking with {} process(es) up",
            stack.pids().len()
        );
    }
    Ok(stack)
}

/// Load agents on other machines send a run's load (`run --agents`):
/// the controller's hold on them, and what they build each arm's plan from.
pub(crate) struct Agents<'a> {
    pub controller: &'a mut Controller,
    /// The scenario's file name and text, as the agents parse it.
    pub scenario: (&'a str, &'a str),
    /// `run --duration` (µs), in place of the scenario's.
    pub duration_us: Option<u64>,
}

/// Takes the stack down in order (when there is one), then passes `e` on:
/// an error between the stack's start and its planned end leaves nothing
/// running, and not by Drop's kill.
async fn down_then<T>(stack: Option<Stack>, e: Error) -> Result<T, Error> {
    if let Some(mut stack) = stack {
        stack.down().await;
    }
    Err(e)
}

/// One arm, from stack up to its record on disk; with the error that
/// broke its trace, if one did (the record then says the trace is
/// unfinished, and holds what reached the disk).
pub(crate) async fn run(
    spec: &ArmSpec,
    folder: &RunFolder,
    journal: &mut Journal<'_>,
    run_id: &str,
    interrupt: &Interrupt,
    watch: Watch<'_>,
    mut agents: Option<&mut Agents<'_>>,
) -> Result<(ArmRecord, Option<Error>), Error> {
    let quiet = watch.quiet;
    let announce = spec.announce && !quiet;
    if let Some(live) = watch.live {
        live.arm_starting(&spec.name);
    }
    let mut template = spec.plan.template.clone();
    let (mut stack, targets) = match &spec.stack {
        None => {
            crate::target::reachable(&spec.plan.targets).await?;
            template.http = crate::load::tls::handshakes(
                &spec.plan.targets,
                spec.plan.tls.as_ref(),
                template.http,
            )
            .await
            .map_err(Error::environment)?;
            (None, spec.plan.targets.clone())
        }
        Some(wanted) => {
            let stack = up(spec, wanted, run_id, interrupt, !announce)
                .await
                .map_err(|e| match e.exit {
                    Exit::Interrupted => e,
                    _ => Error {
                        exit: e.exit,
                        message: format!("could not start: {}", e.message),
                    },
                })?;
            let parsed = stack
                .urls()
                .iter()
                .map(|u| format!("{u}/api/transfers").parse())
                .collect::<Result<Vec<hyper::Uri>, _>>();
            let targets = match parsed {
                Ok(targets) => targets,
                Err(e) => {
                    // Down in order, not by Drop's kill.
                    let mut stack = stack;
                    stack.down().await;
                    return Err(Error::environment(format!(
                        "a replica reported a bad address: {e}"
                    )));
                }
            };
            (Some(stack), targets)
        }
    };
    let plan = load::Plan {
        targets,
        template,
        shape: spec.plan.shape.clone(),
        retry: spec.plan.retry.clone(),
        tls: spec.plan.tls.clone(),
        ..spec.plan
    };
    let target_rps = plan.shape.target_rate(plan.duration);
    let writer = match EventWriter::create(&folder.trace(&spec.name)) {
        Ok(writer) => writer,
        Err(e) => return down_then(stack, e.into()).await,
    };
    let counters = Arc::new(Counters::default());
    if announce {
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
    let (redis_nodes, prefix) = match &stack {
        Some(stack) if spec.mode.uses_redis() => (
            stack.redis_nodes().await,
            stack.redis_prefix().map(str::to_string),
        ),
        _ => (Vec::new(), None),
    };
    // With agents: each gets its segment, and the load starts when they
    // are all ready, at an instant fixed on the coordinator's clock.
    let prepared = match agents.as_deref_mut() {
        Some(a) => {
            let prepared = a
                .controller
                .prepare(
                    &spec.name,
                    a.scenario,
                    a.duration_us,
                    &plan.targets,
                    interrupt,
                )
                .await;
            match prepared {
                Ok(p) => Some(p),
                Err(e) => {
                    if let Some(mut stack) = stack {
                        stack.down().await;
                    }
                    return Err(e);
                }
            }
        }
        None => None,
    };
    let replica_urls = stack.as_ref().map(|s| s.urls()).unwrap_or_default();
    let mut metrics =
        super::limiter_metrics::before(spec.metrics.as_ref(), &replica_urls, interrupt).await;
    let redis_before = redis_use::sample(&redis_nodes, None).await;
    if let Some(p) = &prepared {
        tokio::time::sleep_until(p.start).await;
    }
    let progress = (!quiet).then(|| Progress::start(&spec.name, plan.duration, counters.clone()));
    let start = prepared
        .as_ref()
        .map_or_else(tokio::time::Instant::now, |p| p.start);
    if let Some(m) = metrics.as_mut() {
        m.sample_from(start);
    }
    if let Some(live) = watch.live {
        live.arm_begun(
            &spec.name,
            plan.duration,
            counters.clone(),
            start.into_std(),
        );
    }
    // Before any event: the record a kill leaves, rewritten with each clock
    // sample (and the load's reach) every second.
    let provisional = provisional(spec, target_rps, load::clocks::sample(start));
    let record_path = folder.arm_record(&spec.name);
    let begun = records::write(&record_path, &provisional)
        .and_then(|()| journal.arm_begun(&spec.name))
        .map_err(Error::from);
    if let Err(e) = begun {
        return down_then(stack, e).await;
    }
    let clocks = load::clocks::ClockWatch::start(start, {
        let mut so_far = provisional.clone();
        move |samples: &[ClockSample]| {
            so_far.clock_samples = samples.to_vec();
            so_far.send_window_s = samples.last().map_or(0.0, |s| s.trace_us as f64 / 1e6);
            // Best effort: a disk that refuses it refuses the trace too,
            // and that error is the one reported.
            let _ = records::write(&record_path, &so_far);
        }
    });
    let load = async {
        match (prepared, agents) {
            (Some(prepared), Some(a)) => {
                let collected = a
                    .controller
                    .collect(
                        prepared,
                        &plan,
                        folder.spool(&spec.name),
                        writer.sender(),
                        counters,
                        interrupt,
                    )
                    .await?;
                Ok((
                    collected.report,
                    collected.agents,
                    Some(collected.max_clock_uncertainty_us),
                ))
            }
            _ => {
                let report =
                    load::run(&plan, writer.sender(), counters, interrupt.wait(), start).await;
                Ok::<_, Error>((report, Vec::new(), None))
            }
        }
    };
    let faults = async {
        match stack.as_mut() {
            Some(stack) => faults::drive(stack, &spec.faults, start, interrupt.wait()).await,
            None => Vec::new(),
        }
    };
    let (loaded, faults) = tokio::join!(load, faults);
    let clock_samples = clocks.finish().await;
    let (report, agents, max_clock_uncertainty_us, load_error) = match loaded {
        Ok((report, agents, max)) => (report, agents, max, None),
        // What reached the disk is kept; the run stops with this error.
        Err(e) => (
            load::LoadReport {
                scheduled: 0,
                not_sent: Default::default(),
                send_window: start.elapsed(),
                interrupted: true,
                epoch_offset_us: provisional.epoch_offset_us,
                epoch_uncertainty_us: provisional.epoch_uncertainty_us,
            },
            Vec::new(),
            None,
            Some(e),
        ),
    };
    // Before the probes: their requests are not the load's decisions.
    let redis_after = redis_use::sample(&redis_nodes, prefix.as_deref()).await;
    let redis_used = redis_use::between(&redis_before, &redis_after);
    for f in &faults {
        if let Some(e) = &f.error {
            warn!("arm {}: undoing {}: {e}", spec.name, f.fault);
        }
    }
    if let Some(p) = progress {
        p.finish();
    }
    if let Some(live) = watch.live {
        live.arm_ended();
    }
    let limiter_metrics = match metrics {
        Some(m) => Some(m.after(interrupt).await),
        None => None,
    };
    let probes = if report.interrupted || spec.probes.keys.is_empty() {
        Vec::new()
    } else {
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
    };
    let fallbacks = match stack.as_mut() {
        Some(stack) if spec.mode.uses_redis() => Some(stack.redis_fallbacks().await),
        _ => None,
    };
    if let Some(mut stack) = stack {
        stack.down().await;
    }
    let trace = writer.finish();
    // Sealed when the writer finished; else what reached the disk is kept,
    // and the run stops with the write that failed.
    let (seal, broken) = match trace {
        Ok(seal) => (Some(seal), None),
        Err(e) => (None, Some(Error::from(e))),
    };
    let record = ArmRecord {
        epoch_offset_us: report.epoch_offset_us,
        epoch_uncertainty_us: report.epoch_uncertainty_us,
        scheduled: match plan.shape {
            Shape::Closed { .. } => 0,
            // The whole schedule (what the pacer reached, if cut short):
            // requests never sent for want of a free slot count as asked.
            _ if report.interrupted => report.scheduled,
            _ => Schedule::new(
                &plan.shape,
                plan.duration,
                plan.seed,
                report.epoch_offset_us,
            )
            .count() as u64,
        },
        send_window_s: report.send_window.as_secs_f64(),
        interrupted: report.interrupted,
        redis_fallbacks: fallbacks,
        redis_nodes: redis_used,
        limiter_metrics,
        faults,
        probes,
        clock_samples,
        unfinished: seal.is_none(),
        trace: seal,
        agents,
        not_sent: report.not_sent,
        max_clock_uncertainty_us,
        ..provisional
    };
    let written = records::write(&folder.arm_record(&spec.name), &record);
    let broken = load_error
        .or(broken)
        .or_else(|| written.err().map(Error::from));
    Ok((record, broken))
}

/// An arm's record before its load: everything but what the load finds,
/// marked unfinished (what a kill leaves for `report`).
fn provisional(spec: &ArmSpec, target_rps: f64, epoch: ClockSample) -> ArmRecord {
    let judged = &spec.judged;
    ArmRecord {
        name: spec.name.clone(),
        mode: spec.mode.as_str().to_string(),
        replicas: spec.replicas,
        policy: judged.policy.clone(),
        preset: judged.preset.clone(),
        aligned: judged.aligned,
        epoch_offset_us: epoch.wall_us - epoch.trace_us,
        epoch_uncertainty_us: epoch.uncertainty_us,
        target_rps,
        scheduled: 0,
        send_window_s: 0.0,
        interrupted: true,
        redis_fallbacks: None,
        redis_nodes: Vec::new(),
        lease_bound: judged.lease_bound,
        unknown_history: judged.unknown_history,
        faults: Vec::new(),
        probes: Vec::new(),
        replenish_lateness_us: judged.timing.lateness_us,
        chunked_refill: judged.timing.chunked_refill,
        chunks_on_epoch: judged.timing.chunks_on_epoch,
        max_clock_uncertainty_us: None,
        not_sent: Default::default(),
        clock_resolution_us: judged.timing.clock_resolution_us,
        count_rejected: judged.timing.count_rejected,
        max_server_time_us: judged.max_server_time_us,
        witnesses: judged.witnesses,
        one_clock: judged.timing.one_clock,
        remote_targets: spec
            .plan
            .targets
            .iter()
            .filter(|u| !crate::target::is_loopback(u))
            .map(ToString::to_string)
            .collect(),
        retry: spec
            .plan
            .retry
            .as_ref()
            .map(|r| r.describe(&spec.plan.template.limited)),
        clock_samples: vec![epoch],
        simulated_clock_rate_ppm: judged.simulated_clock_rate_ppm,
        declared_clock_rate_ppm: judged.declared_clock_rate_ppm,
        request_timeout_us: spec.plan.timeout.as_micros().min(i64::MAX as u128) as i64,
        key_header: spec
            .plan
            .template
            .key_header
            .as_ref()
            .map(|h| h.as_str().to_string()),
        key_in: spec.plan.template.key_in(),
        spoof: spec.spoof.clone(),
        from_logs: false,
        rls: matches!(
            spec.plan.template.key_place,
            crate::load::request::KeyPlace::Rls { .. }
        ),
        expect: spec
            .expect
            .iter()
            .map(|e| (e.key.to_string(), e.value))
            .collect(),
        trace: None,
        unfinished: true,
        agents: Vec::new(),
        limiter_metrics: None,
    }
}
