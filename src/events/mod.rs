//! The trace: one record per request, streamed to `events/<arm>.trace` in
//! the run folder while the load runs, so memory does not grow with the
//! run (`binary`; folders written before it hold `events/<arm>.csv`, which
//! `read` takes too). Each event: its `seq`, key and replica, the
//! intended, actual send and answer times in µs since the load started on
//! the generator's monotonic clock, the status and outcome, why a request
//! got no answer (`error`), and what the answer's rate-limit headers
//! advertised (`advertised`); a retry also names its first attempt
//! (`retry_of`). `export` writes it as CSV or JSON Lines.

pub(crate) mod advertised;
pub(crate) mod binary;
pub(crate) mod clock;
pub(crate) mod csv;
mod error;
pub(crate) mod export;
pub(crate) mod integrity;
pub(crate) mod read;
pub(crate) mod write;

pub(crate) use error::{EventsError, Flaw, Place};

use crate::events::advertised::Advertised;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
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
pub(crate) enum ErrorKind {
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
    /// The TLS handshake failed (a certificate not trusted, no protocol
    /// in common).
    Tls,
}

impl ErrorKind {
    /// In the order traces store them: new kinds go last.
    const ALL: [ErrorKind; 8] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::Connect,
        ErrorKind::NoLocalPort,
        ErrorKind::Reset,
        ErrorKind::Closed,
        ErrorKind::Other,
        ErrorKind::Tls,
    ];

    /// Its place in a fixed order (the binary trace stores it).
    pub(crate) fn index(self) -> usize {
        Self::ALL.iter().position(|k| *k == self).unwrap_or(6)
    }

    pub(crate) fn from_index(i: usize) -> Option<Self> {
        Self::ALL.get(i).copied()
    }

    fn from_name(name: &[u8]) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name().as_bytes() == name)
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect_refused",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::Connect => "connect",
            ErrorKind::NoLocalPort => "no_local_port",
            ErrorKind::Reset => "reset",
            ErrorKind::Closed => "closed",
            ErrorKind::Other => "other",
            ErrorKind::Tls => "tls",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
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
    /// A retry's link to its first attempt (`[load] retry`); `None` for a
    /// first attempt.
    pub retry_of: Option<RetryOf>,
    /// Which load agent sent it (`rlbench run --agents`): its index in the
    /// arm's record; 0 when one machine sent everything.
    pub agent: u16,
}

/// Which request a retry retries, and which attempt it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RetryOf {
    /// The first attempt's `seq`.
    pub first: u64,
    /// 2 for the first retry, 3 for the next, ... (the first attempt is 1).
    pub attempt: u8,
}

impl Event {
    /// Latency as the user sees it: from the intended send time.
    pub(crate) fn latency_us(&self) -> u64 {
        self.done_us.saturating_sub(self.intended_us)
    }

    /// How late the generator sent it.
    pub(crate) fn lag_us(&self) -> u64 {
        self.sent_us.saturating_sub(self.intended_us)
    }

    /// 1 for a first attempt, 2 for its first retry, ...
    pub(crate) fn attempt(&self) -> u8 {
        self.retry_of.map_or(1, |r| r.attempt)
    }
}

/// Events travel to the writer in batches: a closed-loop worker sends one
/// batch per [`BATCH`] requests, an open-loop request a batch of one.
pub(crate) type Batch = Vec<Event>;

/// A closed-loop worker's batch size.
pub(crate) const BATCH: usize = 64;

impl Outcome {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Outcome::Admitted => "admitted",
            Outcome::Rejected => "rejected",
            Outcome::Error => "error",
            Outcome::Timeout => "timeout",
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod hostile_tests;
