//! `rlbench run`: the scenario's arms, each through the one arm pipeline
//! (`plan` → `arm`), then the finish (figures, gate, summary, reports).
//! Rendering to the terminal is left to `main`.

use super::ending::{self, Ending};
use crate::app::pipeline::journal::Journal;
use crate::app::pipeline::sender::{Hire, Sender};
use crate::app::pipeline::{arm, finish};
use crate::distributed::controller::AgentsWanted;
use crate::error::{Error, Exit};
use crate::gate::Expectation;
use crate::interrupt::Interrupt;
use crate::live::server::LiveServer;
use crate::live::Board;
use crate::plan;
use crate::scenario::{self, Arm, Scenario};
use crate::store::folder::RunFolder;
use crate::store::records::ArmRecord;
use crate::store::summary::Summary;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What `rlbench run` was asked, checked.
pub(crate) struct Request {
    pub scenario: PathBuf,
    /// `--duration`, in place of the scenario's, with the text given.
    pub duration: Option<(Duration, String)>,
    /// `--arm` (all when empty).
    pub arms: Vec<String>,
    /// `--out`: the run folder, instead of `reports/<scenario>/<time>`.
    pub out: Option<PathBuf>,
    pub quiet: bool,
    /// `--agents`, `--coordinator`, `--agents-wait`: load agents, over the
    /// scenario's `[distributed]`.
    pub agents: AgentFlags,
    /// `--live`: where the live page listens (loopback, checked).
    pub live: Option<SocketAddr>,
}

/// The command line's say on load agents; each overrides `[distributed]`.
#[derive(Clone, Debug, Default)]
pub(crate) struct AgentFlags {
    pub agents: Option<usize>,
    pub coordinator: Option<String>,
    /// `--token` (else RLBENCH_COORDINATOR_TOKEN), checked once agents
    /// are wanted.
    pub token: Option<String>,
    /// `--max-clock-uncertainty`, over `[distributed]`'s.
    pub max_clock_uncertainty: Option<Duration>,
    pub wait: Option<Duration>,
    /// Tests only: agents trust their own wall clocks.
    pub trust_agent_clocks: bool,
}

/// Load agents wanted, from the flags over the scenario; `None`: this
/// machine sends the load.
fn wanted(flags: &AgentFlags, scenario: &Scenario) -> Result<Option<AgentsWanted>, Error> {
    let file = scenario.distributed.as_ref();
    let Some(agents) = flags.agents.or(file.map(|d| d.agents)) else {
        if flags.coordinator.is_some()
            || flags.wait.is_some()
            || flags.token.is_some()
            || flags.max_clock_uncertainty.is_some()
        {
            return Err(Error::input(
                "--coordinator, --token, --agents-wait and --max-clock-uncertainty need --agents N \
                 (or [distributed] agents)",
            ));
        }
        return Ok(None);
    };
    if matches!(
        scenario.load.shape,
        crate::load::schedule::Shape::Closed { .. }
    ) {
        return Err(Error::input(
            "--agents splits an open-loop schedule; a closed loop (concurrency) has none",
        ));
    }
    let from_env = match std::env::var("RLBENCH_COORDINATOR") {
        Ok(v) if !v.is_empty() => Some(
            crate::scenario::coordinator_url(&v)
                .map_err(|e| Error::input(format!("RLBENCH_COORDINATOR: {e}")))?,
        ),
        _ => None,
    };
    let from_flag = match &flags.coordinator {
        Some(v) => Some(
            crate::scenario::coordinator_url(v)
                .map_err(|e| Error::input(format!("--coordinator: {e}")))?,
        ),
        None => None,
    };
    let coordinator = from_flag
        .or_else(|| file.and_then(|d| d.coordinator.clone()))
        .or(from_env)
        .ok_or_else(|| {
            Error::input(
                "--agents needs --coordinator redis://HOST:PORT (or [distributed] coordinator, \
                 or RLBENCH_COORDINATOR): the Redis the agents were started with",
            )
        })?;
    Ok(Some(AgentsWanted {
        agents,
        coordinator,
        token: crate::distributed::seal::token_from(flags.token.as_deref())?,
        wait: flags
            .wait
            .or(file.map(|d| d.wait))
            .unwrap_or(crate::scenario::DEFAULT_AGENTS_WAIT),
        estimate_clock: !flags.trust_agent_clocks,
        max_clock_uncertainty_us: flags
            .max_clock_uncertainty
            .or(file.map(|d| d.max_clock_uncertainty))
            .unwrap_or(crate::scenario::spec::DEFAULT_MAX_CLOCK_UNCERTAINTY)
            .as_micros()
            .min(i64::MAX as u128) as i64,
    }))
}

pub(crate) struct RunOutcome {
    pub summary: Summary,
    pub folder: PathBuf,
    pub exit: Exit,
    /// An environment failure that cut the run short (after writing what it had).
    pub error: Option<Error>,
    /// The live page (`--live`), told the end; stopped once the terminal
    /// has its report too.
    pub live: Option<LiveServer>,
}

