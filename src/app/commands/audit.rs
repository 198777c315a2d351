//! `rlbench audit LOG...`: a limiter judged from its access logs. Each
//! line is read by its kind's reader (`audit::`) into a decided request —
//! the span its times allow, its status, its key — widened by how far the
//! logs' clocks may be apart; the requests become a trace in a run folder
//! (one "replica" per log) and that folder is finished as a run's is: the
//! same verifier, witnesses, report and gate. The limiter's history before
//! the first line is unknown (early rejects are not judged) and its clock
//! is not this machine's (no grid is assumed).

use super::ending::{self, Ending};
use crate::app::pipeline::arm::Ran;
use crate::app::pipeline::finish;
use crate::app::pipeline::journal::Journal;
use crate::audit::error::LineError;
use crate::audit::{haproxy, jsonl, k6, nginx, vegeta, Logged};
use crate::error::{Error, Exit};
use crate::events::write::EventWriter;
use crate::events::{Event, Outcome};
use crate::gate::Expectation;
use crate::scenario::PolicyTiming;
use crate::store::folder::RunFolder;
use crate::store::records::{self, ArmRecord, DEFAULT_WITNESSES};
use crate::store::summary::Summary;
use std::io::{BufRead, BufReader, Read as _};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// The arm an audit's figures appear under.
pub(crate) const ARM: &str = "audit";
/// The longest line read.
const MAX_LINE_BYTES: u64 = 1 << 20;
/// The most lines one audit reads (its requests are sorted in memory).
const MAX_LINES: u64 = 50_000_000;
/// How many skipped lines are named.
const NAMED: usize = 5;

/// How each line is read.
#[derive(Debug)]
pub(crate) enum Lines {
    Nginx(nginx::Format),
    /// Which captured request header is the key (1: the first).
    Haproxy(usize),
    Json(jsonl::Fields),
    /// The tag that carries the key.
    K6(String),
    /// vegeta's CSV, the key in each row's URL.
    Vegeta(vegeta::UrlKey),
}

impl Lines {
    fn read(&self, line: &str) -> Result<Option<Logged>, LineError> {
        match self {
            Lines::Nginx(f) => f.line(line).map(Some),
            Lines::Haproxy(capture) => haproxy::line(line, *capture),
            Lines::Json(fields) => fields.line(line, 1_000).map(Some),
            Lines::K6(tag) => k6::line(line, tag),
            Lines::Vegeta(key) => {
                let mut rows = csv::ReaderBuilder::new()
                    .has_headers(false)
                    .flexible(true)
                    .from_reader(line.as_bytes());
                match rows.records().next() {
                    Some(Ok(record)) => vegeta::row(&record, key).map(Some),
                    Some(Err(e)) => Err(LineError::NotCsv { why: e.to_string() }),
                    None => Ok(None),
                }
            }
        }
    }
}

/// What the command line asked for, checked (`flags::audit`).
#[derive(Debug)]
pub(crate) struct Audit {
    pub logs: Vec<PathBuf>,
    pub lines: Lines,
    /// How far each log's clock may be from the truth, each way (µs).
    pub clock_bound_us: i64,
    pub policy: reference_api::Policy,
    pub timing: PolicyTiming,
    pub limited: Vec<u16>,
    pub skip_bad_lines: bool,
    pub out: Option<PathBuf>,
    pub expect: Vec<Expectation>,
    pub quiet: bool,
}

/// What was read of the logs.
#[derive(Debug, Default)]
pub(crate) struct Read {
    pub lines: u64,
    pub requests: u64,
    /// Requests whose line carries no key: nothing the limiter counted by.
    pub without_key: u64,
    /// Lines that were not requests (k6's other points).
    pub other: u64,
    pub skipped: u64,
    /// The first skipped lines, `file:line: why`.
    pub skipped_named: Vec<String>,
}

impl Read {
    /// "read 2 logs: 5,200 lines, 5,180 requests judged, 20 without a key".
    pub(crate) fn sentence(&self, logs: usize) -> String {
        let mut s = format!(
            "read {logs} log{}: {} lines, {} requests judged",
            if logs == 1 { "" } else { "s" },
            self.lines,
            self.requests
        );
        if self.without_key > 0 {
            s.push_str(&format!(
                ", {} without a key (not judged)",
                self.without_key
            ));
        }
        if self.other > 0 {
            s.push_str(&format!(", {} lines that are no request", self.other));
        }
        if self.skipped > 0 {
            s.push_str(&format!(
                ", {} skipped as unreadable (first: {})",
                self.skipped,
                self.skipped_named.join("; ")
            ));
        }
        s
    }
}

