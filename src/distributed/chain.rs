//! An agent's entries in an arm's stream as one chain. Each entry is
//! signed over its whole context (`seal::Header`: the run, the arm, the
//! agent, the stream's key, its kind, its number and the signature of the
//! entry before it), numbered on from the agent's last entry of the run
//! (one sequence per run per agent, never per arm), and written one at a
//! time, so the stream holds them in the order they were signed. Its
//! `ended` entry also carries how many entries came before it and the
//! last one's signature.
//!
//! The invariant the controller holds by construction: it takes an
//! agent's arm as complete only when it has read an unbroken chain from
//! the arm's first entry to an `ended` that names that chain — so what it
//! judges is exactly what the agent signed for that arm, whatever anyone
//! without the token wrote, moved, removed or replayed. An entry not
//! signed for this arm by this agent cannot be a link: it is skipped and
//! counted. A signed entry it has already taken (a write tried again, a
//! replay) is skipped. Any other signed entry — one out of its place: a
//! gap, a reorder, a splice — breaks the chain, and the arm is partial,
//! naming the agent and why.

use super::protocol::{self, FromAgent};
use super::seal::{Header, Token};
use std::collections::BTreeMap;

/// Where an agent's entries of one arm go, and who signs them.
#[derive(Clone, Debug)]
pub(crate) struct Place {
    pub run: String,
    pub arm: String,
    pub agent: String,
    /// The stream's key.
    pub stream: String,
}

impl Place {
    fn header<'a>(&'a self, seq: u64, kind: &'a str, prev: &'a str) -> Header<'a> {
        Header {
            run: &self.run,
            arm: &self.arm,
            from: &self.agent,
            to: protocol::CONTROLLER,
            place: &self.stream,
            seq,
            at_us: 0,
            kind,
            prev,
        }
    }
}

/// One entry's place in the chain: its number, the signature of the one
/// before ("" for an arm's first), and its own signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Link {
    pub seq: u64,
    pub prev: String,
    pub mac: String,
}

/// The agent's side: signs its entries of one arm in order.
#[derive(Debug)]
pub(crate) struct Writer {
    token: Token,
    place: Place,
    next_seq: u64,
    prev: String,
    count: u64,
}

impl Writer {
    /// The chain of `place`, its first entry numbered `first_seq` (the
    /// number after the agent's last entry of the run).
    pub(crate) fn new(token: Token, place: Place, first_seq: u64) -> Writer {
        Writer {
            token,
            place,
            next_seq: first_seq.max(1),
            prev: String::new(),
            count: 0,
        }
    }

    /// Signs the next entry (`counts` only for a chunk): its link.
    pub(crate) fn sign(&mut self, kind: &str, counts: Option<&[u8]>, body: &[u8]) -> Link {
        let seq = self.next_seq;
        let mac = self.token.sign(
            &self.place.header(seq, kind, &self.prev),
            &protocol::signed_body(counts, body),
        );
        let link = Link {
            seq,
            prev: std::mem::replace(&mut self.prev, mac.clone()),
            mac,
        };
        self.next_seq += 1;
        self.count += 1;
        link
    }

    /// What an `ended` entry says of the chain before it: how many
    /// entries, and the last one's signature.
    pub(crate) fn so_far(&self) -> (u64, String) {
        (self.count, self.prev.clone())
    }

    /// The number the run's next entry takes (the next arm's first).
    pub(crate) fn next_seq(&self) -> u64 {
        self.next_seq
    }

    pub(crate) fn place(&self) -> &Place {
        &self.place
    }
}

/// A stream entry's fields as read, none trusted.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Raw<'a> {
    pub kind: Option<&'a [u8]>,
    pub body: Option<&'a [u8]>,
    pub counts: Option<&'a [u8]>,
    pub seq: Option<&'a [u8]>,
    pub prev: Option<&'a [u8]>,
    pub mac: Option<&'a [u8]>,
}

/// What the controller made of one entry.
#[derive(Debug, PartialEq)]
pub(crate) enum Taken<'a> {
    /// The chain's next link: its kind and body (and a chunk's counts).
    Link {
        kind: &'a str,
        body: &'a [u8],
        counts: Option<&'a [u8]>,
    },
    /// Not a link, and harmless: why, in a few words (counted).
    Skipped(&'static str),
    /// The chain broke here (or had broken, or ended): why.
    Broken,
}

