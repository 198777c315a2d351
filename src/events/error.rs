//! What can go wrong writing or reading a trace, each naming its file and,
//! for a damaged one, the place and the flaw. Every one is exit 3: a trace
//! rlbench cannot write, or cannot trust when reading it back, is the
//! machine's or the folder's failure, never a smaller verdict.

use crate::error::{Exit, Kind};
use std::fmt;
use std::path::PathBuf;

/// Why a trace cannot be one rlbench wrote.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Flaw {
    #[error("the event of seq {seq} was answered at {done} µs, before it was sent at {sent} µs")]
    AnsweredBeforeSent { seq: u64, done: u64, sent: u64 },
    #[error("a second event of seq {0}: each request is recorded once")]
    SecondEvent(u64),
    #[error(
        "{found} events, but its record says the run wrote {sealed}: the trace was cut or changed"
    )]
    Count { found: u64, sealed: u64 },
    #[error(
        "its checksum is {found:08x}, but its record says {sealed:08x}: the trace was changed"
    )]
    Checksum { found: u32, sealed: u32 },
    /// The file ends inside a record (the I/O error's words).
    #[error("a record cut short ({0})")]
    Cut(String),
    /// A read that failed other than at the end.
    #[error("{0}")]
    Unreadable(String),
    #[error("a key that is not UTF-8")]
    KeyNotUtf8,
    #[error("an event of a key not defined before it")]
    UndefinedKey,
    #[error("an unknown outcome")]
    UnknownOutcome,
    #[error("an unknown error kind")]
    UnknownErrorKind,
    #[error("an event with fields but no advertisement")]
    FieldsWithoutAdvertisement,
    #[error("an unknown record tag {0}")]
    UnknownTag(u8),
    // A CSV trace's lines.
    #[error("no column {0:?}")]
    NoColumn(&'static str),
    #[error("{column}: {value:?} is not a number")]
    NotNumber { column: &'static str, value: String },
    #[error("{0:?} is not a number")]
    NotANumber(String),
    #[error("unknown outcome {0:?}")]
    OutcomeNamed(String),
    #[error("unknown error kind {0:?}")]
    ErrorKindNamed(String),
    #[error("key: not UTF-8")]
    CsvKeyNotUtf8,
}

/// Where in a trace a flaw was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// A binary trace's byte offset.
    Byte(u64),
    /// A CSV trace's line.
    Line(u64),
    /// The n-th event (1-based).
    Event(u64),
    /// The trace as a whole (its count and checksum).
    Whole,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Byte(at) => write!(f, ": byte {at}"),
            Place::Line(n) => write!(f, ":{n}"),
            Place::Event(n) => write!(f, ": event {n}"),
            Place::Whole => Ok(()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum EventsError {
    #[error("cannot create {}: {source}", path.display())]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the event writer panicked")]
    WriterPanicked,
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {}: {source}", path.display())]
    CsvOpen { path: PathBuf, source: csv::Error },
    #[error("{}: {source}", path.display())]
    Csv { path: PathBuf, source: csv::Error },
    /// Shorter than the header every trace starts with (`binary::MAGIC`).
    #[error(
        "{}: not an rlbench trace: {size} bytes, too short for the header every trace \
         starts with (the 8 bytes {:?}): {source}",
        path.display(),
        String::from_utf8_lossy(&magic[..])
    )]
    Short {
        path: PathBuf,
        size: u64,
        magic: &'static [u8; 8],
        source: std::io::Error,
    },
    #[error(
        "{}: not an rlbench trace: it does not start with the header every trace starts \
         with (the 8 bytes {:?})",
        path.display(),
        String::from_utf8_lossy(&magic[..])
    )]
    NotTrace {
        path: PathBuf,
        magic: &'static [u8; 8],
    },
    #[error("{}{place}: {flaw}", path.display())]
    Damaged {
        path: PathBuf,
        place: Place,
        flaw: Flaw,
    },
}

impl Kind for EventsError {
    fn exit(&self) -> Exit {
        Exit::Environment
    }
}
