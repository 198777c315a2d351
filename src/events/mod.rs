//! The trace: one record per request, streamed to `events/<arm>.csv` in the
//! run folder while the load runs, so memory does not grow with the run.
//! Columns: `seq,key,replica,intended_us,sent_us,done_us,status,outcome,error`,
//! times in µs since the load started, on the generator's monotonic clock;
//! `error` names why a request got no answer (empty otherwise; a file
//! written before the column existed reads as empty). The `rl_*` and
//! `retry_after_ms` columns hold what the answer's rate-limit headers
//! advertised (see `advertised`), empty when it had none.

pub mod advertised;

use crate::events::advertised::Advertised;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::thread::JoinHandle;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TryRecvError;

/// How long the writer sleeps when no event is waiting.
const POLL: std::time::Duration = std::time::Duration::from_millis(1);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A 2xx answer.
    Admitted,
    /// A 429: the limiter said no.
    Rejected,
    /// No answer, or an answer that is neither (status says which).
    Error,
    /// No answer within the request timeout.
    Timeout,
}

/// Why a request got no answer, as counted in `errors_by_kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Nothing listens on the target's port.
    ConnectRefused,
    /// The TCP connect did not finish in time.
    ConnectTimeout,
    /// Any other failure to connect.
    Connect,
    /// No local port or address left (ephemeral ports exhausted).
    NoLocalPort,
    /// The connection was reset or aborted.
    Reset,
    /// The server closed the connection before a whole answer.
    Closed,
    Other,
}

impl ErrorKind {
    const ALL: [ErrorKind; 7] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::Connect,
        ErrorKind::NoLocalPort,
        ErrorKind::Reset,
        ErrorKind::Closed,
        ErrorKind::Other,
    ];

    fn from_name(name: &[u8]) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name().as_bytes() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect_refused",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::Connect => "connect",
            ErrorKind::NoLocalPort => "no_local_port",
            ErrorKind::Reset => "reset",
            ErrorKind::Closed => "closed",
            ErrorKind::Other => "other",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub seq: u64,
    pub key: String,
    /// Index of the target (replica) the request was sent to.
    pub replica: u32,
    /// When the schedule meant to send it.
    pub intended_us: u64,
    /// When it actually left.
    pub sent_us: u64,
    /// When the answer (or the failure) arrived.
    pub done_us: u64,
    /// HTTP status, 0 when there was none.
    pub status: u16,
    pub outcome: Outcome,
    pub error: Option<ErrorKind>,
    /// The answer's rate-limit headers.
    pub advertised: Option<Advertised>,
}

impl Event {
    /// Latency as the user sees it: from the intended send time.
    pub fn latency_us(&self) -> u64 {
        self.done_us.saturating_sub(self.intended_us)
    }

    /// How late the generator sent it.
    pub fn lag_us(&self) -> u64 {
        self.sent_us.saturating_sub(self.intended_us)
    }
}

/// Events travel to the writer in batches: a closed-loop worker sends one
/// batch per [`BATCH`] requests, an open-loop request a batch of one.
pub type Batch = Vec<Event>;

/// A closed-loop worker's batch size.
pub const BATCH: usize = 64;

const HEADER: &[u8] = b"seq,key,replica,intended_us,sent_us,done_us,status,outcome,error,\
rl_limit,rl_window_s,rl_remaining,rl_reset_ms,retry_after_ms,rl_present,rl_malformed\n";

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Admitted => "admitted",
            Outcome::Rejected => "rejected",
            Outcome::Error => "error",
            Outcome::Timeout => "timeout",
        }
    }
}

/// One CSV line, written by hand (integers through itoa): the writer keeps
/// up with a closed loop at 100k requests/s without taking a core.
fn write_line(out: &mut impl Write, e: &Event) -> std::io::Result<()> {
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
    out.write_all(b"\n")
}

/// Writes events on a thread of its own; senders never touch the disk.
pub struct EventWriter {
    tx: mpsc::Sender<Batch>,
    thread: JoinHandle<Result<u64, String>>,
}

