//! rlbench's entry point: parse the command line, set up logging and the
//! runtime, call the library, print the outcome, map it to an exit code.
#![allow(clippy::print_stdout)]

use clap::Parser;
use rlbench::cli::{Cli, Command};
use rlbench::error::{Error, Exit};
use rlbench::report::table;
use std::io::IsTerminal;
use std::process::ExitCode;

// The replicas allocate per request (hyper, axum, redis-rs): glibc's
// malloc took about 14% of a redis_lua replica's CPU in `perf`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // Like any Unix tool, end quietly when stdout is a closed pipe
    // (`rlbench run … | head`) instead of panicking on the write; by the
    // time anything is printed the reports are written and the stack is down.
    // SAFETY: called first thing, before any other thread exists.
    unsafe {
        let _ = nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGPIPE,
            nix::sys::signal::SigHandler::SigDfl,
        );
    }
    let cli = Cli::parse();
    let runtime = match &cli.command {
        Command::Replica { .. } => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        _ => tokio::runtime::Runtime::new(),
    };
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(e) => {
            return fail(&Error::environment(format!(
                "cannot start the async runtime: {e}"
            )))
        }
    };
    let code = match cli.command {
        Command::Replica {
            config_json,
            listen,
            ..
        } => runtime.block_on(replica(config_json, listen.as_deref())),
        command => {
            let quiet = match &command {
                Command::Run(a) => a.quiet,
                Command::Attack(a) => a.quiet,
                _ => false,
            };
            init_logging(quiet);
            runtime.block_on(dispatch(command))
        }
    };
    // Don't wait for stray blocking tasks (e.g. a stdin reader).
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    if let Ok(usage) = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF) {
        // Linux reports kB. Children (replicas, redis-server) are not included.
        tracing::debug!("peak RSS of rlbench itself: {} MB", usage.max_rss() / 1024);
    }
    code
}

/// Where the report is, when it was written.
fn said_where(folder: &std::path::Path) {
    let summary = folder.join("summary.json");
    if summary.exists() {
        println!("report: {}", summary.display());
    }
}

async fn dispatch(command: Command) -> ExitCode {
    match command {
        Command::Run(args) => match run(&args).await {
            Ok(outcome) => {
                table::print(&outcome.summary);
                said_where(&outcome.folder);
                for failure in &outcome.summary.gate.failures {
                    eprintln!("rlbench: expectation failed: {failure}");
                }
                if let Some(e) = &outcome.error {
                    eprintln!("rlbench: {e}");
                }
                if outcome.exit == Exit::Interrupted {
                    eprintln!("rlbench: interrupted; the report covers what was sent and is marked partial");
                }
                ExitCode::from(outcome.exit.code())
            }
            Err(e) => fail(&e),
        },
        Command::Attack(args) => match attack(&args).await {
            Ok(outcome) => {
                table::print(&outcome.summary);
                if let Some(folder) = &outcome.folder {
                    said_where(folder);
                }
                for failure in &outcome.summary.gate.failures {
                    eprintln!("rlbench: expectation failed: {failure}");
                }
                if outcome.exit == Exit::Interrupted {
                    eprintln!("rlbench: interrupted; the figures cover what was sent");
                }
                ExitCode::from(outcome.exit.code())
            }
            Err(e) => fail(&e),
        },
        Command::Check { scenario } => match rlbench::scenario::read(&scenario) {
            Ok(s) => {
                let arms: Vec<&str> = s.arms.iter().map(|a| a.name.as_str()).collect();
                println!(
                    "{}: ok — {}; {:.0} requests/s ({}) for {:?}; arms: {}",
                    scenario.display(),
                    s.policy.describe(),
                    s.load.shape.target_rate(s.duration),
                    s.load.shape.name(),
                    s.duration,
                    arms.join(", ")
                );
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e.into()),
        },
        Command::Report { run_dir } => match rlbench::app::report::rebuild(&run_dir) {
            Ok((summary, exit)) => {
                table::print(&summary);
                said_where(&run_dir);
                for failure in &summary.gate.failures {
                    eprintln!("rlbench: expectation failed: {failure}");
                }
                if summary.partial {
                    eprintln!(
                        "rlbench: the run is partial ({}): it never passes",
                        summary.partial_reason.as_deref().unwrap_or("interrupted")
                    );
                }
                ExitCode::from(exit.code())
            }
            Err(e) => fail(&e),
        },
        Command::Export {
            run_dir,
            arms,
            format,
        } => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
            match rlbench::app::export::export(&run_dir, &arms, &format, &mut out) {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => fail(&e),
            }
        }
        Command::Explain {
            run_dir,
            arm,
            key,
            limit,
        } => {
            match rlbench::app::explain::explain(&run_dir, arm.as_deref(), key.as_deref(), limit) {
                Ok(arms) => {
                    print!("{}", rlbench::report::explain::render(&arms));
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e),
            }
        }
        Command::Doctor { scenario } => {
            let loaded = match scenario.as_deref().map(rlbench::scenario::read).transpose() {
                Ok(s) => s,
                Err(e) => return fail(&e.into()),
            };
            let findings = rlbench::app::doctor::examine(loaded.as_ref()).await;
            print!("{}", rlbench::report::doctor::render(&findings));
            if rlbench::app::doctor::passed(&findings) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(rlbench::error::Exit::Environment.code())
            }
        }
        Command::Init {
            name,
            target,
            policy,
            force,
        } => {
            let args = rlbench::app::init::Init {
                name: &name,
                target: target.as_deref(),
                policy: policy.as_deref(),
                force,
                dir: std::path::Path::new("."),
            };
            match rlbench::app::init::init(&args) {
                Ok(path) => {
                    println!("wrote {}", path.display());
                    println!(
                        "next: rlbench check {p} && rlbench run {p}",
                        p = path.display()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e),
            }
        }
        Command::Completions { shell } => {
            let mut cmd = <rlbench::cli::Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "rlbench", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
        Command::Man => {
            let cmd = <rlbench::cli::Cli as clap::CommandFactory>::command();
            match clap_mangen::Man::new(cmd).render(&mut std::io::stdout()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&rlbench::error::Error::environment(format!(
                    "cannot write the manual page: {e}"
                ))),
            }
        }
        Command::Compare {
            baseline,
            candidate,
            max_regression,
        } => match rlbench::app::compare::run(&baseline, &candidate, max_regression.as_deref()) {
            Ok((comparison, exit)) => {
                print!("{}", rlbench::report::compare::render(&comparison));
                for r in &comparison.regressions {
                    eprintln!("rlbench: regression: {r}");
                }
                ExitCode::from(exit.code())
            }
            Err(e) => fail(&e),
        },
        Command::Serve {
            scenario,
            arm,
            port,
        } => {
            // Listening first: a Ctrl-C while the stack comes up still stops it.
            let interrupt = rlbench::interrupt::Interrupt::listen();
            match rlbench::app::serve::start(&scenario, arm.as_deref(), port).await {
                Ok(serving) => {
                    for line in &serving.lines {
                        println!("{line}");
                    }
                    serving.until(&interrupt).await;
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e),
            }
        }
        Command::Replica { .. } => unreachable!("handled before logging is set up"),
    }
}

