//! The trace: one record per request, streamed to `events/<arm>.csv` in the
//! run folder while the load runs, so memory does not grow with the run.
//! Columns: `seq,key,replica,intended_us,sent_us,done_us,status,outcome,error`,
//! times in µs since the load started, on the generator's monotonic clock;
//! `error` names why a request got no answer (empty otherwise; a file
//! written before the column existed reads as empty). The `rl_*` and
//! `retry_after_ms` columns hold what the answer's rate-limit headers
//! advertised (see `advertised`), empty when it had none.

pub mod advertised;
mod read;
mod write;

use crate::events::advertised::Advertised;
pub use read::read;
use serde::{Deserialize, Serialize};
pub use write::EventWriter;

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
