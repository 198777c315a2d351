//! Reading a trace: records decoded in place from large chunks of the
//! file, every byte held to the format and to the trace's seal.

use super::format::{
    Record, AGENT, AGENT_BIT, EVENT, FIELD_BITS, FIXED, KEY, MAGIC, OUTCOMES, RETRIED, RETRY_BIT,
};
use crate::events::advertised::Advertised;
use crate::events::integrity::{Check, Checker, Summing};
use crate::events::{ErrorKind, Event, EventsError, Flaw, Place, RetryOf};
use std::io::{ErrorKind as Io, Read};
use std::path::Path;

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut v = [0u8; 4];
    v.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(v)
}

/// The longest event record: tag, fixed part, five fields with the
/// present and malformed bytes, the retry's link, the agent's index.
const LONGEST: usize = 1 + FIXED + 5 * 8 + 2 + RETRIED + AGENT;

/// How much of the file is read at a time.
const CHUNK: usize = 1 << 20;

/// Reads a trace's records out of large chunks of the file: each record
/// is decoded from the bytes in place (no read call per field), and
/// [`Decoder::fill`] pushes a batch of them straight into a vector.
pub(crate) struct Decoder {
    input: Summing<std::fs::File>,
    path: std::path::PathBuf,
    check: Check,
    checker: Checker,
    /// The chunk read: `buf[start..end]` not decoded yet.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Where `buf[start]` is in the file.
    offset: u64,
    /// The file has no more bytes than `buf` holds.
    eof: bool,
    keys: u32,
    done: bool,
    /// [`Decoder::next_record`]'s record, decoded as a batch of one.
    one: Vec<Record>,
}

/// Why no record was decoded.
enum Stop {
    /// The file ends before the record does.
    Cut,
    Flaw(Flaw),
}

impl From<Flaw> for Stop {
    fn from(flaw: Flaw) -> Self {
        Stop::Flaw(flaw)
    }
}

