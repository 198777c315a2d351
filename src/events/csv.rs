//! The trace as CSV: how `rlbench export` writes it (and run folders
//! before the binary trace kept it), and reading such files back by the
//! header's column names, so files written before a column existed still
//! read. Columns: `seq,key,replica,intended_us,sent_us,done_us,status,
//! outcome,error,rl_limit,rl_window_s,rl_remaining,rl_reset_ms,
//! retry_after_ms,rl_present,rl_malformed,attempt,retry_of` (`attempt` 1
//! for a first try; `retry_of` a retry's first attempt's `seq`, empty for
//! a first try).

use super::{ErrorKind, Event, EventsError, Flaw, Outcome, Place, RetryOf};
use crate::events::advertised::Advertised;
use std::io::Write;
use std::path::Path;

pub(crate) const HEADER: &[u8] =
    b"seq,key,replica,intended_us,sent_us,done_us,status,outcome,error,\
rl_limit,rl_window_s,rl_remaining,rl_reset_ms,retry_after_ms,rl_present,rl_malformed,\
attempt,retry_of\n";

/// One CSV line, written by hand (integers through itoa): the writer keeps
/// up with a closed loop at 100k requests/s without taking a core.
pub(crate) fn write_line(out: &mut impl Write, e: &Event) -> std::io::Result<()> {
    let mut n = itoa::Buffer::new();
    out.write_all(n.format(e.seq).as_bytes())?;
    out.write_all(b",")?;
    if e.key.contains([',', '"', '\n', '\r']) {
        out.write_all(b"\"")?;
        out.write_all(e.key.replace('"', "\"\"").as_bytes())?;
        out.write_all(b"\"")?;
    } else {
        out.write_all(e.key.as_bytes())?;
    }
    for v in [
        u64::from(e.replica),
        e.intended_us,
        e.sent_us,
        e.done_us,
        u64::from(e.status),
    ] {
        out.write_all(b",")?;
        out.write_all(n.format(v).as_bytes())?;
    }
    out.write_all(b",")?;
    out.write_all(e.outcome.name().as_bytes())?;
    out.write_all(b",")?;
    if let Some(kind) = e.error {
        out.write_all(kind.name().as_bytes())?;
    }
    match &e.advertised {
        None => out.write_all(b",,,,,,,")?,
        Some(a) => {
            for v in [
                a.limit,
                a.window_s,
                a.remaining,
                a.reset_ms,
                a.retry_after_ms,
                Some(u64::from(a.present)),
                Some(u64::from(a.malformed)),
            ] {
                out.write_all(b",")?;
                if let Some(v) = v {
                    out.write_all(n.format(v).as_bytes())?;
                }
            }
        }
    }
    out.write_all(b",")?;
    out.write_all(n.format(e.attempt()).as_bytes())?;
    out.write_all(b",")?;
    if let Some(r) = e.retry_of {
        out.write_all(n.format(r.first).as_bytes())?;
    }
    out.write_all(b"\n")
}

/// Streams the events of a CSV file. Fields are parsed by hand from byte
/// records (twice as fast as serde on a 16-column line), by the header's
/// column names, so files written before a column existed still read.
pub(crate) fn read(
    path: &Path,
) -> Result<impl Iterator<Item = Result<Event, EventsError>>, EventsError> {
    let path = path.to_path_buf();
    let csv_error = |source| EventsError::Csv {
        path: path.clone(),
        source,
    };
    let file = crate::files::open_regular(&path).map_err(|source| EventsError::CsvOpen {
        path: path.clone(),
        source: source.into(),
    })?;
    let mut reader = csv::Reader::from_reader(file);
    let header = reader.byte_headers().map_err(csv_error)?.clone();
    let columns = Columns::of(&header).map_err(|flaw| EventsError::Damaged {
        path: path.clone(),
        place: Place::Whole,
        flaw,
    })?;
    let mut record = csv::ByteRecord::new();
    Ok(std::iter::from_fn(move || {
        match reader.read_byte_record(&mut record) {
            Ok(false) => None,
            Ok(true) => Some(columns.event(&record).map_err(|flaw| {
                let line = record.position().map_or(0, |p| p.line());
                EventsError::Damaged {
                    path: path.clone(),
                    place: Place::Line(line),
                    flaw,
                }
            })),
            Err(source) => Some(Err(EventsError::Csv {
                path: path.clone(),
                source,
            })),
        }
    }))
}

