//! The trace: one record per request, streamed to `events/<arm>.csv` in the
//! run folder while the load runs, so memory does not grow with the run.
//! Columns: `seq,key,replica,intended_us,sent_us,done_us,status,outcome,error`,
//! times in µs since the load started, on the generator's monotonic clock;
//! `error` names why a request got no answer (empty otherwise; a file
//! written before the column existed reads as empty). The `rl_*` and
//! `retry_after_ms` columns hold what the answer's rate-limit headers
//! advertised (see `advertised`), empty when it had none.

use crate::advertised::Advertised;
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

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Row")]
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
    #[serde(default)]
    pub error: Option<ErrorKind>,
    /// The answer's rate-limit headers.
    #[serde(skip)]
    pub advertised: Option<Advertised>,
}

/// A line of the file as it is (older files lack the later columns).
#[derive(Deserialize)]
struct Row {
    seq: u64,
    key: String,
    replica: u32,
    intended_us: u64,
    sent_us: u64,
    done_us: u64,
    status: u16,
    outcome: Outcome,
    #[serde(default)]
    error: Option<ErrorKind>,
    #[serde(default)]
    rl_limit: Option<u64>,
    #[serde(default)]
    rl_window_s: Option<u64>,
    #[serde(default)]
    rl_remaining: Option<u64>,
    #[serde(default)]
    rl_reset_ms: Option<u64>,
    #[serde(default)]
    retry_after_ms: Option<u64>,
    #[serde(default)]
    rl_present: Option<u8>,
    #[serde(default)]
    rl_malformed: Option<u8>,
}

impl From<Row> for Event {
    fn from(r: Row) -> Self {
        let advertised = r.rl_present.filter(|&p| p != 0).map(|present| Advertised {
            limit: r.rl_limit,
            window_s: r.rl_window_s,
            remaining: r.rl_remaining,
            reset_ms: r.rl_reset_ms,
            retry_after_ms: r.retry_after_ms,
            present,
            malformed: r.rl_malformed.unwrap_or(0),
        });
        Event {
            seq: r.seq,
            key: r.key,
            replica: r.replica,
            intended_us: r.intended_us,
            sent_us: r.sent_us,
            done_us: r.done_us,
            status: r.status,
            outcome: r.outcome,
            error: r.error,
            advertised,
        }
    }
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

/// Streams the events of a file.
pub fn read(path: &Path) -> Result<impl Iterator<Item = Result<Event, String>>, String> {
    let shown = path.display().to_string();
    let reader = csv::Reader::from_path(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    Ok(reader
        .into_deserialize::<Event>()
        .map(move |r| r.map_err(|e| format!("{shown}: {e}"))))
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
