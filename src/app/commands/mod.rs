//! One command line, carried out: each command writes what it prints to
//! the output it is given and returns its exit and the lines for standard
//! error ([`Said`]); `main` only writes those and exits.

pub(crate) mod attack;
pub(crate) mod audit;
pub(crate) mod compare;
pub(crate) mod doctor;
pub(crate) mod explain;
pub(crate) mod export;
pub(crate) mod flags;
pub(crate) mod init;
pub(crate) mod probe;
pub(crate) mod replica;
pub mod report;
pub(crate) mod run;
pub(crate) mod serve;
pub(crate) mod shard;

use crate::cli::{Command, OutputFormat};
use crate::error::{Error, Exit};
use crate::interrupt::Interrupt;
use crate::report::table;
use crate::store::summary::Summary;
use std::io::Write;
use std::path::Path;

/// A command's end: its exit and what it says on standard error (each
/// error after `rlbench: `; then `last`, plain: the page to open).
#[derive(Debug, PartialEq, Eq)]
pub struct Said {
    pub exit: Exit,
    pub errors: Vec<String>,
    pub last: Option<String>,
}

impl Said {
    pub fn passed() -> Said {
        Said {
            exit: Exit::Passed,
            errors: Vec::new(),
            last: None,
        }
    }

    fn failed(e: Error) -> Said {
        Said {
            exit: e.exit,
            errors: vec![e.message],
            last: None,
        }
    }
}

/// Runs `command`, writing its output to `out` (`wide`: the verdict table
/// with every column).
pub async fn execute(command: Command, wide: bool, out: &mut dyn Write) -> Said {
    match carry_out(command, wide, out).await {
        Ok(said) => said,
        Err(e) => Said::failed(e),
    }
}

