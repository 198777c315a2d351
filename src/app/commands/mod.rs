//! One command line, carried out: one file per subcommand, each writing
//! what it prints to the output it is given and returning its exit and
//! the lines for standard error ([`Ending`], `ending.rs`); `main` only writes
//! those and exits. The dispatch below is a table: a subcommand, its file.

pub(crate) mod attack;
pub(crate) mod audit;
mod check;
pub(crate) mod compare;
pub(crate) mod doctor;
mod ending;
pub(crate) mod explain;
pub(crate) mod export;
pub(crate) mod flags;
pub(crate) mod init;
mod manual;
pub(crate) mod probe;
pub(crate) mod replica;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod serve;
pub(crate) mod shard;

pub(crate) use ending::Ending;

use crate::cli::Command;
use crate::interrupt::Interrupt;
use std::io::Write;

/// Runs `command`, writing its output to `out` (`wide`: the verdict table
/// with every column).
pub(crate) async fn execute(command: Command, wide: bool, out: &mut dyn Write) -> Ending {
    match dispatch(command, wide, out).await {
        Ok(said) => said,
        Err(e) => Ending::failed(e),
    }
}

async fn dispatch(
    command: Command,
    wide: bool,
    out: &mut dyn Write,
) -> Result<Ending, crate::error::Error> {
    match command {
        Command::Run(args) => run::execute(&flags::run(&args), args.format, wide, out).await,
        Command::Agent(args) => {
            let agent = flags::agent(&args)?;
            crate::distributed::agent::serve(&agent, &Interrupt::listen()).await?;
            Ok(Ending::passed())
        }
        Command::Attack(args) => {
            attack::execute(&flags::attack(&args)?, args.format, wide, out).await
        }
        Command::Audit(args) => {
            let audit = flags::audit(&args)?;
            audit::execute(&audit, (args.format, args.quiet), wide, out).await
        }
        Command::Probe(args) => probe::execute(flags::probe(&args)?, wide, out).await,
        Command::Check { scenario, format } => check::execute(&scenario, format, out),
        Command::Report {
            run_dir,
            shard: Some(shard),
            ..
        } => shard::execute(&run_dir, &shard, out),
        Command::Report {
            run_dir, shards, ..
        } => {
            let rebuilt = match shards {
                Some(n) => shard::rebuild(&run_dir, n)?,
                None => report::rebuild(&run_dir)?,
            };
            report::execute(&run_dir, rebuilt, wide, out)
        }
        Command::Export {
            run_dir,
            arms,
            format,
        } => export::execute(&run_dir, &arms, format, out),
        Command::Explain {
            run_dir,
            arm,
            key,
            limit,
            format,
        } => explain::execute(
            &run_dir,
            (arm.as_deref(), key.as_deref()),
            limit,
            format,
            wide,
            out,
        ),
        Command::Doctor { scenario, format } => {
            doctor::execute(scenario.as_deref(), format, wide, out).await
        }
        // A target and no policy declared: probed, unless --no-probe.
        Command::Init {
            name,
            target: Some(target),
            policy: None,
            preset: None,
            key_header,
            no_probe: false,
            force,
            cacert,
            insecure,
            ..
        } => {
            let tls = init::Tls {
                cacert: cacert.as_deref(),
                insecure,
            };
            let args = init::as_probe(&name, &target, key_header.as_ref(), tls, force)?;
            probe::execute(flags::probe(&args)?, wide, out).await
        }
        Command::Init {
            name,
            target,
            policy,
            preset,
            key_header,
            force,
            ..
        } => {
            let to = init::Destination::parse(&name, force)?;
            let args = init::Init {
                name: &to.name,
                target: target.as_deref(),
                policy: policy.as_deref(),
                preset: preset.map(Into::into),
                key_header: key_header.as_ref().map(|h| h.as_str()),
                force,
                dir: &to.dir,
                found: None,
            };
            init::execute(&args, out)
        }
        Command::Completions { shell } => Ok(manual::completions(shell, out)),
        Command::Man => manual::man(out),
        Command::Compare {
            baseline,
            candidate,
            max_regression,
            latency_floor,
            html,
            force,
            strict,
            format,
        } => compare::execute(
            &baseline,
            &candidate,
            compare::Bounds {
                max_regression,
                latency_floor_ms: latency_floor.as_secs_f64() * 1e3,
            },
            (html.as_deref(), force),
            strict,
            format,
            out,
        ),
        Command::Serve {
            scenario,
            arm,
            port,
        } => serve::execute(&scenario, arm.as_deref(), port, out).await,
        Command::Replica {
            config_json,
            listen,
            ..
        } => replica::execute(config_json, listen).await,
    }
}
