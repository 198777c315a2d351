//! The trace as rlbench keeps it: `events/<arm>.trace`, little-endian
//! binary records read back without parsing text (a run of millions of
//! requests reads in well under a second; `rlbench export` gives CSV or
//! JSON Lines).
//!
//! The file starts with [`MAGIC`]; then records, each opened by a tag:
//! - `K`: a key, `u16` length then its UTF-8 bytes; keys are numbered from
//!   0 in the order they first appear;
//! - `E`: an event: `seq u64, key u32, replica u32, intended_us u64,
//!   sent_us u64, done_us u64, status u16, outcome u8, error u8` (0: none,
//!   else 1 + the kind's index), then a flags byte: bit 0 the answer
//!   advertised something, bits 1–5 which of `limit, window_s, remaining,
//!   reset_ms, retry_after_ms` follow (a `u64` each, in that order), and
//!   with bit 0 the `present` and `malformed` bytes; bit 6: the event is a
//!   retry, and its first attempt's `seq` (`u64`) and its attempt number
//!   (`u8`) follow. Traces written before retries existed never set it.
//!   Bit 7: the event came from a load agent other than the first
//!   (`rlbench run --agents`), whose index (`u16`) comes last; a trace of
//!   one machine never sets it.

mod decode;
mod encode;
mod format;

pub(crate) use decode::Decoder;
pub(crate) use encode::{Encoder, Renumbering};
pub(crate) use format::Record;
#[cfg(test)]
pub(crate) use format::MAGIC;

use super::integrity::Check;
use super::{Event, EventsError};
use std::path::Path;

/// Streams the records of a trace file, held to `check` (`integrity`):
/// any damage is an error naming the file and the byte it was found at.
pub(crate) fn records(
    path: &Path,
    check: Check,
) -> Result<impl Iterator<Item = Result<Record, EventsError>>, EventsError> {
    let mut decoder = Decoder::open(path, check)?;
    Ok(std::iter::from_fn(move || {
        decoder.next_record().transpose()
    }))
}

/// Streams the events of a trace file, each with its key's name.
pub(crate) fn read(
    path: &Path,
    check: Check,
) -> Result<impl Iterator<Item = Result<Event, EventsError>>, EventsError> {
    let mut names: Vec<String> = Vec::new();
    Ok(
        records(path, check)?.filter_map(move |record| match record {
            Ok(Record::Key(name)) => {
                names.push(name);
                None
            }
            Ok(Record::Event(key, mut e)) => {
                e.key = names[key as usize].clone();
                Some(Ok(e))
            }
            Err(e) => Some(Err(e)),
        }),
    )
}
