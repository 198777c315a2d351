//! The trace format's fixed parts, shared by its writer and its reader:
//! the magic, the record tags, an event's lengths and flag bits, the
//! outcomes by number, and a record as read.

use crate::events::{Event, Outcome};

/// The first bytes of every trace file: name and format version.
pub(crate) const MAGIC: &[u8; 8] = b"rlbtrc01";

pub(crate) const KEY: u8 = b'K';

pub(crate) const EVENT: u8 = b'E';

/// An event's bytes after its tag, before the optional fields.
pub(crate) const FIXED: usize = 8 + 4 + 4 + 8 + 8 + 8 + 2 + 1 + 1 + 1;

/// The flag of a retry, and the bytes of its link.
pub(crate) const RETRY_BIT: u8 = 1 << 6;

pub(crate) const RETRIED: usize = 8 + 1;

/// The flag of an agent's index, and its bytes.
pub(crate) const AGENT_BIT: u8 = 1 << 7;

pub(crate) const AGENT: usize = 2;

/// The flags of the advertised fields.
pub(crate) const FIELD_BITS: u8 = 0b0011_1110;

pub(crate) const OUTCOMES: [Outcome; 4] = [
    Outcome::Admitted,
    Outcome::Rejected,
    Outcome::Error,
    Outcome::Timeout,
];

/// One record of a trace: a key's name (keys are numbered from 0 in the
/// order their names come), or an event of a numbered key (its `key`
/// field left empty).
pub(crate) enum Record {
    Key(String),
    Event(u32, Event),
}