/// The controller's side: one agent's chain of one arm, checked link by
/// link.
#[derive(Debug)]
pub(crate) struct Reader {
    token: Token,
    place: Place,
    /// The agent's last number taken in the run's earlier arms: this
    /// arm's first link must be above it.
    after_seq: u64,
    /// The last link taken: its number and signature.
    last: Option<(u64, String)>,
    count: u64,
    ended: bool,
    broken: Option<String>,
    skipped: BTreeMap<&'static str, u64>,
}

impl Reader {
    pub(crate) fn new(token: Token, place: Place, after_seq: u64) -> Reader {
        Reader {
            token,
            place,
            after_seq,
            last: None,
            count: 0,
            ended: false,
            broken: None,
            skipped: BTreeMap::new(),
        }
    }

    /// One entry, as read from the stream in its order.
    pub(crate) fn take<'a>(&mut self, raw: &Raw<'a>) -> Taken<'a> {
        let taken = self.check(raw);
        if let Taken::Skipped(why) = taken {
            *self.skipped.entry(why).or_default() += 1;
        }
        taken
    }

    /// Counts an entry skipped before it could be read (too large).
    pub(crate) fn skip(&mut self, why: &'static str) {
        *self.skipped.entry(why).or_default() += 1;
    }

    fn check<'a>(&mut self, raw: &Raw<'a>) -> Taken<'a> {
        let text = |b: Option<&'a [u8]>| b.and_then(|b| std::str::from_utf8(b).ok());
        let (Some(kind), Some(body), Some(seq), Some(prev), Some(mac)) = (
            text(raw.kind),
            raw.body,
            text(raw.seq).and_then(|s| s.parse::<u64>().ok()),
            text(raw.prev),
            text(raw.mac),
        ) else {
            return Taken::Skipped("not rlbench's");
        };
        let chunk = kind == protocol::CHUNK;
        let counts = if chunk {
            raw.counts.or(Some(b""))
        } else {
            None
        };
        let signed = protocol::signed_body(counts, body);
        if !self
            .token
            .verify(&self.place.header(seq, kind, prev), &signed, mac)
        {
            return Taken::Skipped("not signed by this agent for this arm");
        }
        // Signed for this very place: a link, a copy of one, or out of
        // its place.
        if self.broken.is_some() {
            return Taken::Broken;
        }
        let taken_already = match &self.last {
            Some((last, _)) => seq <= *last,
            None => seq <= self.after_seq,
        };
        if taken_already {
            return Taken::Skipped("a copy of an entry already taken");
        }
        if self.ended {
            return self.broke(format!("entry {seq} came after its end"));
        }
        let (want_seq, want_prev) = match &self.last {
            Some((last, mac)) => (Some(last + 1), mac.as_str()),
            None => (None, ""),
        };
        if want_seq.is_some_and(|w| w != seq) || prev != want_prev {
            return self.broke(match want_seq {
                Some(w) => format!("entry {seq} came where entry {w} belongs (a gap or a reorder)"),
                None => format!("its first entry in the stream is {seq}, not the arm's first"),
            });
        }
        if kind == "ended" {
            match serde_json::from_slice::<FromAgent>(body) {
                Ok(FromAgent::Ended(e)) if e.entries == self.count && e.digest == want_prev => {
                    self.ended = true;
                }
                _ => {
                    return self.broke(format!(
                        "its end does not name the {} entries before it",
                        self.count
                    ))
                }
            }
        }
        self.last = Some((seq, mac.to_string()));
        self.count += 1;
        Taken::Link {
            kind,
            body,
            counts: counts.filter(|_| chunk),
        }
    }

    fn broke<'a>(&mut self, why: String) -> Taken<'a> {
        self.broken.get_or_insert(why);
        Taken::Broken
    }

    /// Breaks the chain from outside: a link that was signed but cannot
    /// be read (its body is not what the agent would write).
    pub(crate) fn break_at(&mut self, why: String) {
        self.broken.get_or_insert(why);
    }

    /// Why the chain is broken, if it is.
    pub(crate) fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// Whether an `ended` closed an unbroken chain.
    pub(crate) fn complete(&self) -> bool {
        self.ended && self.broken.is_none()
    }

    /// The agent's last number taken in the run so far.
    pub(crate) fn last_seq(&self) -> u64 {
        self.last.as_ref().map_or(self.after_seq, |(s, _)| *s)
    }

    /// The entries skipped, by why.
    pub(crate) fn skipped(&self) -> &BTreeMap<&'static str, u64> {
        &self.skipped
    }
}

#[cfg(test)]
mod tests;