impl EventWriter {
    pub fn create(path: &Path) -> Result<Self, String> {
        let file =
            File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        let shown = path.display().to_string();
        let (tx, mut rx) = mpsc::channel::<Batch>(16_384);
        let thread = std::thread::spawn(move || {
            let failed = |e: std::io::Error| format!("cannot write {shown}: {e}");
            let mut out = BufWriter::with_capacity(1 << 20, file);
            out.write_all(HEADER).map_err(failed)?;
            let mut written = 0;
            // Polls rather than parks: a parked writer would have to be
            // woken (a futex call) for every batch at high rates.
            loop {
                match rx.try_recv() {
                    Ok(batch) => {
                        for event in &batch {
                            write_line(&mut out, event).map_err(failed)?;
                        }
                        written += batch.len() as u64;
                    }
                    Err(TryRecvError::Empty) => std::thread::sleep(POLL),
                    Err(TryRecvError::Disconnected) => break,
                }
            }
            out.flush().map_err(failed)?;
            Ok(written)
        });
        Ok(EventWriter { tx, thread })
    }

    pub fn sender(&self) -> mpsc::Sender<Batch> {
        self.tx.clone()
    }

    /// Waits until every sender is gone and all events are on disk.
    pub fn finish(self) -> Result<u64, String> {
        drop(self.tx);
        self.thread
            .join()
            .map_err(|_| "the event writer panicked".to_string())?
    }
}