pub(crate) struct AuditOutcome {
    pub summary: Summary,
    pub folder: Option<PathBuf>,
    pub exit: Exit,
    pub read: Read,
}

/// Every log's requests, by file index; a line that cannot be read is the
/// error (`file:line: why`) unless skipping.
fn read_logs(audit: &Audit) -> Result<(Vec<(u32, Logged)>, Read), Error> {
    let mut out = Vec::new();
    let mut read = Read::default();
    for (i, path) in audit.logs.iter().enumerate() {
        let file = crate::files::open_regular(path)
            .map_err(|e| Error::input(format!("{}: {e}", path.display())))?;
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let mut buf = Vec::new();
        let mut number = 0u64;
        loop {
            buf.clear();
            let n = (&mut reader)
                .take(MAX_LINE_BYTES + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|e| Error::input(format!("{}: {e}", path.display())))?;
            if n == 0 {
                break;
            }
            number += 1;
            read.lines += 1;
            if read.lines > MAX_LINES {
                return Err(Error::input(format!(
                    "more than {MAX_LINES} lines: audit a day's logs at a time"
                )));
            }
            let place = || format!("{}:{number}", path.display());
            if buf.len() as u64 > MAX_LINE_BYTES {
                return Err(Error::input(format!(
                    "{}: a line longer than {MAX_LINE_BYTES} bytes",
                    place()
                )));
            }
            let parsed = match std::str::from_utf8(&buf) {
                Ok(text) => {
                    let text = text.trim_end_matches(['\n', '\r']);
                    if text.trim().is_empty() {
                        read.other += 1;
                        continue;
                    }
                    audit.lines.read(text)
                }
                Err(_) => Err(LineError::NotUtf8),
            };
            match parsed {
                Ok(Some(l)) if l.key.is_none() => read.without_key += 1,
                Ok(Some(l)) => {
                    read.requests += 1;
                    out.push((i as u32, l));
                }
                Ok(None) => read.other += 1,
                Err(why) if audit.skip_bad_lines => {
                    read.skipped += 1;
                    if read.skipped_named.len() < NAMED {
                        read.skipped_named.push(format!("{}: {why}", place()));
                    }
                }
                Err(why) => {
                    return Err(Error::input(format!(
                        "{}: {why} (--skip-bad-lines skips such lines, counted)",
                        place()
                    )))
                }
            }
        }
    }
    Ok((out, read))
}

/// The requests as a trace's events, on a time line starting a second
/// before the earliest (µs), widened by the clock bound; and that start's
/// wall time.
fn events(mut logged: Vec<(u32, Logged)>, audit: &Audit) -> (Vec<Event>, i64) {
    logged.sort_by_key(|(_, l)| (l.start_us, l.end_us));
    let bound = audit.clock_bound_us;
    let epoch = logged
        .first()
        .map_or(0, |(_, l)| l.start_us - bound - 1_000_000);
    let events = logged
        .into_iter()
        .enumerate()
        .map(|(seq, (replica, l))| {
            let sent_us = (l.start_us - bound - epoch).max(0) as u64;
            let outcome = match l.status {
                200..=299 => Outcome::Admitted,
                s if audit.limited.contains(&s) => Outcome::Rejected,
                _ => Outcome::Error,
            };
            Event {
                seq: seq as u64,
                key: l.key.unwrap_or_default(),
                replica,
                intended_us: sent_us,
                sent_us,
                done_us: (l.end_us + bound - epoch).max(0) as u64,
                status: l.status,
                outcome,
                error: None,
                advertised: None,
                retry_of: None,
                agent: 0,
            }
        })
        .collect();
    (events, epoch)
}