async fn carry_out(command: Command, wide: bool, out: &mut dyn Write) -> Result<Said, Error> {
    match command {
        Command::Run(args) => {
            let request = crate::app::commands::flags::run(&args);
            let mut outcome =
                crate::app::commands::run::run(&request, &Interrupt::listen()).await?;
            let emitted = emit(
                out,
                args.format,
                &verdicts(&outcome.summary, Some(&outcome.folder), wide),
                &outcome.summary,
            );
            // The terminal first, then the page's last look (bounded).
            if let Some(live) = outcome.live.take() {
                live.stop().await;
            }
            emitted?;
            let mut errors = failures(&outcome.summary);
            errors.extend(outcome.error.map(|e| e.message));
            let exit = setup_first(&outcome.summary, outcome.exit, &mut errors);
            if outcome.exit == Exit::Interrupted {
                errors.push(
                    "interrupted; the report covers what was sent and is marked partial".into(),
                );
            } else if outcome.summary.partial {
                errors.push(format!(
                    "the run is partial ({}): it never passes",
                    outcome
                        .summary
                        .partial_reason
                        .as_deref()
                        .unwrap_or("incomplete")
                ));
            }
            Ok(Said {
                exit,
                errors,
                last: None,
            })
        }
        Command::Agent(args) => {
            let agent = crate::app::commands::flags::agent(&args)?;
            crate::app::distributed::agent::serve(&agent, &Interrupt::listen()).await?;
            Ok(Said::passed())
        }
        Command::Attack(args) => {
            let attack = crate::app::commands::flags::attack(&args)?;
            let outcome = crate::app::commands::attack::run(&attack, &Interrupt::listen()).await?;
            emit(
                out,
                args.format,
                &verdicts(&outcome.summary, outcome.folder.as_deref(), wide),
                &outcome.summary,
            )?;
            let mut errors = failures(&outcome.summary);
            let exit = setup_first(&outcome.summary, outcome.exit, &mut errors);
            if outcome.exit == Exit::Interrupted {
                errors.push("interrupted; the figures cover what was sent".into());
            }
            Ok(Said {
                exit,
                errors,
                last: None,
            })
        }
        Command::Audit(args) => {
            let audit = crate::app::commands::flags::audit(&args)?;
            let outcome = crate::app::commands::audit::run(&audit).await?;
            if !args.quiet {
                tracing::info!("{}", outcome.read.sentence(audit.logs.len()));
            }
            emit(
                out,
                args.format,
                &verdicts(&outcome.summary, outcome.folder.as_deref(), wide),
                &outcome.summary,
            )?;
            let mut errors = failures(&outcome.summary);
            let exit = setup_first(&outcome.summary, outcome.exit, &mut errors);
            Ok(Said {
                exit,
                errors,
                last: None,
            })
        }
        Command::Probe(args) => probe(&args, wide, out).await,
        Command::Check { scenario, format } => {
            let s = match crate::scenario::read_every(&scenario) {
                Ok(s) => s,
                Err(errors) => {
                    return Ok(Said {
                        exit: Exit::BadInput,
                        errors: errors.iter().map(ToString::to_string).collect(),
                        last: None,
                    })
                }
            };
            let arms: Vec<&str> = s.arms.iter().map(|a| a.name.as_str()).collect();
            let doc = serde_json::json!({
                "file": scenario,
                "ok": true,
                "name": s.name,
                "policy": s.policy.describe(),
                "target_rps": s.load.shape.target_rate(s.duration),
                "shape": s.load.shape.name(),
                "duration_s": s.duration.as_secs_f64(),
                "arms": arms,
            });
            emit(
                out,
                format,
                &format!(
                    "{}: ok — {}; {:.0} requests/s ({}) for {:?}; arms: {}\n",
                    scenario.display(),
                    s.policy.describe(),
                    s.load.shape.target_rate(s.duration),
                    s.load.shape.name(),
                    s.duration,
                    arms.join(", ")
                ),
                &doc,
            )?;
            Ok(Said::passed())
        }
        Command::Report {
            run_dir,
            shard: Some(shard),
            ..
        } => {
            let written = crate::app::commands::shard::judge(&run_dir, &shard)?;
            let lines: String = written
                .iter()
                .map(|w| {
                    format!(
                        "shard {shard} of {}: {} keys judged: {}\n",
                        w.arm,
                        w.keys,
                        w.path.display()
                    )
                })
                .collect();
            put(out, &lines)?;
            Ok(Said::passed())
        }
        Command::Report {
            run_dir, shards, ..
        } => {
            let (summary, exit) = match shards {
                Some(n) => crate::app::commands::shard::rebuild(&run_dir, n)?,
                None => crate::app::commands::report::rebuild(&run_dir)?,
            };
            put(out, &verdicts(&summary, Some(&run_dir), wide))?;
            let mut errors = failures(&summary);
            let exit = setup_first(&summary, exit, &mut errors);
            if summary.partial {
                errors.push(format!(
                    "the run is partial ({}): it never passes",
                    summary.partial_reason.as_deref().unwrap_or("interrupted")
                ));
            }
            Ok(Said {
                exit,
                errors,
                last: None,
            })
        }
        Command::Export {
            run_dir,
            arms,
            format,
        } => {
            let mut buffered = std::io::BufWriter::with_capacity(1 << 16, out);
            crate::app::commands::export::export(&run_dir, &arms, format, &mut buffered)?;
            Ok(Said::passed())
        }
        Command::Explain {
            run_dir,
            arm,
            key,
            limit,
            format,
        } => {
            let arms = crate::app::commands::explain::explain(
                &run_dir,
                arm.as_deref(),
                key.as_deref(),
                limit,
            )?;
            emit(
                out,
                format,
                &crate::report::fold::for_stdout(&crate::report::explain::render(&arms), wide),
                &serde_json::json!({ "arms": arms }),
            )?;
            Ok(Said::passed())
        }
        Command::Doctor { scenario, format } => {
            let loaded = scenario.as_deref().map(crate::scenario::read).transpose()?;
            let findings = crate::app::commands::doctor::examine(loaded.as_ref()).await;
            emit(
                out,
                format,
                &crate::report::fold::for_stdout(&crate::report::doctor::render(&findings), wide),
                &serde_json::json!({
                    "passed": crate::app::commands::doctor::passed(&findings),
                    "findings": findings,
                }),
            )?;
            Ok(Said {
                exit: if crate::app::commands::doctor::passed(&findings) {
                    Exit::Passed
                } else {
                    Exit::Environment
                },
                errors: Vec::new(),
                last: None,
            })
        }
        Command::Init {
            name,
            target: Some(target),
            probe: true,
            force,
            ..
        } => {
            // `init --target URL --probe` is `probe URL --write NAME`.
            use clap::{Args, FromArgMatches};
            let mut argv = vec!["probe", target.as_str(), "--write", name.as_str()];
            if force {
                argv.push("--force");
            }
            let args = crate::cli::ProbeArgs::augment_args(clap::Command::new("probe"))
                .try_get_matches_from(argv)
                .and_then(|m| crate::cli::ProbeArgs::from_arg_matches(&m))
                .map_err(|e| {
                    let first = e.to_string();
                    let first = first.lines().next().unwrap_or_default();
                    Error::input(format!("--target: {}", first.trim_start_matches("error: ")))
                })?;
            probe(&args, wide, out).await
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
            let path = crate::app::commands::init::init(&crate::app::commands::init::Init {
                name: &name,
                target: target.as_deref(),
                policy: policy.as_deref(),
                preset: preset.map(Into::into),
                key_header: key_header.as_ref().map(|h| h.as_str()),
                force,
                dir: Path::new("."),
                found: None,
            })?;
            put(
                out,
                &format!(
                    "wrote {p}\nnext: rlbench check {p} && rlbench run {p}\n",
                    p = path.display()
                ),
            )?;
            Ok(Said::passed())
        }
        Command::Completions { shell } => {
            let mut cmd = <crate::cli::Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "rlbench", out);
            Ok(Said::passed())
        }
        Command::Man => {
            let cmd = <crate::cli::Cli as clap::CommandFactory>::command();
            clap_mangen::Man::new(cmd)
                .render(out)
                .map_err(|e| Error::environment(format!("cannot write the manual page: {e}")))?;
            Ok(Said::passed())
        }
        Command::Compare {
            baseline,
            candidate,
            max_regression,
            html,
            force,
            strict,
            format,
        } => {
            use crate::app::commands::compare::{page, run};
            // A page that may not go where asked is refused before any output.
            let at = page::destination(html.as_deref(), [&baseline, &candidate], force)?;
            let compared = run(&baseline, &candidate, max_regression, strict)?;
            emit(
                out,
                format,
                &crate::report::compare::render(&compared.comparison),
                &crate::report::compare::document(&compared.comparison),
            )?;
            let mut said = Said {
                exit: compared.exit,
                errors: compared
                    .comparison
                    .differences
                    .iter()
                    .map(|d| format!("warning: {d}: the figures are not like for like"))
                    .chain(
                        compared
                            .comparison
                            .regressions
                            .iter()
                            .map(|r| format!("regression: {r}")),
                    )
                    .collect(),
                last: None,
            };
            let inputs = [
                (baseline.as_path(), &compared.baseline),
                (candidate.as_path(), &compared.candidate),
            ];
            match page::write(&at, inputs, &compared.comparison, max_regression) {
                Ok(()) => said.last = Some(page_line(&at)),
                Err(e) => {
                    said.exit = e.exit;
                    said.errors.push(e.message);
                }
            }
            Ok(said)
        }
        Command::Serve {
            scenario,
            arm,
            port,
        } => {
            // Listening first: a Ctrl-C while the stack comes up still stops it.
            let interrupt = Interrupt::listen();
            let serving =
                crate::app::commands::serve::start(&scenario, arm.as_deref(), port).await?;
            let mut lines = serving.lines.join("\n");
            lines.push('\n');
            put(out, &lines)?;
            serving.until(&interrupt).await;
            Ok(Said::passed())
        }
        Command::Replica {
            config_json,
            listen,
            ..
        } => {
            crate::app::commands::replica::run(config_json, listen).await?;
            Ok(Said::passed())
        }
    }
}

