//! `rlbench run`: for each arm, bring the stack up, drive the load, bring
//! the stack down (on every path); then compute the figures from the
//! recorded events, write summary.json, and judge the expectations.
//! Rendering to the terminal is left to `main`.

use crate::cli::RunArgs;
use crate::error::{Error, Exit};
use crate::events::EventWriter;
use crate::faults;
use crate::interrupt::Interrupt;
use crate::load::client::Template;
use crate::load::schedule::Shape;
use crate::load::{self, Counters, Plan};
use crate::progress::Progress;
use crate::record::{self, ArmRecord, RunRecord};
use crate::report;
use crate::report::folder::RunFolder;
use crate::report::summary::Summary;
use crate::scenario::{self, units, Arm, Expectation, FaultAction, Mode, Scenario};
use crate::stack::Stack;
use crate::verify;
use reference_api::config::ClockSource;
use reference_api::config::{Backend, RedisBackend, RedisMode};
use reference_api::ReplicaConfig;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tracing::{info, warn};

/// Set to make rlbench panic right after the first stack is up: lets a
/// test prove that a panic leaves no replica behind.
pub const PANIC_HOOK_ENV: &str = "RLBENCH_TEST_PANIC_AFTER_UP";

pub struct RunOutcome {
    pub summary: Summary,
    pub folder: PathBuf,
    pub exit: Exit,
    /// An environment failure that cut the run short (after writing what it had).
    pub error: Option<Error>,
}

pub async fn run(args: &RunArgs) -> Result<RunOutcome, Error> {
    let mut scenario = scenario::load(&args.scenario)?;
    if let Some(d) = &args.duration {
        scenario.duration =
            units::duration(d).map_err(|e| Error::input(format!("--duration: {e}")))?;
        if let Some(f) = scenario
            .faults
            .iter()
            .find(|f| f.at + f.lasts > scenario.duration)
        {
            return Err(Error::input(format!(
                "--duration {d}: the {} fault ends at {:?}, after it",
                f.action.name(),
                f.at + f.lasts
            )));
        }
    }
    let arms = select_arms(&scenario, &args.arms)?;
    // Everything the arms need, before any load and before the run folder.
    crate::preflight::check(&scenario, &arms).await?;
    let started = SystemTime::now();
    let folder = RunFolder::create(args.out.as_deref(), &scenario.name, started)
        .map_err(Error::environment)?;
    std::fs::copy(&args.scenario, folder.scenario_copy()).map_err(|e| {
        Error::environment(format!(
            "cannot copy the scenario into {}: {e}",
            folder.root.display()
        ))
    })?;
    let interrupt = Interrupt::listen();
    let run_id = format!(
        "rlbench-{}-{}",
        std::process::id(),
        started
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );

    let mut done: Vec<(&Arm, ArmRecord)> = Vec::new();
    let mut error = None;
    let mut interrupted = false;
    for arm in arms {
        match run_arm(&scenario, arm, &folder, &run_id, &interrupt, args.quiet).await {
            Ok(record) => {
                interrupted = record.interrupted;
                done.push((arm, record));
            }
            Err(e) if e.exit == Exit::Interrupted => interrupted = true,
            Err(e) => {
                error = Some(Error {
                    exit: e.exit,
                    message: format!("stopped: arm {} {}", arm.name, e.message),
                })
            }
        }
        if interrupted || error.is_some() {
            break;
        }
    }

    let partial = interrupted || error.is_some();
    let run = RunRecord {
        scenario: scenario.name.clone(),
        started_at: humantime::format_rfc3339_seconds(started).to_string(),
        duration_s: scenario.duration.as_secs_f64(),
        partial,
        partial_reason: match (&error, interrupted) {
            (Some(e), _) => Some(e.message.clone()),
            (None, true) => Some("interrupted (Ctrl-C or SIGTERM)".to_string()),
            (None, false) => None,
        },
        arms: done.iter().map(|(arm, _)| arm.name.clone()).collect(),
    };
    record::write(&folder.run_record(), &run).map_err(Error::environment)?;
    let arms: Vec<(ArmRecord, Vec<Expectation>)> = done
        .into_iter()
        .map(|(arm, record)| (record, arm.expect.clone()))
        .collect();
    let summary = report::build(&folder, &run, &arms).map_err(Error::environment)?;
    let exit = if interrupted {
        Exit::Interrupted
    } else if let Some(e) = &error {
        e.exit
    } else if summary.gate.failures.is_empty() {
        Exit::Passed
    } else {
        Exit::GateFailed
    };
    Ok(RunOutcome {
        summary,
        folder: folder.root.clone(),
        exit,
        error,
    })
}

