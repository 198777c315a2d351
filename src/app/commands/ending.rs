//! What every command's end is made of: [`Ending`] (its exit and its lines
//! for standard error), and the ways commands write what they print —
//! text or a JSON document, the verdict table with the page to open, the
//! gate's failures with the setup named first.

use crate::cli::output::OutputFormat;
use crate::error::{Error, Exit};
use crate::report::table;
use crate::store::summary::Summary;
use std::io::Write;
use std::path::Path;

/// A command's end: its exit and what it says on standard error (each
/// error after `rlbench: `; then `last`, plain: the page to open).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Ending {
    pub exit: Exit,
    pub errors: Vec<String>,
    pub last: Option<String>,
}

impl Ending {
    pub(crate) fn passed() -> Ending {
        Ending {
            exit: Exit::Passed,
            errors: Vec::new(),
            last: None,
        }
    }

    pub(super) fn failed(e: Error) -> Ending {
        Ending {
            exit: e.exit,
            errors: vec![e.message],
            last: None,
        }
    }
}

/// A command's output: `text` on `out`, or with `--format json` the
/// document on `out` and the text on stderr (one JSON document on stdout,
/// everything else apart).
pub(super) fn emit(
    out: &mut dyn Write,
    format: OutputFormat,
    text: &str,
    doc: &impl serde::Serialize,
) -> Result<(), Error> {
    match format {
        OutputFormat::Text => write_out(out, text),
        OutputFormat::Json => {
            let _ = anstream::stderr().write_all(text.as_bytes());
            let json = serde_json::to_string_pretty(doc)
                .map_err(|e| Error::environment(format!("cannot write the JSON document: {e}")))?;
            write_out(out, &format!("{json}\n"))
        }
    }
}

/// The verdict table, and last the page to open when it was written: its
/// path and a `file://` URL a terminal can open (the run folder's
/// summary.json when there is no page).
pub(super) fn verdicts(summary: &Summary, folder: Option<&Path>, wide: bool) -> String {
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
pub(super) fn page_line(page: &Path) -> String {
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
pub(super) fn setup_first(summary: &Summary, exit: Exit, errors: &mut Vec<String>) -> Exit {
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
pub(super) fn failures(summary: &Summary) -> Vec<String> {
    summary
        .gate
        .failures
        .iter()
        .map(|f| format!("expectation failed: {f}"))
        .collect()
}

/// Writes (and flushes: a long-running command's lines must show at once).
pub(super) fn write_out(out: &mut dyn Write, text: &str) -> Result<(), Error> {
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Error::environment(format!("cannot write to standard output: {e}")))
}

/// The end of a command that judged arms: the gate's failures, the setup
/// named first, and `more` lines after them.
pub(super) fn judged(summary: &Summary, exit: Exit, more: Vec<String>) -> Ending {
    let mut errors = failures(summary);
    errors.extend(more);
    let exit = setup_first(summary, exit, &mut errors);
    Ending {
        exit,
        errors,
        last: None,
    }
}
