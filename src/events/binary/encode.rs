//! Writing a trace: events as `K` and `E` records, keys numbered as they
//! come (or renumbered from another trace's).

use super::format::{AGENT, AGENT_BIT, EVENT, FIXED, KEY, MAGIC, OUTCOMES, RETRIED, RETRY_BIT};
use crate::events::Event;
use std::collections::HashMap;
use std::io::{ErrorKind as Io, Write};

/// Writes events as records, numbering keys as they come.
#[derive(Default)]
pub(crate) struct Encoder {
    keys: HashMap<String, u32>,
}

impl Encoder {
    pub(crate) fn start(out: &mut impl Write) -> std::io::Result<()> {
        out.write_all(MAGIC)
    }

    pub(crate) fn write(&mut self, out: &mut impl Write, e: &Event) -> std::io::Result<()> {
        let key = match self.keys.get(e.key.as_str()) {
            Some(&id) => id,
            None => {
                let id = self.keys.len() as u32;
                key_record(out, &e.key)?;
                self.keys.insert(e.key.clone(), id);
                id
            }
        };
        event_record(out, key, e)
    }
}

/// Writes the records of another trace's events, whose keys that trace
/// numbered (`Record`): each key is named the first time it comes, and
/// numbered anew in this one (a trace split by key, `analyze::spill`).
#[derive(Default)]
pub(crate) struct Renumbering {
    /// The other trace's number of each key written, and its number here.
    keys: HashMap<u32, u32>,
}

impl Renumbering {
    /// Writes event `e` of key `key` (named `name`) of the other trace;
    /// its `key` field is not read.
    pub(crate) fn write(
        &mut self,
        out: &mut impl Write,
        key: u32,
        name: &str,
        e: &Event,
    ) -> std::io::Result<()> {
        let id = match self.keys.get(&key) {
            Some(&id) => id,
            None => {
                let id = self.keys.len() as u32;
                key_record(out, name)?;
                self.keys.insert(key, id);
                id
            }
        };
        event_record(out, id, e)
    }
}

/// A `K` record: a key's name.
fn key_record(out: &mut impl Write, name: &str) -> std::io::Result<()> {
    let bytes = name.as_bytes();
    let len = u16::try_from(bytes.len())
        .map_err(|_| std::io::Error::new(Io::InvalidInput, "a key longer than 65535 bytes"))?;
    out.write_all(&[KEY])?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(bytes)
}

/// An `E` record: event `e` of the key numbered `key`.
fn event_record(out: &mut impl Write, key: u32, e: &Event) -> std::io::Result<()> {
    {
        let mut buf = [0u8; 1 + FIXED + 5 * 8 + 2 + RETRIED + AGENT];
        buf[0] = EVENT;
        buf[1..9].copy_from_slice(&e.seq.to_le_bytes());
        buf[9..13].copy_from_slice(&key.to_le_bytes());
        buf[13..17].copy_from_slice(&e.replica.to_le_bytes());
        buf[17..25].copy_from_slice(&e.intended_us.to_le_bytes());
        buf[25..33].copy_from_slice(&e.sent_us.to_le_bytes());
        buf[33..41].copy_from_slice(&e.done_us.to_le_bytes());
        buf[41..43].copy_from_slice(&e.status.to_le_bytes());
        buf[43] = OUTCOMES.iter().position(|o| *o == e.outcome).unwrap_or(2) as u8;
        buf[44] = e.error.map_or(0, |k| k.index() as u8 + 1);
        let mut len = 1 + FIXED;
        if let Some(a) = &e.advertised {
            let mut flags = 1u8;
            for (bit, v) in [
                a.limit,
                a.window_s,
                a.remaining,
                a.reset_ms,
                a.retry_after_ms,
            ]
            .into_iter()
            .enumerate()
            {
                if let Some(v) = v {
                    flags |= 1 << (bit + 1);
                    buf[len..len + 8].copy_from_slice(&v.to_le_bytes());
                    len += 8;
                }
            }
            buf[len] = a.present;
            buf[len + 1] = a.malformed;
            len += 2;
            buf[45] = flags;
        }
        if let Some(r) = e.retry_of {
            buf[45] |= RETRY_BIT;
            buf[len..len + 8].copy_from_slice(&r.first.to_le_bytes());
            buf[len + 8] = r.attempt;
            len += RETRIED;
        }
        if e.agent != 0 {
            buf[45] |= AGENT_BIT;
            buf[len..len + AGENT].copy_from_slice(&e.agent.to_le_bytes());
            len += AGENT;
        }
        out.write_all(&buf[..len])
    }
}