/// A command's output: `text` on `out`, or with `--format json` the
/// document on `out` and the text on stderr (one JSON document on stdout,
/// everything else apart).
fn emit(
    out: &mut dyn Write,
    format: OutputFormat,
    text: &str,
    doc: &impl serde::Serialize,
) -> Result<(), Error> {
    match format {
        OutputFormat::Text => put(out, text),
        OutputFormat::Json => {
            let _ = anstream::stderr().write_all(text.as_bytes());
            let json = serde_json::to_string_pretty(doc)
                .map_err(|e| Error::environment(format!("cannot write the JSON document: {e}")))?;
            put(out, &format!("{json}\n"))
        }
    }
}

/// The verdict table, and last the page to open when it was written: its
/// path and a `file://` URL a terminal can open (the run folder's
/// summary.json when there is no page).
fn verdicts(summary: &Summary, folder: Option<&Path>, wide: bool) -> String {
    let mut text = table::render(summary, wide);
    let written = |name: &str| folder.map(|f| f.join(name)).filter(|f| f.exists());
    if let Some(page) = written("report.html") {
        text.push_str(&page_line(&page));
        text.push('\n');
    } else if let Some(file) = written("summary.json") {
        text.push_str(&format!("report: {}\n", file.display()));
    }
    crate::report::fold::for_stdout(&text, wide)
}

/// "report: PATH (file:///…)": a written page to open, as a path and a
/// URL a terminal can open.
fn page_line(page: &Path) -> String {
    let url = std::fs::canonicalize(page)
        .ok()
        .and_then(|abs| url::Url::from_file_path(abs).ok())
        .map(|url| format!(" ({url})"))
        .unwrap_or_default();
    format!("report: {}{url}", page.display())
}

/// The setup named before the limiter is blamed (`report::setup`): what
/// else came with a failed expectation, and an arm that got no decision
/// at all, which makes the run's exit the environment's (3).
fn setup_first(summary: &Summary, exit: Exit, errors: &mut Vec<String>) -> Exit {
    errors.extend(crate::report::setup::circumstances(summary));
    match crate::report::setup::unreached(summary) {
        Some(line) if matches!(exit, Exit::Passed | Exit::GateFailed) => {
            errors.push(line);
            Exit::Environment
        }
        _ => exit,
    }
}

/// The gate's failed expectations, one line each.
fn failures(summary: &Summary) -> Vec<String> {
    summary
        .gate
        .failures
        .iter()
        .map(|f| format!("expectation failed: {f}"))
        .collect()
}

/// Writes (and flushes: a long-running command's lines must show at once).
fn put(out: &mut dyn Write, text: &str) -> Result<(), Error> {
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Error::environment(format!("cannot write to standard output: {e}")))
}

/// `rlbench probe`, and `init --probe`.
async fn probe(
    args: &crate::cli::ProbeArgs,
    wide: bool,
    out: &mut dyn Write,
) -> Result<Said, Error> {
    let mut probe = crate::app::commands::flags::probe(args)?;
    probe.columns = crate::report::fold::width(wide);
    let outcome = crate::app::commands::probe::run(&probe, &Interrupt::listen(), out).await?;
    Ok(Said {
        exit: outcome.exit,
        errors: outcome.error.into_iter().collect(),
        last: None,
    })
}