/// Streams the events of a file. Fields are parsed by hand from byte
/// records (twice as fast as serde on a 16-column line), by the header's
/// column names, so files written before a column existed still read.
pub fn read(path: &Path) -> Result<impl Iterator<Item = Result<Event, String>>, String> {
    let shown = path.display().to_string();
    let mut reader =
        csv::Reader::from_path(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let header = reader
        .byte_headers()
        .map_err(|e| format!("{shown}: {e}"))?
        .clone();
    let columns = Columns::of(&header).map_err(|e| format!("{shown}: {e}"))?;
    let mut record = csv::ByteRecord::new();
    Ok(std::iter::from_fn(move || {
        match reader.read_byte_record(&mut record) {
            Ok(false) => None,
            Ok(true) => Some(columns.event(&record).map_err(|e| {
                let line = record.position().map_or(0, |p| p.line());
                format!("{shown}:{line}: {e}")
            })),
            Err(e) => Some(Err(format!("{shown}: {e}"))),
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
}

impl Columns {
    fn of(header: &csv::ByteRecord) -> Result<Self, String> {
        let find = |name: &str| header.iter().position(|h| h == name.as_bytes());
        let need = |name: &str| find(name).ok_or_else(|| format!("no column {name:?}"));
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
        })
    }

    fn event(&self, r: &csv::ByteRecord) -> Result<Event, String> {
        let field = |i: usize| r.get(i).unwrap_or_default();
        let number = |i: usize, name: &str| -> Result<u64, String> {
            parse_u64(field(i)).ok_or_else(|| {
                format!(
                    "{name}: {:?} is not a number",
                    String::from_utf8_lossy(field(i))
                )
            })
        };
        let optional = |i: Option<usize>| -> Result<Option<u64>, String> {
            match i.map(field) {
                None | Some(b"") => Ok(None),
                Some(v) => parse_u64(v)
                    .map(Some)
                    .ok_or_else(|| format!("{:?} is not a number", String::from_utf8_lossy(v))),
            }
        };
        let outcome = match field(self.outcome) {
            b"admitted" => Outcome::Admitted,
            b"rejected" => Outcome::Rejected,
            b"error" => Outcome::Error,
            b"timeout" => Outcome::Timeout,
            other => {
                return Err(format!(
                    "unknown outcome {:?}",
                    String::from_utf8_lossy(other)
                ))
            }
        };
        let error = match self.error.map(field) {
            None | Some(b"") => None,
            Some(name) => Some(ErrorKind::from_name(name).ok_or_else(|| {
                format!("unknown error kind {:?}", String::from_utf8_lossy(name))
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
        Ok(Event {
            seq: number(self.seq, "seq")?,
            key: String::from_utf8(field(self.key).to_vec()).map_err(|_| "key: not UTF-8")?,
            replica: number(self.replica, "replica")? as u32,
            intended_us: number(self.intended_us, "intended_us")?,
            sent_us: number(self.sent_us, "sent_us")?,
            done_us: number(self.done_us, "done_us")?,
            status: number(self.status, "status")? as u16,
            outcome,
            error,
            advertised,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn events_round_trip_through_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.csv");
        let writer = EventWriter::create(&path).unwrap();
        let tx = writer.sender();
        let e = Event {
            seq: 3,
            key: "customer-7".into(),
            replica: 2,
            intended_us: 1_000,
            sent_us: 1_200,
            done_us: 3_000,
            status: 429,
            outcome: Outcome::Rejected,
            error: None,
            advertised: Some(Advertised {
                limit: Some(10),
                window_s: None,
                remaining: Some(0),
                reset_ms: Some(1_500),
                retry_after_ms: Some(2_000),
                present: 9,
                malformed: 0,
            }),
        };
        let refused = Event {
            seq: 4,
            status: 0,
            outcome: Outcome::Error,
            error: Some(ErrorKind::ConnectRefused),
            advertised: None,
            ..e.clone()
        };
        let odd = Event {
            seq: 5,
            key: "a,\"b\"".into(),
            outcome: Outcome::Timeout,
            ..e.clone()
        };
        tx.send(vec![e.clone()]).await.unwrap();
        tx.send(vec![refused.clone(), odd.clone()]).await.unwrap();
        drop(tx);
        assert_eq!(writer.finish().unwrap(), 3);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with(
                "seq,key,replica,intended_us,sent_us,done_us,status,outcome,error,rl_"
            ),
            "{text}"
        );
        assert!(text.contains(",error,connect_refused,,,,,,,\n"), "{text}");
        assert!(text.contains(",rejected,,10,,0,1500,2000,9,0\n"), "{text}");
        let back: Vec<Event> = read(&path).unwrap().map(Result::unwrap).collect();
        assert_eq!(back, vec![e.clone(), refused, odd]);
        assert_eq!(e.latency_us(), 2_000);
        assert_eq!(e.lag_us(), 200);
    }

    #[test]
    fn a_bad_field_is_an_error_naming_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.csv");
        std::fs::write(
            &path,
            "seq,key,replica,intended_us,sent_us,done_us,status,outcome,error\n\
             0,k,1,10,20,30,200,admitted,\n\
             1,k,1,10,2x,30,200,admitted,\n\
             2,k,1,10,20,30,200,maybe,\n",
        )
        .unwrap();
        let back: Vec<Result<Event, String>> = read(&path).unwrap().collect();
        assert!(back[0].is_ok());
        let e = back[1].as_ref().unwrap_err();
        assert!(
            e.ends_with("bad.csv:3: sent_us: \"2x\" is not a number"),
            "{e}"
        );
        let e = back[2].as_ref().unwrap_err();
        assert!(e.contains(":4: unknown outcome \"maybe\""), "{e}");
        let missing = dir.path().join("missing.csv");
        std::fs::write(&missing, "seq,key\n0,k\n").unwrap();
        let e = read(&missing).err().unwrap();
        assert!(e.contains("no column \"replica\""), "{e}");
    }

    #[test]
    fn files_without_the_error_column_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.csv");
        std::fs::write(
            &path,
            "seq,key,replica,intended_us,sent_us,done_us,status,outcome\n0,k,1,10,20,30,200,admitted\n",
        )
        .unwrap();
        let back: Vec<Event> = read(&path).unwrap().map(Result::unwrap).collect();
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].error, None);
        assert_eq!(back[0].outcome, Outcome::Admitted);
    }
}