fn select_arms<'a>(scenario: &'a Scenario, names: &[String]) -> Result<Vec<&'a Arm>, Error> {
    if names.is_empty() {
        return Ok(scenario.arms.iter().collect());
    }
    names
        .iter()
        .map(|n| {
            scenario.arms.iter().find(|a| &a.name == n).ok_or_else(|| {
                let known: Vec<&str> = scenario.arms.iter().map(|a| a.name.as_str()).collect();
                Error::input(format!(
                    "--arm {n:?}: no such arm, expected one of {}",
                    known.join(", ")
                ))
            })
        })
        .collect()
}

/// What each replica of `arm` is told. Redis keys start with a prefix
/// unique to the run and arm, so runs never see each other's counts; with a
/// managed Redis the URL is filled in once the server is up.
pub fn replica_configs(scenario: &Scenario, arm: &Arm, run_id: &str) -> Vec<ReplicaConfig> {
    let backend = match arm.mode {
        Mode::Local | Mode::External => Backend::Local,
        Mode::RedisNaive | Mode::RedisLua => Backend::Redis(RedisBackend {
            url: scenario.redis.url.clone().unwrap_or_default(),
            prefix: format!("rlbench:{run_id}:{}:", arm.name),
            mode: if arm.mode == Mode::RedisLua {
                RedisMode::Lua
            } else {
                RedisMode::Naive
            },
            clock: arm.clock,
            timeout_us: units::micros(scenario.redis.timeout),
            on_error: arm.on_redis_error,
        }),
    };
    (0..arm.replicas)
        .map(|i| {
            let mut c = ReplicaConfig::new(format!("r{i}"), arm.policy.clone());
            c.key_header = arm.key_header.clone();
            c.clock_skew_us = arm.skew_of(i);
            c.backend = backend.clone();
            // rlbench steps replica clocks itself (clock_step faults).
            c.admin = true;
            c
        })
        .collect()
}

/// The scenario's schedule for this arm: bursts straddle the edges of the
/// arm's own policy window.
fn shape_for(scenario: &Scenario, arm: &Arm) -> Shape {
    match &scenario.load.shape {
        Shape::Bursts {
            per_edge, spread, ..
        } => Shape::Bursts {
            per_edge: *per_edge,
            spread: *spread,
            window: std::time::Duration::from_micros(verify::window(&arm.policy).1.max(1) as u64),
        },
        other => other.clone(),
    }
}

/// Epoch-aligned windows line up with the trace only when every decision
/// reads this machine's wall clock: no skew, and a Redis clock that is ours
/// (a managed or loopback server).
fn clocks_known_aligned(scenario: &Scenario, arm: &Arm) -> bool {
    let redis_is_local = match &scenario.redis.url {
        None => true,
        Some(url) => ["redis://127.", "redis://localhost", "redis://[::1]"]
            .iter()
            .any(|p| url.starts_with(p)),
    };
    // A stepped replica clock shifts its windows off the epoch grid.
    let stepped = arm.clock == ClockSource::Replica
        && scenario
            .faults
            .iter()
            .any(|f| matches!(f.action, FaultAction::ClockStep { .. }));
    let ours = match arm.mode {
        Mode::Local => true,
        Mode::RedisNaive | Mode::RedisLua => redis_is_local,
        // Another process's clock and windows (maybe anchored at first hit).
        Mode::External => false,
    };
    arm.clocks_aligned() && !stepped && ours
}

/// Whether every decision reads one clock inside its atomic step: Redis'
/// TIME inside the Lua script, or what the policy or the target declares.
/// (The reference API's replicas read their clock before the state's lock,
/// and a Redis arm on replica clocks sends each replica's reading.)
fn one_clock(scenario: &Scenario, arm: &Arm) -> bool {
    let declared =
        arm.mode == Mode::External && scenario.external.as_ref().is_some_and(|t| t.one_clock);
    (arm.mode == Mode::RedisLua && arm.clock == ClockSource::Redis)
        || arm.timing.one_clock
        || declared
}

/// Starts the arm's replicas (and Redis), unless interrupted first.
async fn up(
    scenario: &Scenario,
    arm: &Arm,
    run_id: &str,
    interrupt: &Interrupt,
    quiet: bool,
) -> Result<Stack, Error> {
    if !quiet {
        info!(
            "arm {}: starting {} {} replica(s)",
            arm.name,
            arm.replicas,
            arm.mode.as_str()
        );
    }
    let configs = replica_configs(scenario, arm, run_id);
    let managed = scenario.needs_managed_redis(arm);
    let proxy = managed && scenario.faults.iter().any(|f| f.action.needs_proxy());
    let stack = tokio::select! {
        biased;
        () = interrupt.wait() => return Err(Error::interrupted()),
        stack = Stack::up(&configs, managed, proxy, run_id) => stack.map_err(Error::environment)?,
    };
    if let (false, Some(url)) = (quiet, stack.redis_url()) {
        info!("arm {}: redis-server at {url}", arm.name);
    }
    if std::env::var_os(PANIC_HOOK_ENV).is_some() {
        panic!(
            "{PANIC_HOOK_ENV} is set: panicking with {} process(es) up",
            stack.pids().len()
        );
    }
    Ok(stack)
}

