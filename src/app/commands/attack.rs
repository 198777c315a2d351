//! `rlbench attack URL...`: the load engine without a scenario file, for
//! ad-hoc runs against any loopback URL — open loop at `--rate`, or closed
//! loop with `--concurrency` workers — printing the same summary table as
//! `rlbench run`. The flags become one arm (`ArmSpec`) that goes through
//! the same pipeline and finish as a scenario's. Nothing is judged without
//! `--policy`. The gate is the same as `run`'s: the `--max-…` flags, no
//! definite violation under `--policy`, and something judged; with `--out`
//! the whole run folder (summary.json,
//! histograms, charts, report.html) is kept.

use super::ending::{self, Ending};
use crate::app::pipeline::journal::Journal;
use crate::app::pipeline::sender::Sender;
use crate::app::pipeline::{arm, finish};
use crate::error::{Error, Exit};
use crate::interrupt::Interrupt;
use crate::load::pick::{Fanout, KeyDistribution};
use crate::load::request::Template;
use crate::load::schedule::Shape;
use crate::load::Plan;
use crate::plan::{ArmSpec, Judged, Probes};
use crate::scenario::{Mode, PolicyTiming};
use crate::store::folder::RunFolder;
use crate::store::records::DEFAULT_WITNESSES;
use crate::store::summary::Summary;
use hyper::Uri;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// The arm name an attack's figures appear under.
pub(crate) const ARM: &str = "attack";

pub(crate) struct AttackOutcome {
    pub summary: Summary,
    /// The kept run folder (`--out`), if any.
    pub folder: Option<PathBuf>,
    pub exit: Exit,
}

/// What the command line asked for, checked (`flags::attack`).
#[derive(Debug)]
pub(crate) struct Attack {
    pub targets: Vec<Uri>,
    /// For `https://` targets.
    pub tls: Option<crate::load::tls::Client>,
    pub template: Template,
    pub shape: Shape,
    pub duration: Duration,
    pub keys: u32,
    pub fanout: Fanout,
    pub timeout: Duration,
    pub max_in_flight: usize,
    /// `--retry N`: callers retry limited answers up to N times.
    pub retry: Option<crate::load::retry::Retry>,
    /// What the answers are judged against (`--policy`).
    pub policy: Option<reference_api::Policy>,
    /// Late replenishment and chunked refill the `--policy` declares.
    pub timing: PolicyTiming,
    /// `--out`: keep the run folder there.
    pub out: Option<PathBuf>,
    /// The `--max-…` gate flags.
    pub expect: Vec<crate::gate::Expectation>,
    pub quiet: bool,
}

/// The attack as one arm: someone else's limiter, so only bounds that
/// hold for any clock alignment and any earlier history count.
fn spec(attack: &Attack) -> ArmSpec {
    ArmSpec {
        metrics: None,
        name: ARM.to_string(),
        mode: Mode::External,
        replicas: attack.targets.len(),
        stack: None,
        plan: Plan {
            targets: attack.targets.clone(),
            template: attack.template.clone(),
            shape: attack.shape.clone(),
            duration: attack.duration,
            keys: attack.keys,
            forged: 0,
            key_distribution: KeyDistribution::Uniform,
            fanout: attack.fanout,
            seed: 1,
            timeout: attack.timeout,
            max_in_flight: attack.max_in_flight,
            retry: attack.retry.clone(),
            segment: crate::load::Segment::WHOLE,
            phase_us: None,
            tls: attack.tls.clone(),
        },
        faults: Vec::new(),
        probes: Probes {
            keys: Vec::new(),
            max_wait: Duration::ZERO,
        },
        judged: Judged {
            policy: attack.policy.clone(),
            preset: None,
            aligned: false,
            unknown_history: true,
            // A preset's one clock holds for one process only.
            timing: PolicyTiming {
                one_clock: attack.timing.one_clock && attack.targets.len() == 1,
                ..attack.timing
            },
            max_server_time_us: None,
            witnesses: DEFAULT_WITNESSES,
            lease_bound: None,
            simulated_clock_rate_ppm: 0,
            declared_clock_rate_ppm: None,
        },
        expect: attack.expect.clone(),
        spoof: None,
        announce: false,
    }
}

pub(crate) async fn run(attack: &Attack, interrupt: &Interrupt) -> Result<AttackOutcome, Error> {
    crate::target::reachable(&attack.targets).await?;
    // Before any folder is made (the arm settles the protocol again).
    crate::load::tls::handshakes(&attack.targets, attack.tls.as_ref(), attack.template.http)
        .await?;
    let started = SystemTime::now();
    crate::stack::leftovers::sweep();
    if let Some(dir) = &attack.out {
        let cleared = RunFolder::prepare_out(dir)?;
        if let (Some(line), false) = (cleared, attack.quiet) {
            tracing::info!("{line}");
        }
    }
    // Without --out the events live in a temporary folder removed at the end.
    let scratch = match &attack.out {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix(&format!("{}attack-", crate::stack::leftovers::prefix()))
                .tempdir()
                .map_err(|e| {
                    Error::environment(format!("cannot create a temporary folder: {e}"))
                })?,
        ),
    };
    let root = attack
        .out
        .clone()
        .or_else(|| scratch.as_ref().map(|d| d.path().to_path_buf()));
    let folder = RunFolder::create(root.as_deref(), ARM, started, "latest")?;
    let specs = [spec(attack)];
    let mut journal = Journal::open(&folder, ARM, started, attack.duration)?;
    let mut course = arm::Course {
        folder: &folder,
        journal: &mut journal,
        run_id: "",
        interrupt,
        followers: arm::Followers {
            quiet: attack.quiet,
            live: None,
        },
        sender: Sender::Local,
    };
    let ran = arm::run_all(&specs, &mut course).await;
    let (run, unwritten) = ran.close(journal);
    let arms: Vec<_> = ran
        .done
        .iter()
        .map(|(_, record)| (record.clone(), attack.expect.clone()))
        .collect();
    let finished = finish::finish(&folder, &run, &arms)?;
    let error = ran
        .error
        .clone()
        .or_else(|| unwritten.map(Error::from).or(finished.write_error));
    if let Some(e) = error {
        return Err(e);
    }
    Ok(AttackOutcome {
        exit: ran.exit(None, finished.summary.gate.failures.len()),
        summary: finished.summary,
        folder: attack.out.clone(),
    })
}

/// `rlbench attack`: the verdicts printed, the gate's exit.
pub(super) async fn execute(
    attack: &Attack,
    format: crate::cli::output::OutputFormat,
    wide: bool,
    out: &mut dyn std::io::Write,
) -> Result<Ending, Error> {
    let outcome = run(attack, &Interrupt::listen()).await?;
    ending::emit(
        out,
        format,
        &ending::verdicts(&outcome.summary, outcome.folder.as_deref(), wide),
        &outcome.summary,
    )?;
    let mut ended = ending::judged(&outcome.summary, outcome.exit, Vec::new());
    if outcome.exit == Exit::Interrupted {
        ended
            .errors
            .push("interrupted; the figures cover what was sent".into());
    }
    Ok(ended)
}