pub(crate) async fn run(audit: &Audit) -> Result<AuditOutcome, Error> {
    let (logged, read) = read_logs(audit)?;
    if logged.is_empty() {
        return Err(Error::input(format!(
            "{}: nothing to judge ({})",
            audit.logs[0].display(),
            read.sentence(audit.logs.len())
        )));
    }
    let (events, epoch) = events(logged, audit);
    let span_s = events.iter().map(|e| e.done_us).max().unwrap_or(0) as f64 / 1e6;
    let longest = events
        .iter()
        .map(|e| e.done_us - e.sent_us)
        .max()
        .unwrap_or(0);
    let started = SystemTime::now();
    if let Some(dir) = &audit.out {
        let cleared = RunFolder::prepare_out(dir)?;
        if let (Some(line), false) = (cleared, audit.quiet) {
            tracing::info!("{line}");
        }
    }
    let scratch = match &audit.out {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix(&format!("{}audit-", crate::stack::leftovers::prefix()))
                .tempdir()
                .map_err(|e| {
                    Error::environment(format!("cannot create a temporary folder: {e}"))
                })?,
        ),
    };
    let root = audit
        .out
        .clone()
        .or_else(|| scratch.as_ref().map(|d| d.path().to_path_buf()));
    let folder = RunFolder::create(root.as_deref(), ARM, started, "latest")?;
    let mut journal = Journal::open(&folder, ARM, started, Duration::from_secs_f64(span_s))?;
    let writer = EventWriter::create(&folder.trace(ARM))?;
    let sender = writer.sender();
    for chunk in events.chunks(crate::events::BATCH) {
        if sender.send(chunk.to_vec()).await.is_err() {
            break;
        }
    }
    drop(sender);
    journal.arm_begun(ARM)?;
    let seal = writer.finish()?;
    let record = record(audit, epoch, span_s, longest, seal);
    records::write(&folder.arm_record(ARM), &record)?;
    let ran = Ran {
        done: vec![(0, record.clone())],
        interrupted: false,
        error: None,
    };
    let (run, unwritten) = ran.close(journal);
    let finished = finish::finish(&folder, &run, &[(record, audit.expect.clone())])?;
    if let Some(e) = unwritten.map(Error::from).or(finished.write_error) {
        return Err(e);
    }
    Ok(AuditOutcome {
        exit: ran.exit(None, finished.summary.gate.failures.len()),
        summary: finished.summary,
        folder: audit.out.clone(),
        read,
    })
}

/// The arm's record: someone else's limiter, seen through its logs.
fn record(
    audit: &Audit,
    epoch: i64,
    span_s: f64,
    longest_us: u64,
    seal: crate::events::integrity::Seal,
) -> ArmRecord {
    let timing = audit.timing;
    ArmRecord {
        name: ARM.to_string(),
        mode: "external".to_string(),
        replicas: audit.logs.len(),
        policy: Some(audit.policy.clone()),
        preset: None,
        aligned: false,
        epoch_offset_us: epoch,
        epoch_uncertainty_us: 0,
        target_rps: 0.0,
        scheduled: 0,
        send_window_s: span_s,
        interrupted: false,
        redis_fallbacks: None,
        redis_nodes: Vec::new(),
        limiter_metrics: None,
        lease_bound: None,
        unknown_history: true,
        faults: Vec::new(),
        probes: Vec::new(),
        replenish_lateness_us: timing.lateness_us,
        chunked_refill: timing.chunked_refill,
        chunks_on_epoch: timing.chunks_on_epoch,
        max_clock_uncertainty_us: None,
        not_sent: Default::default(),
        clock_resolution_us: timing.clock_resolution_us,
        clock_skew_us: timing.clock_skew_us,
        banked_tokens: timing.banked_tokens,
        count_rejected: timing.count_rejected,
        max_server_time_us: None,
        witnesses: DEFAULT_WITNESSES,
        // One log, one process: the preset's one clock holds.
        one_clock: timing.one_clock && audit.logs.len() == 1,
        remote_targets: Vec::new(),
        targets: Vec::new(),
        keys_declared: None,
        retry: None,
        clock_samples: Vec::new(),
        simulated_clock_rate_ppm: 0,
        declared_clock_rate_ppm: None,
        request_timeout_us: longest_us.min(i64::MAX as u64) as i64,
        key_header: None,
        key_in: None,
        spoof: None,
        rls: false,
        from_logs: true,
        expect: audit
            .expect
            .iter()
            .map(|e| (e.key.to_string(), e.value))
            .collect(),
        trace: Some(seal),
        unfinished: false,
        agents: Vec::new(),
    }
}