async fn run_arm(
    scenario: &Scenario,
    arm: &Arm,
    folder: &RunFolder,
    run_id: &str,
    interrupt: &Interrupt,
    quiet: bool,
) -> Result<ArmRecord, Error> {
    let (mut stack, targets, template) = match &scenario.external {
        Some(external) => {
            crate::target::reachable(&arm.urls).await?;
            (None, arm.urls.clone(), external.template.clone())
        }
        None => {
            let stack = up(scenario, arm, run_id, interrupt, quiet)
                .await
                .map_err(|e| match e.exit {
                    Exit::Interrupted => e,
                    _ => Error {
                        exit: e.exit,
                        message: format!("could not start: {}", e.message),
                    },
                })?;
            let targets = stack
                .urls()
                .iter()
                .map(|u| format!("{u}/api/transfers").parse())
                .collect::<Result<Vec<hyper::Uri>, _>>()
                .map_err(|e| {
                    Error::environment(format!("a replica reported a bad address: {e}"))
                })?;
            let key_header = arm
                .key_header
                .parse()
                .map_err(|_| Error::input(format!("bad key header {:?}", arm.key_header)))?;
            let template = Template::new(hyper::Method::POST, Some(key_header));
            (Some(stack), targets, template)
        }
    };
    let shape = shape_for(scenario, arm);
    let target_rps = shape.target_rate(scenario.duration);
    let plan = Plan {
        targets,
        template,
        shape,
        duration: scenario.duration,
        keys: scenario.load.keys,
        key_distribution: scenario.load.key_distribution,
        fanout: arm.fanout,
        seed: scenario.seed,
        timeout: scenario.load.timeout,
        max_in_flight: scenario.load.max_in_flight,
    };
    let writer = EventWriter::create(&folder.events(&arm.name)).map_err(Error::environment)?;
    let counters = Arc::new(Counters::default());
    if !quiet {
        info!(
            "arm {}: {:.0} requests/s ({}) for {:?} across {}",
            arm.name,
            target_rps,
            plan.shape.name(),
            scenario.duration,
            plan.targets
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let progress =
        (!quiet).then(|| Progress::start(&arm.name, scenario.duration, counters.clone()));
    let start = tokio::time::Instant::now();
    let load = load::run(&plan, writer.sender(), counters, interrupt.wait(), start);
    let faults = async {
        match stack.as_mut() {
            Some(stack) => faults::drive(stack, &scenario.faults, start, interrupt.wait()).await,
            None => Vec::new(),
        }
    };
    let (report, faults) = tokio::join!(load, faults);
    for f in &faults {
        if let Some(e) = &f.error {
            warn!("arm {}: undoing {}: {e}", arm.name, f.fault);
        }
    }
    if let Some(p) = progress {
        p.finish();
    }
    let probes = if report.interrupted || scenario.checks.retry_after_probes == 0 {
        Vec::new()
    } else {
        let n = scenario.checks.retry_after_probes.min(scenario.load.keys) as usize;
        let keys = &crate::load::pick::key_names(scenario.load.keys)[..n];
        tokio::select! {
            biased;
            () = interrupt.wait() => Vec::new(),
            probes = crate::probe::run(
                &plan.targets,
                &plan.template,
                keys,
                scenario.load.timeout,
                scenario.checks.retry_after_max_wait,
            ) => probes,
        }
    };
    let fallbacks = match stack.as_mut() {
        Some(stack) if arm.mode.uses_redis() => Some(stack.redis_fallbacks().await),
        _ => None,
    };
    if let Some(mut stack) = stack {
        stack.down().await;
    }
    writer.finish().map_err(Error::environment)?;
    let record = ArmRecord {
        name: arm.name.clone(),
        mode: arm.mode.as_str().to_string(),
        replicas: arm.replicas,
        policy: Some(arm.policy.clone()),
        preset: arm.preset.clone(),
        aligned: clocks_known_aligned(scenario, arm),
        epoch_offset_us: report.epoch_offset_us,
        epoch_uncertainty_us: report.epoch_uncertainty_us,
        target_rps,
        send_window_s: report.send_window.as_secs_f64(),
        interrupted: report.interrupted,
        redis_fallbacks: fallbacks,
        // Replicas (and a managed Redis) start empty; a Redis given by
        // URL is under a prefix of its own for this run. An external
        // limiter may remember requests from before the run.
        unknown_history: arm.mode == Mode::External,
        faults,
        probes,
        replenish_lateness_us: arm.timing.lateness_us,
        chunked_refill: arm.timing.chunked_refill,
        max_server_time_us: scenario
            .checks
            .max_server_time
            .map(|d| d.as_micros().min(i64::MAX as u128) as i64),
        witnesses: scenario.checks.witnesses,
        one_clock: one_clock(scenario, arm),
    };
    record::write(&folder.arm_record(&arm.name), &record).map_err(Error::environment)?;
    Ok(record)
}
