//! What keeps a damaged or altered trace from being judged in silence.
//! The writer seals the trace it wrote — how many events and a CRC-32 of
//! every byte ([`Seal`], kept in the arm's record); reading checks the
//! seal at the end and, on the way, what any trace rlbench writes holds:
//! each `seq` once (a request or a retry is one event) and no answer
//! before its send. A trace written while the load ran (a run that was
//! killed) has no seal and may end in a record cut short: that tail is
//! dropped, the rest is checked as usual ([`Check::unfinished`]).

use super::{Event, Flaw};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::io::{Read, Write};

/// What the writer says of the trace it finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Seal {
    /// Events written.
    pub events: u64,
    /// CRC-32 (IEEE) of the whole file, header included.
    pub crc32: u32,
}

/// What a reader holds a trace to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Check {
    /// The writer's seal; none for a trace written before seals (checked
    /// for its structure only) or one whose writer never finished.
    pub seal: Option<Seal>,
    /// The writer never finished (rlbench died mid-run): a record cut
    /// short at the very end is what the kill left, not damage.
    pub unfinished: bool,
}

/// A writer that seals what passes through it.
pub(crate) struct Sealing<W> {
    inner: W,
    crc: crc32fast::Hasher,
}

impl<W: Write> Sealing<W> {
    pub(crate) fn new(inner: W) -> Self {
        Sealing {
            inner,
            crc: crc32fast::Hasher::new(),
        }
    }

    pub(crate) fn seal(&self, events: u64) -> Seal {
        Seal {
            events,
            crc32: self.crc.clone().finalize(),
        }
    }
}

impl<W: Write> Write for Sealing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A reader that sums what passes through it, to hold against a seal.
pub(crate) struct Summing<R> {
    inner: R,
    crc: crc32fast::Hasher,
}

impl<R: Read> Summing<R> {
    pub(crate) fn new(inner: R) -> Self {
        Summing {
            inner,
            crc: crc32fast::Hasher::new(),
        }
    }

    pub(crate) fn crc32(&self) -> u32 {
        self.crc.clone().finalize()
    }
}

impl<R: Read> Read for Summing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }
}

/// Holds each event to the rules, and the whole to its seal.
#[derive(Default)]
pub(crate) struct Checker {
    events: u64,
    /// First attempts' seqs are the schedule's indices: dense, so a bit
    /// each; a retry's (2⁵⁶ and up) go in a set.
    dense: Vec<u64>,
    sparse: HashSet<u64>,
}

/// Seqs below this are kept as bits.
const DENSE: u64 = 1 << 32;

impl Checker {
    /// The next event; why it cannot be in a trace rlbench wrote, if so.
    pub(crate) fn event(&mut self, e: &Event) -> Result<(), Flaw> {
        self.events += 1;
        if e.done_us < e.sent_us {
            return Err(Flaw::AnsweredBeforeSent {
                seq: e.seq,
                done: e.done_us,
                sent: e.sent_us,
            });
        }
        let seen = if e.seq < DENSE {
            let (word, bit) = ((e.seq / 64) as usize, 1u64 << (e.seq % 64));
            if self.dense.len() <= word {
                self.dense.resize(word + 1, 0);
            }
            let seen = self.dense[word] & bit != 0;
            self.dense[word] |= bit;
            seen
        } else {
            !self.sparse.insert(e.seq)
        };
        if seen {
            return Err(Flaw::SecondEvent(e.seq));
        }
        Ok(())
    }

    /// At the end of the trace: its count and sum against the seal.
    pub(crate) fn end(&self, seal: Option<Seal>, crc32: Option<u32>) -> Result<(), Flaw> {
        let Some(seal) = seal else {
            return Ok(());
        };
        if self.events != seal.events {
            return Err(Flaw::Count {
                found: self.events,
                sealed: seal.events,
            });
        }
        match crc32 {
            Some(found) if found != seal.crc32 => Err(Flaw::Checksum {
                found,
                sealed: seal.crc32,
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Outcome;

    fn event(seq: u64, sent: u64, done: u64) -> Event {
        Event {
            seq,
            key: "k".into(),
            replica: 0,
            intended_us: sent,
            sent_us: sent,
            done_us: done,
            status: 200,
            outcome: Outcome::Admitted,
            error: None,
            advertised: None,
            retry_of: None,
            agent: 0,
        }
    }

    #[test]
    fn each_seq_once_and_no_answer_before_its_send() {
        let mut c = Checker::default();
        c.event(&event(0, 10, 10)).unwrap();
        c.event(&event(70, 10, 20)).unwrap();
        c.event(&event(1 << 56, 10, 20)).unwrap();
        let twice = c.event(&event(70, 30, 40)).unwrap_err().to_string();
        assert!(twice.contains("second event of seq 70"), "{twice}");
        let retry_twice = c.event(&event(1 << 56, 30, 40)).unwrap_err().to_string();
        assert!(
            retry_twice.contains("seq 72057594037927936"),
            "{retry_twice}"
        );
        let early = c.event(&event(5, 30, 29)).unwrap_err().to_string();
        assert!(
            early.contains("answered at 29 µs, before it was sent at 30 µs"),
            "{early}"
        );
    }

    #[test]
    fn the_seal_holds_count_and_sum() {
        let mut w = Sealing::new(Vec::new());
        w.write_all(b"rlbtrc01abc").unwrap();
        let seal = w.seal(2);
        let mut r = Summing::new(&b"rlbtrc01abc"[..]);
        std::io::copy(&mut r, &mut std::io::sink()).unwrap();
        assert_eq!(r.crc32(), seal.crc32);
        let mut c = Checker::default();
        for s in 0..2 {
            c.event(&event(s, 1, 2)).unwrap();
        }
        c.end(Some(seal), Some(r.crc32())).unwrap();
        c.end(None, None).unwrap();
        let changed = c
            .end(Some(seal), Some(seal.crc32 ^ 1))
            .unwrap_err()
            .to_string();
        assert!(changed.contains("the trace was changed"), "{changed}");
        let cut = c
            .end(Some(Seal { events: 3, ..seal }), Some(seal.crc32))
            .unwrap_err()
            .to_string();
        assert!(
            cut.contains("2 events, but its record says the run wrote 3"),
            "{cut}"
        );
    }
}