/// `rlbench audit`: the logs read, the verdicts printed, the gate's exit.
pub(super) async fn execute(
    audit: &Audit,
    (format, quiet): (crate::cli::output::OutputFormat, bool),
    wide: bool,
    out: &mut dyn std::io::Write,
) -> Result<Ending, Error> {
    let outcome = run(audit).await?;
    if !quiet {
        tracing::info!("{}", outcome.read.sentence(audit.logs.len()));
    }
    ending::emit(
        out,
        format,
        &ending::verdicts(&outcome.summary, outcome.folder.as_deref(), wide),
        &outcome.summary,
    )?;
    Ok(ending::judged(&outcome.summary, outcome.exit, Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn audit(lines: Lines, logs: Vec<PathBuf>) -> Audit {
        Audit {
            logs,
            lines,
            clock_bound_us: 2_000,
            policy: reference_api::Policy::FixedWindow {
                limit: 1,
                window_us: 1_000_000,
            },
            timing: PolicyTiming::default(),
            limited: vec![429],
            skip_bad_lines: false,
            out: None,
            expect: Vec::new(),
            quiet: true,
        }
    }

    #[test]
    fn lines_become_events_in_time_order_widened_by_the_clock_bound() {
        let a = audit(Lines::Haproxy(1), vec![]);
        let l = |start_us, status, key: &str| Logged {
            start_us,
            end_us: start_us + 5_000,
            status,
            key: Some(key.into()),
        };
        let (events, epoch) = events(
            vec![
                (1, l(20_000_000, 429, "b")),
                (0, l(10_000_000, 200, "a")),
                (0, l(15_000_000, 503, "a")),
            ],
            &a,
        );
        assert_eq!(epoch, 10_000_000 - 2_000 - 1_000_000);
        assert_eq!(events.len(), 3);
        assert_eq!((events[0].seq, events[0].key.as_str()), (0, "a"));
        assert_eq!(events[0].sent_us, 1_000_000);
        assert_eq!(events[0].done_us, 1_000_000 + 5_000 + 4_000);
        let outcomes: Vec<Outcome> = events.iter().map(|e| e.outcome).collect();
        assert_eq!(
            outcomes,
            [Outcome::Admitted, Outcome::Error, Outcome::Rejected]
        );
        assert_eq!(events[2].replica, 1);
    }

    #[test]
    fn a_bad_line_is_named_by_file_and_number_or_skipped_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a.jsonl");
        let good =
            r#"{"start_time":"1970-01-01T00:00:10Z","duration":1,"response_code":200,"k":"x"}"#;
        let nokey =
            r#"{"start_time":"1970-01-01T00:00:10Z","duration":1,"response_code":200,"k":"-"}"#;
        std::fs::write(&log, format!("{good}\n\n{nokey}\nnot json\n{good}\n")).unwrap();
        let mut a = audit(Lines::Json(jsonl::Fields::envoy("k")), vec![log.clone()]);
        let e = read_logs(&a).unwrap_err();
        assert!(
            e.message.contains("a.jsonl:4: not a JSON object"),
            "{}",
            e.message
        );
        assert_eq!(e.exit, Exit::BadInput);
        a.skip_bad_lines = true;
        let (logged, read) = read_logs(&a).unwrap();
        assert_eq!(logged.len(), 2);
        assert_eq!(
            (read.lines, read.requests, read.without_key, read.skipped),
            (5, 2, 1, 1)
        );
        assert!(
            read.sentence(1)
                .contains("1 skipped as unreadable (first: "),
            "{}",
            read.sentence(1)
        );
        std::fs::write(&log, [b"\xff\xfe\n".as_slice()].concat()).unwrap();
        a.skip_bad_lines = false;
        assert!(read_logs(&a)
            .unwrap_err()
            .message
            .contains("a.jsonl:1: not UTF-8"));
        let missing = audit(Lines::Haproxy(1), vec![dir.path().join("none.log")]);
        assert!(read_logs(&missing)
            .unwrap_err()
            .message
            .contains("none.log"));
    }
}
