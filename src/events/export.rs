//! The trace in the plain forms other tools read (`rlbench export`): CSV
//! with the columns of `csv` after an `arm` column, or JSON Lines with the
//! same names (absent values are `null`), plus `agent` (the index of the
//! load agent that sent it, in `per_agent`) when the load came from agents.

use super::csv::{write_line, HEADER};
use super::Event;
use serde::Serialize;
use std::io::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "lower")]
pub(crate) enum Format {
    Csv,
    Jsonl,
}

/// One event as a JSON line.
#[derive(Serialize)]
struct Line<'a> {
    arm: &'a str,
    seq: u64,
    key: &'a str,
    replica: u32,
    intended_us: u64,
    sent_us: u64,
    done_us: u64,
    status: u16,
    outcome: &'static str,
    error: Option<&'static str>,
    rl_limit: Option<u64>,
    rl_window_s: Option<u64>,
    rl_remaining: Option<u64>,
    rl_reset_ms: Option<u64>,
    retry_after_ms: Option<u64>,
    rl_present: Option<u8>,
    rl_malformed: Option<u8>,
    attempt: u8,
    retry_of: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<u16>,
}

/// The header line a CSV export starts with.
pub(crate) fn start(format: Format, out: &mut impl Write) -> std::io::Result<()> {
    match format {
        Format::Csv => {
            out.write_all(b"arm,")?;
            out.write_all(HEADER)
        }
        Format::Jsonl => Ok(()),
    }
}

/// One event of `arm`, as a line; `agents`: the arm's load came from
/// load agents (JSON Lines then name each event's).
pub(crate) fn line(
    format: Format,
    arm: &str,
    agents: bool,
    e: &Event,
    out: &mut impl Write,
) -> std::io::Result<()> {
    match format {
        Format::Csv => {
            out.write_all(arm.as_bytes())?;
            out.write_all(b",")?;
            write_line(out, e)
        }
        Format::Jsonl => {
            let a = e.advertised.as_ref();
            let line = Line {
                arm,
                seq: e.seq,
                key: &e.key,
                replica: e.replica,
                intended_us: e.intended_us,
                sent_us: e.sent_us,
                done_us: e.done_us,
                status: e.status,
                outcome: e.outcome.name(),
                error: e.error.map(|k| k.name()),
                rl_limit: a.and_then(|a| a.limit),
                rl_window_s: a.and_then(|a| a.window_s),
                rl_remaining: a.and_then(|a| a.remaining),
                rl_reset_ms: a.and_then(|a| a.reset_ms),
                retry_after_ms: a.and_then(|a| a.retry_after_ms),
                rl_present: a.map(|a| a.present),
                rl_malformed: a.map(|a| a.malformed),
                attempt: e.attempt(),
                retry_of: e.retry_of.map(|r| r.first),
                agent: agents.then_some(e.agent),
            };
            serde_json::to_writer(&mut *out, &line).map_err(std::io::Error::other)?;
            out.write_all(b"\n")
        }
    }
}