/// `rlbench run`: the flags checked, then the run, with Ctrl-C and
/// SIGTERM heard from here on.
async fn run(args: &rlbench::cli::RunArgs) -> Result<rlbench::app::run::RunOutcome, Error> {
    let request = rlbench::app::flags::run(args)?;
    rlbench::app::run::run(&request, &rlbench::interrupt::Interrupt::listen()).await
}

/// `rlbench attack`: the flags checked, then the attack.
async fn attack(
    args: &rlbench::cli::AttackArgs,
) -> Result<rlbench::app::attack::AttackOutcome, Error> {
    let attack = rlbench::app::flags::attack(args)?;
    rlbench::app::attack::run(&attack, &rlbench::interrupt::Interrupt::listen()).await
}

/// Runs as one replica of the reference API (rlbench starts these itself).
async fn replica(config_json: Option<String>, listen: Option<&str>) -> ExitCode {
    use reference_api::{replica, ReplicaConfig};
    let Some(config_json) = config_json.or_else(|| std::env::var(replica::CONFIG_ENV).ok()) else {
        return fail(&Error::input(format!(
            "replica: no config (--config-json or {})",
            replica::CONFIG_ENV
        )));
    };
    let config: ReplicaConfig = match serde_json::from_str(&config_json) {
        Ok(c) => c,
        Err(e) => return fail(&Error::input(format!("replica config: {e}"))),
    };
    let announce = |addr: std::net::SocketAddr| println!("{}http://{addr}", replica::READY_PREFIX);
    let listen = match listen.map(str::parse::<std::net::SocketAddr>) {
        None => ([127, 0, 0, 1], 0).into(),
        Some(Ok(addr)) => addr,
        Some(Err(_)) => {
            return fail(&Error::input(format!(
                "--listen {listen:?}: not an address"
            )))
        }
    };
    match replica::run(config, listen, announce, replica::shutdown_signal(true)).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&Error::environment(e.to_string())),
    }
}

fn fail(e: &Error) -> ExitCode {
    eprintln!("rlbench: {e}");
    ExitCode::from(e.exit.code())
}

fn init_logging(quiet: bool) {
    use tracing_subscriber::filter::LevelFilter;
    let level = std::env::var("RLBENCH_LOG")
        .ok()
        .and_then(|v| v.parse::<LevelFilter>().ok())
        .unwrap_or(if quiet {
            LevelFilter::WARN
        } else {
            LevelFilter::INFO
        });
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .without_time()
        .init();
}
