//! What an answer means: the mapping of statuses to outcomes (2xx
//! admitted, a limited status rejected, anything else an error) and of
//! failures to their kind (refused, reset, ...).

use crate::events::advertised::Advertised;
use crate::events::{ErrorKind, Outcome};

/// How one exchange ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    /// HTTP status, 0 when there was none.
    pub status: u16,
    pub outcome: Outcome,
    /// Why there was no answer.
    pub error: Option<ErrorKind>,
    /// The answer's rate-limit headers, if it had any.
    pub advertised: Option<Advertised>,
}

/// The outcome an answer means: a status in `limited` is the limiter's
/// no (checked first: a target may limit with any status), 2xx a yes, and
/// anything else an error.
pub(crate) fn classify(status: u16, limited: &[u16]) -> Outcome {
    if limited.contains(&status) {
        return Outcome::Rejected;
    }
    match status {
        200..=299 => Outcome::Admitted,
        _ => Outcome::Error,
    }
}

pub(super) fn failed(kind: ErrorKind) -> Answer {
    Answer {
        status: 0,
        outcome: Outcome::Error,
        error: Some(kind),
        advertised: None,
    }
}

pub(super) fn timed_out() -> Answer {
    Answer {
        status: 0,
        outcome: Outcome::Timeout,
        error: None,
        advertised: None,
    }
}

pub(super) fn answered(status: u16, limited: &[u16], advertised: Option<Advertised>) -> Answer {
    Answer {
        status,
        outcome: classify(status, limited),
        error: None,
        advertised,
    }
}

/// The kind of a failed exchange, from the innermost I/O error when there
/// is one (refused, reset, ...), else from hyper's own classification.
pub(crate) fn error_kind(e: &(dyn std::error::Error + 'static)) -> ErrorKind {
    use std::io::ErrorKind as Io;
    let mut connect = false;
    let mut closed = false;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(e) = err.downcast_ref::<hyper_util::client::legacy::Error>() {
            connect |= e.is_connect();
        }
        if let Some(e) = err.downcast_ref::<hyper::Error>() {
            closed |= e.is_incomplete_message() || e.is_closed() || e.is_canceled();
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            match io.kind() {
                Io::ConnectionRefused => return ErrorKind::ConnectRefused,
                Io::TimedOut if connect => return ErrorKind::ConnectTimeout,
                Io::ConnectionReset | Io::ConnectionAborted | Io::BrokenPipe => {
                    return ErrorKind::Reset
                }
                Io::AddrNotAvailable | Io::AddrInUse => return ErrorKind::NoLocalPort,
                Io::UnexpectedEof => return ErrorKind::Closed,
                _ => {}
            }
        }
        source = err.source();
    }
    if connect {
        ErrorKind::Connect
    } else if closed {
        ErrorKind::Closed
    } else {
        ErrorKind::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::request::DEFAULT_LIMITED;

    #[test]
    fn statuses_map_to_outcomes() {
        assert_eq!(classify(200, DEFAULT_LIMITED), Outcome::Admitted);
        assert_eq!(classify(204, DEFAULT_LIMITED), Outcome::Admitted);
        assert_eq!(classify(429, DEFAULT_LIMITED), Outcome::Rejected);
        assert_eq!(classify(400, DEFAULT_LIMITED), Outcome::Error);
        assert_eq!(classify(503, DEFAULT_LIMITED), Outcome::Error);
        // nginx limits with 503 unless told otherwise; then 429 is an error.
        assert_eq!(classify(503, &[503]), Outcome::Rejected);
        assert_eq!(classify(429, &[503]), Outcome::Error);
        assert_eq!(classify(200, &[503, 429]), Outcome::Admitted);
    }

    /// An error whose cause is `inner`, as hyper wraps I/O errors.
    #[derive(Debug)]
    struct Wrapped(std::io::Error);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "wrapped")
        }
    }

    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn failures_are_named_by_their_innermost_io_error() {
        use std::io::{Error, ErrorKind as Io};
        for (io, kind) in [
            (Io::ConnectionRefused, ErrorKind::ConnectRefused),
            (Io::ConnectionReset, ErrorKind::Reset),
            (Io::BrokenPipe, ErrorKind::Reset),
            (Io::AddrNotAvailable, ErrorKind::NoLocalPort),
            (Io::UnexpectedEof, ErrorKind::Closed),
            (Io::PermissionDenied, ErrorKind::Other),
            // A timeout is a connect timeout only while connecting.
            (Io::TimedOut, ErrorKind::Other),
        ] {
            assert_eq!(error_kind(&Wrapped(Error::from(io))), kind, "{io:?}");
            assert_eq!(error_kind(&Error::from(io)), kind, "{io:?}");
        }
    }
}