/// Where each field is in a line.
struct Columns {
    seq: usize,
    key: usize,
    replica: usize,
    intended_us: usize,
    sent_us: usize,
    done_us: usize,
    status: usize,
    outcome: usize,
    error: Option<usize>,
    /// rl_limit, rl_window_s, rl_remaining, rl_reset_ms, retry_after_ms,
    /// rl_present, rl_malformed.
    advertised: [Option<usize>; 7],
    attempt: Option<usize>,
    retry_of: Option<usize>,
}

impl Columns {
    fn of(header: &csv::ByteRecord) -> Result<Self, Flaw> {
        let find = |name: &str| header.iter().position(|h| h == name.as_bytes());
        let need = |name: &'static str| find(name).ok_or(Flaw::NoColumn(name));
        Ok(Columns {
            seq: need("seq")?,
            key: need("key")?,
            replica: need("replica")?,
            intended_us: need("intended_us")?,
            sent_us: need("sent_us")?,
            done_us: need("done_us")?,
            status: need("status")?,
            outcome: need("outcome")?,
            error: find("error"),
            advertised: [
                "rl_limit",
                "rl_window_s",
                "rl_remaining",
                "rl_reset_ms",
                "retry_after_ms",
                "rl_present",
                "rl_malformed",
            ]
            .map(find),
            attempt: find("attempt"),
            retry_of: find("retry_of"),
        })
    }

    fn event(&self, r: &csv::ByteRecord) -> Result<Event, Flaw> {
        let field = |i: usize| r.get(i).unwrap_or_default();
        let number = |i: usize, column: &'static str| -> Result<u64, Flaw> {
            parse_u64(field(i)).ok_or_else(|| Flaw::NotNumber {
                column,
                value: String::from_utf8_lossy(field(i)).into_owned(),
            })
        };
        let optional = |i: Option<usize>| -> Result<Option<u64>, Flaw> {
            match i.map(field) {
                None | Some(b"") => Ok(None),
                Some(v) => parse_u64(v)
                    .map(Some)
                    .ok_or_else(|| Flaw::NotANumber(String::from_utf8_lossy(v).into_owned())),
            }
        };
        let outcome = match field(self.outcome) {
            b"admitted" => Outcome::Admitted,
            b"rejected" => Outcome::Rejected,
            b"error" => Outcome::Error,
            b"timeout" => Outcome::Timeout,
            other => {
                return Err(Flaw::OutcomeNamed(
                    String::from_utf8_lossy(other).into_owned(),
                ))
            }
        };
        let error =
            match self.error.map(field) {
                None | Some(b"") => None,
                Some(name) => Some(ErrorKind::from_name(name).ok_or_else(|| {
                    Flaw::ErrorKindNamed(String::from_utf8_lossy(name).into_owned())
                })?),
            };
        let [limit, window_s, remaining, reset_ms, retry_after_ms, present, malformed] =
            self.advertised;
        let present = optional(present)?.unwrap_or(0) as u8;
        let advertised = if present == 0 {
            None
        } else {
            Some(Advertised {
                limit: optional(limit)?,
                window_s: optional(window_s)?,
                remaining: optional(remaining)?,
                reset_ms: optional(reset_ms)?,
                retry_after_ms: optional(retry_after_ms)?,
                present,
                malformed: optional(malformed)?.unwrap_or(0) as u8,
            })
        };
        let retry_of = match optional(self.retry_of)? {
            None => None,
            Some(first) => Some(RetryOf {
                first,
                attempt: optional(self.attempt)?
                    .map_or(2, |a| a.clamp(2, u64::from(u8::MAX)) as u8),
            }),
        };
        Ok(Event {
            seq: number(self.seq, "seq")?,
            key: String::from_utf8(field(self.key).to_vec()).map_err(|_| Flaw::CsvKeyNotUtf8)?,
            replica: number(self.replica, "replica")? as u32,
            intended_us: number(self.intended_us, "intended_us")?,
            sent_us: number(self.sent_us, "sent_us")?,
            done_us: number(self.done_us, "done_us")?,
            status: number(self.status, "status")? as u16,
            outcome,
            error,
            advertised,
            retry_of,
            agent: 0,
        })
    }
}

/// Digits only, as written by `write_line`.
fn parse_u64(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() {
        return None;
    }
    bytes.iter().try_fold(0u64, |n, &b| {
        if b.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}
