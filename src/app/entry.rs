//! The process's way in, for `main.rs`: parse the command line, set up
//! logging and the runtime, carry the command out, write what it said to
//! the terminal's streams (styled only where they take styles), exit with
//! its code.

use crate::cli::{for_stderr, one_line, Cli, Command};
use crate::error::Exit;
use clap::Parser;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

/// The process: parse the command line, set up logging and the runtime,
/// carry the command out (`commands::execute`), write what it said, and
/// the exit code.
pub fn main() -> ExitCode {
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
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return refused(&e),
    };
    let runtime = match &cli.command {
        // A replica is small and many run at once: one thread each.
        Command::Replica { .. } => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        _ => tokio::runtime::Runtime::new(),
    };
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("rlbench: cannot start the async runtime: {e}");
            return ExitCode::from(Exit::Environment.code());
        }
    };
    match &cli.command {
        Command::Replica { .. } => {}
        Command::Run(a) => init_logging(a.quiet, cli.wide),
        Command::Attack(a) => init_logging(a.quiet, cli.wide),
        Command::Audit(a) => init_logging(a.quiet, cli.wide),
        _ => init_logging(false, cli.wide),
    }
    // Styled text goes through streams that drop the styles for NO_COLOR,
    // --color never, and output that is not a terminal.
    let choice = match cli.color {
        clap::ColorChoice::Auto => anstream::ColorChoice::Auto,
        clap::ColorChoice::Always => anstream::ColorChoice::Always,
        clap::ColorChoice::Never => anstream::ColorChoice::Never,
    };
    let mut out = anstream::AutoStream::new(std::io::stdout(), choice);
    let cli_wide = cli.wide;
    let said = runtime.block_on(super::commands::execute(cli.command, cli.wide, &mut out));
    let _ = out.flush();
    let mut err = anstream::AutoStream::new(std::io::stderr(), choice);
    let failed = anstyle::Style::new()
        .fg_color(Some(anstyle::AnsiColor::Red.into()))
        .bold();
    for line in &said.errors {
        let line = for_stderr(&format!("rlbench: {failed}{line}{failed:#}"), cli_wide);
        let _ = writeln!(err, "{line}");
    }
    if let Some(line) = &said.last {
        let _ = writeln!(err, "{line}");
    }
    // Don't wait for stray blocking tasks (e.g. a stdin reader).
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    if let Ok(usage) = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF) {
        // Linux reports kB. Children (replicas, redis-server) are not included.
        tracing::debug!("peak RSS of rlbench itself: {} MB", usage.max_rss() / 1024);
    }
    ExitCode::from(said.exit.code())
}

/// Help and version as clap prints them; a command line it refuses in one
/// line, exit 2.
fn refused(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
    }
    eprintln!("rlbench: {}", one_line(e));
    ExitCode::from(Exit::BadInput.code())
}

/// Standard error for the log: each event written as a whole, folded as
/// the rest of standard error is (`cli::for_stderr`).
struct Folding {
    wide: bool,
}

impl Write for Folding {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().write_all(for_stderr(&text, self.wide).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

fn init_logging(quiet: bool, wide: bool) {
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
        .with_writer(move || Folding { wide })
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .without_time()
        .init();
}