impl Decoder {
    /// Opens a trace and checks its first bytes.
    pub(crate) fn open(path: &Path, check: Check) -> Result<Self, EventsError> {
        let file = crate::files::open_regular(path).map_err(|source| EventsError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut decoder = Decoder {
            input: Summing::new(file),
            path: path.to_path_buf(),
            check,
            checker: Checker::default(),
            buf: vec![0; CHUNK],
            start: 0,
            end: 0,
            offset: 0,
            eof: false,
            keys: 0,
            done: false,
            one: Vec::with_capacity(1),
        };
        let short = |source| EventsError::Short {
            path: path.to_path_buf(),
            size: std::fs::metadata(path).map_or(0, |m| m.len()),
            magic: MAGIC,
            source,
        };
        match decoder.ensure(MAGIC.len()) {
            Ok(true) => {}
            Ok(false) => return Err(short(std::io::Error::from(Io::UnexpectedEof))),
            Err(source) => return Err(short(source)),
        }
        if &decoder.buf[..MAGIC.len()] != MAGIC {
            return Err(EventsError::NotTrace {
                path: path.to_path_buf(),
                magic: MAGIC,
            });
        }
        decoder.advance(MAGIC.len());
        Ok(decoder)
    }

    /// Makes `need` bytes from `start` on available; false when the file
    /// ends first.
    fn ensure(&mut self, need: usize) -> std::io::Result<bool> {
        while self.end - self.start < need {
            if self.eof {
                return Ok(false);
            }
            // Keep what is left, at the front, and read behind it.
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.buf.len() < need {
                self.buf.resize(need, 0);
            }
            while self.end < self.buf.len() {
                match self.input.read(&mut self.buf[self.end..]) {
                    Ok(0) => {
                        self.eof = true;
                        break;
                    }
                    Ok(n) => self.end += n,
                    Err(e) if e.kind() == Io::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(true)
    }

    /// The next record, or `None` at the end (a cut record when the
    /// check allows an unfinished trace; the seal checked otherwise).
    pub(crate) fn next_record(&mut self) -> Result<Option<Record>, EventsError> {
        let mut one = std::mem::take(&mut self.one);
        let decoded = self.fill(&mut one, 1, &mut Vec::new());
        let record = one.pop();
        self.one = one;
        decoded.map(|_| record)
    }

    /// Pushes up to `most` records onto `out`, and onto `named` the place
    /// in `out` of each key record among them; false once the trace ended
    /// (the seal checked), an error at damage.
    pub(crate) fn fill(
        &mut self,
        out: &mut Vec<Record>,
        most: usize,
        named: &mut Vec<usize>,
    ) -> Result<bool, EventsError> {
        if self.done {
            return Ok(false);
        }
        for _ in 0..most {
            let at = self.offset;
            let damaged = |path: &Path, place: Place, flaw: Flaw| EventsError::Damaged {
                path: path.to_path_buf(),
                place,
                flaw,
            };
            match self.decode(out, named) {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    let crc = self.input.crc32();
                    return self
                        .checker
                        .end(self.check.seal, Some(crc))
                        .map(|()| false)
                        .map_err(|flaw| damaged(&self.path, Place::Whole, flaw));
                }
                // What a kill leaves: the last record half written.
                Err(Stop::Cut) if self.check.unfinished => {
                    self.done = true;
                    return Ok(false);
                }
                Err(Stop::Cut) => {
                    self.done = true;
                    let flaw = Flaw::Cut("the file ends inside it".into());
                    return Err(damaged(&self.path, Place::Byte(at), flaw));
                }
                Err(Stop::Flaw(flaw)) => {
                    self.done = true;
                    return Err(damaged(&self.path, Place::Byte(at), flaw));
                }
            }
        }
        Ok(true)
    }

    /// Pushes the record at `start` onto `out`, checked; false at a clean end.
    fn decode(&mut self, out: &mut Vec<Record>, named: &mut Vec<usize>) -> Result<bool, Stop> {
        let unreadable = |e: std::io::Error| Stop::Flaw(Flaw::Unreadable(e.to_string()));
        if !self.ensure(1).map_err(unreadable)? {
            return Ok(false);
        }
        match self.buf[self.start] {
            KEY => {
                if !self.ensure(3).map_err(unreadable)? {
                    return Err(Stop::Cut);
                }
                let b = &self.buf[self.start..];
                let len = u16::from_le_bytes([b[1], b[2]]) as usize;
                if !self.ensure(3 + len).map_err(unreadable)? {
                    return Err(Stop::Cut);
                }
                let bytes = self.buf[self.start + 3..self.start + 3 + len].to_vec();
                let name = String::from_utf8(bytes).map_err(|_| Flaw::KeyNotUtf8)?;
                self.advance(3 + len);
                self.keys += 1;
                named.push(out.len());
                out.push(Record::Key(name));
                Ok(true)
            }
            EVENT => {
                // The longest record in one look when the chunk holds it.
                if !self.ensure(LONGEST).map_err(unreadable)?
                    && !self.ensure(1 + FIXED).map_err(unreadable)?
                {
                    return Err(Stop::Cut);
                }
                let flags = self.buf[self.start + 1 + 44];
                let fields = if flags & 1 == 1 {
                    (flags & FIELD_BITS).count_ones() as usize * 8 + 2
                } else {
                    0
                };
                let len = 1
                    + FIXED
                    + fields
                    + if flags & RETRY_BIT != 0 { RETRIED } else { 0 }
                    + if flags & AGENT_BIT != 0 { AGENT } else { 0 };
                if !self.ensure(len).map_err(unreadable)? {
                    return Err(Stop::Cut);
                }
                let (key, e) = event(&self.buf[self.start + 1..self.start + len], self.keys)?;
                self.checker.event(&e)?;
                self.advance(len);
                out.push(Record::Event(key, e));
                Ok(true)
            }
            other => Err(Stop::Flaw(Flaw::UnknownTag(other))),
        }
    }

    fn advance(&mut self, n: usize) {
        self.start += n;
        self.offset += n as u64;
    }
}

/// An event's bytes after its tag (exactly the record's length), of a
/// trace that has named `keys` keys so far.
fn event(b: &[u8], keys: u32) -> Result<(u32, Event), Flaw> {
    let key = u32_at(b, 8);
    if key >= keys {
        return Err(Flaw::UndefinedKey);
    }
    let outcome = *OUTCOMES.get(b[42] as usize).ok_or(Flaw::UnknownOutcome)?;
    let error = match b[43] {
        0 => None,
        n => Some(ErrorKind::from_index(n as usize - 1).ok_or(Flaw::UnknownErrorKind)?),
    };
    // Every bit of the flags has its meaning now (the agent's last).
    let flags = b[44];
    let mut at = FIXED;
    let mut advertised = None;
    if flags & 1 == 1 {
        let mut values = [None; 5];
        for (bit, value) in values.iter_mut().enumerate() {
            if flags & (1 << (bit + 1)) != 0 {
                *value = Some(u64_at(b, at));
                at += 8;
            }
        }
        advertised = Some(Advertised {
            limit: values[0],
            window_s: values[1],
            remaining: values[2],
            reset_ms: values[3],
            retry_after_ms: values[4],
            present: b[at],
            malformed: b[at + 1],
        });
        at += 2;
    } else if flags & FIELD_BITS != 0 {
        return Err(Flaw::FieldsWithoutAdvertisement);
    }
    let mut retry_of = None;
    if flags & RETRY_BIT != 0 {
        retry_of = Some(RetryOf {
            first: u64_at(b, at),
            attempt: b[at + 8],
        });
        at += RETRIED;
    }
    let mut agent = 0;
    if flags & AGENT_BIT != 0 {
        agent = u16::from_le_bytes([b[at], b[at + 1]]);
    }
    Ok((
        key,
        Event {
            seq: u64_at(b, 0),
            key: String::new(),
            replica: u32_at(b, 12),
            intended_us: u64_at(b, 16),
            sent_us: u64_at(b, 24),
            done_us: u64_at(b, 32),
            status: u16::from_le_bytes([b[40], b[41]]),
            outcome,
            error,
            advertised,
            retry_of,
            agent,
        },
    ))
}