pub(crate) async fn run(request: &Request, interrupt: &Interrupt) -> Result<RunOutcome, Error> {
    let mut scenario = scenario::read(&request.scenario)?;
    if let Some((d, text)) = &request.duration {
        scenario.duration = *d;
        if let Some(f) = scenario.faults.iter().find(|f| f.at + f.lasts > *d) {
            return Err(Error::input(format!(
                "--duration {text}: the {} fault ends at {:?}, after it",
                f.action.name(),
                f.at + f.lasts
            )));
        }
    }
    let arms = select_arms(&scenario, &request.arms)?;
    let wanted = wanted(&request.agents, &scenario)?;
    // Listening before anything starts: a port in use stops the run here.
    let live = match request.live {
        Some(addr) => {
            let names = arms.iter().map(|a| a.name.clone()).collect();
            let board = Arc::new(Board::new(&scenario.name, names));
            let server = crate::live::server::start(addr, board.clone()).await?;
            eprintln!("live: {}", server.url);
            Some((board, server))
        }
        None => None,
    };
    // Everything the arms need, before any load and before the run folder.
    crate::app::pipeline::preflight::ensure(&scenario, &arms).await?;
    if interrupt.fired() {
        return Err(Error::interrupted());
    }
    let started = SystemTime::now();
    let run_id = format!(
        "rlbench-{}-{}",
        std::process::id(),
        started
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    // The agents, before the run folder: a run they never join leaves none.
    let hire = wanted.as_ref().map(|wanted| Hire {
        wanted,
        run_id: &run_id,
        quiet: request.quiet,
        file: &request.scenario,
        scenario: &scenario,
        duration: request.duration.as_ref().map(|(d, _)| *d),
    });
    let sender = Sender::hire(hire, interrupt).await?;
    let specs = arms
        .iter()
        .map(|arm| plan::from_scenario(&scenario, arm, &run_id))
        .collect::<Result<Vec<_>, _>>()?;
    crate::stack::leftovers::sweep();
    if let Some(dir) = &request.out {
        let cleared = RunFolder::prepare_out(dir)?;
        if let (Some(line), false) = (cleared, request.quiet) {
            tracing::info!("{line}");
        }
    }
    let names: Vec<&str> = arms.iter().map(|a| a.name.as_str()).collect();
    let latest = crate::store::folder::latest_name(&names, names.len() == scenario.arms.len());
    let folder = RunFolder::create(request.out.as_deref(), &scenario.name, started, &latest)?;
    // The copy hides the Redis password (scenario_copy.rs).
    crate::app::pipeline::scenario_copy::write(
        &request.scenario,
        &scenario,
        &folder.scenario_copy(),
    )?;
    let mut journal = Journal::open(&folder, &scenario.name, started, scenario.duration)?;
    let mut course = arm::Course {
        folder: &folder,
        journal: &mut journal,
        run_id: &run_id,
        interrupt,
        followers: arm::Followers {
            quiet: request.quiet,
            live: live.as_ref().map(|(board, _)| &**board),
        },
        sender,
    };
    let ran = arm::run_all(&specs, &mut course).await;
    course.sender.bye().await;
    let (run, unwritten) = ran.close(journal);
    let arms: Vec<(ArmRecord, Vec<Expectation>)> = ran
        .done
        .iter()
        .map(|(i, record)| (record.clone(), specs[*i].expect.clone()))
        .collect();
    let finished = finish::finish(&folder, &run, &arms)?;
    let live = live.map(|(board, server)| {
        let page = folder.root.join("report.html");
        board.run_ended(&finished.summary, page.is_file().then_some(page));
        server
    });
    // The first error is the one said: the arm's, else the records', else
    // the reports'.
    let error = ran
        .error
        .clone()
        .or_else(|| unwritten.map(Error::from).or(finished.write_error));
    Ok(RunOutcome {
        exit: exit(&ran, error.as_ref(), &finished.summary),
        summary: finished.summary,
        folder: folder.root.clone(),
        error,
        live,
    })
}

/// The run's exit: the arms' and the gate's, where a partial run never
/// passes — and is the harness's failure (3), not the limiter's (1): an
/// agent lost or failed, a coordinator that lost or was made to garble
/// what an agent sent. Only a complete trace can fail an expectation.
fn exit(ran: &arm::Ran, error: Option<&Error>, summary: &Summary) -> Exit {
    match ran.exit(error, summary.gate.failures.len()) {
        Exit::Passed | Exit::GateFailed if summary.partial => Exit::Environment,
        exit => exit,
    }
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

/// `rlbench run`: the verdicts printed, the gate's exit.
pub(super) async fn execute(
    request: &Request,
    format: crate::cli::output::OutputFormat,
    wide: bool,
    out: &mut dyn std::io::Write,
) -> Result<Ending, Error> {
    let mut outcome = run(request, &Interrupt::listen()).await?;
    let emitted = ending::emit(
        out,
        format,
        &ending::verdicts(&outcome.summary, Some(&outcome.folder), wide),
        &outcome.summary,
    );
    // The terminal first, then the page's last look (bounded).
    if let Some(live) = outcome.live.take() {
        live.stop().await;
    }
    emitted?;
    let mut ended = ending::judged(
        &outcome.summary,
        outcome.exit,
        outcome.error.map(|e| e.message).into_iter().collect(),
    );
    if outcome.exit == Exit::Interrupted {
        ended
            .errors
            .push("interrupted; the report covers what was sent and is marked partial".into());
    } else if outcome.summary.partial {
        ended.errors.push(format!(
            "the run is partial ({}): it never passes",
            outcome
                .summary
                .partial_reason
                .as_deref()
                .unwrap_or("incomplete")
        ));
    }
    Ok(ended)
}
