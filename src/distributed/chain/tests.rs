//! The chain's rules on hand-built streams (one that must be taken whole,
//! ones that must break, the boundaries), then the adversary model: an
//! attacker holding every entry any agent signed in any run and arm (but
//! not the token) rewrites one stream at random — replays, splices,
//! deletions, trims, reorders, duplicates, junk, flipped bytes — and
//! whatever it does, the controller takes only the agent's own entries of
//! that arm, in order, and calls the arm complete only when it took every
//! one of them.

use super::*;
use crate::distributed::protocol::Ended;
use proptest::prelude::*;

const TOKEN: &str = "0123456789abcdef0123";

/// One stream entry as written: owned fields.
#[derive(Clone, Debug, PartialEq)]
struct Written {
    kind: Vec<u8>,
    body: Vec<u8>,
    counts: Option<Vec<u8>>,
    seq: Vec<u8>,
    prev: Vec<u8>,
    mac: Vec<u8>,
}

impl Written {
    fn raw(&self) -> Raw<'_> {
        Raw {
            kind: Some(&self.kind),
            body: Some(&self.body),
            counts: self.counts.as_deref(),
            seq: Some(&self.seq),
            prev: Some(&self.prev),
            mac: Some(&self.mac),
        }
    }
}

fn place(run: &str, arm: &str, agent: &str) -> Place {
    Place {
        run: run.into(),
        arm: arm.into(),
        agent: agent.into(),
        stream: protocol::stream(run, arm, agent),
    }
}

/// A message, signed as the chain's next entry.
fn say(w: &mut Writer, m: &FromAgent) -> Written {
    let body = serde_json::to_vec(m).unwrap();
    let l = w.sign(m.kind(), None, &body);
    Written {
        kind: m.kind().into(),
        body,
        counts: None,
        seq: l.seq.to_string().into(),
        prev: l.prev.into(),
        mac: l.mac.into(),
    }
}

/// What an honest agent writes for one arm: ready, chunks (their bodies
/// drawn from `bodies`), its end.
fn honest(w: &mut Writer, bodies: &[Vec<u8>]) -> Vec<Written> {
    let mut out = open(w, bodies);
    let (entries, digest) = w.so_far();
    out.push(say(
        w,
        &FromAgent::Ended(Ended {
            scheduled: bodies.len() as u64,
            not_sent: Default::default(),
            paced_us: 1,
            interrupted: false,
            events: bodies.len() as u64,
            entries,
            digest,
        }),
    ));
    out
}

/// The same before its end.
fn open(w: &mut Writer, bodies: &[Vec<u8>]) -> Vec<Written> {
    let mut out = vec![say(w, &FromAgent::Ready { lanes: 2 })];
    for b in bodies {
        let counts = format!("{} {} 0 0", b.len(), b.len()).into_bytes();
        let l = w.sign(protocol::CHUNK, Some(&counts), b);
        out.push(Written {
            kind: protocol::CHUNK.into(),
            body: b.clone(),
            counts: Some(counts),
            seq: l.seq.to_string().into(),
            prev: l.prev.into(),
            mac: l.mac.into(),
        });
    }
    out
}

/// The reader's outcome over `stream`: the links it took (kind, body),
/// and whether it calls the arm complete.
fn read(reader: &mut Reader, stream: &[Written]) -> (Vec<(String, Vec<u8>)>, bool) {
    let mut links = Vec::new();
    for e in stream {
        if let Taken::Link { kind, body, .. } = reader.take(&e.raw()) {
            links.push((kind.to_string(), body.to_vec()));
        }
    }
    (links, reader.complete())
}

fn links(stream: &[Written]) -> Vec<(String, Vec<u8>)> {
    stream
        .iter()
        .map(|e| (String::from_utf8(e.kind.clone()).unwrap(), e.body.clone()))
        .collect()
}

fn token() -> Token {
    Token::new(TOKEN).unwrap()
}

/// Two arms of one run for one agent, numbered on across them.
fn two_arms() -> (Vec<Written>, Vec<Written>, u64) {
    let mut w1 = Writer::new(token(), place("r", "a1", "g0"), 1);
    let first = honest(&mut w1, &[b"one".to_vec(), b"two".to_vec()]);
    let mut w2 = Writer::new(token(), place("r", "a2", "g0"), w1.next_seq());
    let second = honest(&mut w2, &[b"three".to_vec()]);
    (first, second, w1.next_seq() - 1)
}

#[test]
fn an_honest_chain_is_taken_whole_and_complete() {
    let (first, second, last) = two_arms();
    let mut r = Reader::new(token(), place("r", "a1", "g0"), 0);
    assert_eq!(read(&mut r, &first), (links(&first), true));
    assert_eq!(r.last_seq(), last);
    let mut r = Reader::new(token(), place("r", "a2", "g0"), last);
    assert_eq!(read(&mut r, &second), (links(&second), true));
    assert!(r.skipped().is_empty());
}

#[test]
fn an_earlier_arms_entries_spliced_in_are_never_links() {
    // The attack that turned a broken limiter green: the agent's entries
    // of an earlier (correct) arm of the same run, spliced into a later
    // arm's stream ahead of its own.
    let (first, second, last) = two_arms();
    let mut spliced = first.clone();
    spliced.extend(second.iter().cloned());
    let mut r = Reader::new(token(), place("r", "a2", "g0"), last);
    let (taken, complete) = read(&mut r, &spliced);
    assert_eq!(taken, links(&second));
    assert!(complete);
    assert_eq!(
        r.skipped()["not signed by this agent for this arm"],
        first.len() as u64
    );
    // The splice alone, its own entries removed: nothing taken, no end.
    let mut r = Reader::new(token(), place("r", "a2", "g0"), last);
    assert_eq!(read(&mut r, &first), (vec![], false));
    assert_eq!(r.broken(), None);
}

#[test]
fn a_gap_a_reorder_or_a_wrong_end_breaks_the_chain() {
    let (first, _, _) = two_arms();
    // A gap: the second entry removed.
    let mut gap = first.clone();
    gap.remove(1);
    let mut r = Reader::new(token(), place("r", "a1", "g0"), 0);
    let (taken, complete) = read(&mut r, &gap);
    assert_eq!(taken, links(&first[..1]));
    assert!(!complete);
    assert!(r.broken().unwrap().contains("a gap or a reorder"), "{r:?}");
    // A reorder: two swapped.
    let mut swapped = first.clone();
    swapped.swap(1, 2);
    let mut r = Reader::new(token(), place("r", "a1", "g0"), 0);
    assert!(!read(&mut r, &swapped).1);
    assert!(r.broken().is_some());
    // The first entries trimmed: the arm's first is missing.
    let mut r = Reader::new(token(), place("r", "a1", "g0"), 0);
    assert_eq!(read(&mut r, &first[1..]), (vec![], false));
    assert!(r.broken().unwrap().contains("not the arm's first"));
    // The end trimmed: every link taken, but not complete, and not broken
    // (the collection names it lost or silent).
    let mut r = Reader::new(token(), place("r", "a1", "g0"), 0);
    let cut = &first[..first.len() - 1];
    assert_eq!(read(&mut r, cut), (links(cut), false));
    assert_eq!(r.broken(), None);
}

#[test]
fn copies_and_junk_are_skipped_and_the_chain_holds() {
    let (first, _, _) = two_arms();
    let mut noisy = Vec::new();
    for e in &first {
        noisy.push(e.clone());
        noisy.push(e.clone());
        let mut flipped = e.clone();
        flipped.body.push(b'!');
        noisy.push(flipped);
    }
    noisy.push(Written {
        kind: b"junk".to_vec(),
        body: vec![],
        counts: None,
        seq: b"x".to_vec(),
        prev: vec![],
        mac: vec![],
    });
    let mut r = Reader::new(token(), place("r", "a1", "g0"), 0);
    assert_eq!(read(&mut r, &noisy), (links(&first), true));
    assert_eq!(
        r.skipped()["a copy of an entry already taken"],
        first.len() as u64
    );
    assert_eq!(r.skipped()["not rlbench's"], 1);
}

#[test]
fn an_end_must_name_the_chain_before_it() {
    let end = |entries: u64, digest: String| {
        FromAgent::Ended(Ended {
            scheduled: 1,
            not_sent: Default::default(),
            paced_us: 1,
            interrupted: false,
            events: 1,
            entries,
            digest,
        })
    };
    // An end signed by the agent but naming one entry fewer, or another
    // last entry: broken; naming exactly its chain: complete.
    for (fewer, other, complete) in [(1, false, false), (0, true, false), (0, false, true)] {
        let mut w = Writer::new(token(), place("r", "a1", "g0"), 1);
        let mut out = open(&mut w, &[b"x".to_vec()]);
        let (entries, digest) = w.so_far();
        let digest = if other {
            out[0].mac.iter().map(|&b| b as char).collect()
        } else {
            digest
        };
        out.push(say(&mut w, &end(entries - fewer, digest)));
        let mut r = Reader::new(token(), place("r", "a1", "g0"), 0);
        let (taken, done) = read(&mut r, &out);
        assert_eq!(done, complete);
        if complete {
            assert_eq!(taken.len(), 3);
        } else {
            assert_eq!(taken.len(), 2);
            assert!(r.broken().unwrap().contains("does not name the 2 entries"));
        }
    }
}

/// What the attacker does to the stream, one operation at a time.
#[derive(Clone, Debug)]
enum Op {
    /// Any captured entry of any run, arm or agent, put anywhere.
    Replay {
        entry: usize,
        at: usize,
    },
    Delete {
        at: usize,
    },
    /// Everything before (or from) a point removed.
    TrimFront {
        n: usize,
    },
    TrimBack {
        n: usize,
    },
    Swap {
        a: usize,
        b: usize,
    },
    Duplicate {
        at: usize,
        to: usize,
    },
    Junk {
        at: usize,
        seq: u64,
    },
    /// A byte of one field changed.
    Flip {
        at: usize,
        field: usize,
        byte: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let i = 0usize..64;
    prop_oneof![
        4 => (0usize..4096, i.clone()).prop_map(|(entry, at)| Op::Replay { entry, at }),
        1 => i.clone().prop_map(|at| Op::Delete { at }),
        1 => (0usize..3).prop_map(|n| Op::TrimFront { n }),
        1 => (0usize..3).prop_map(|n| Op::TrimBack { n }),
        1 => (i.clone(), i.clone()).prop_map(|(a, b)| Op::Swap { a, b }),
        2 => (i.clone(), i.clone()).prop_map(|(at, to)| Op::Duplicate { at, to }),
        1 => (i.clone(), 0u64..40).prop_map(|(at, seq)| Op::Junk { at, seq }),
        1 => (i.clone(), 0usize..6, 0usize..64).prop_map(|(at, field, byte)| Op::Flip { at, field, byte }),
    ]
}

/// Whether `op` can only add noise (a copy or junk): then the arm must
/// still be complete.
fn harmless(op: &Op, pool: &[(Place, Written)], own: &[Written]) -> bool {
    match op {
        Op::Duplicate { .. } | Op::Junk { .. } => true,
        Op::Replay { entry, .. } => {
            let (_, e) = &pool[*entry % pool.len()];
            // An entry of the stream's own chain put elsewhere is a copy
            // only when its original stays before it: not known here.
            !own.contains(e)
        }
        _ => false,
    }
}

fn apply(stream: &mut Vec<Written>, op: &Op, pool: &[(Place, Written)]) {
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % (len + 1) };
    match *op {
        Op::Replay { entry, at: i } => {
            let e = pool[entry % pool.len()].1.clone();
            let i = at(i, stream.len());
            stream.insert(i, e);
        }
        Op::Delete { at: i } if !stream.is_empty() => {
            let i = i % stream.len();
            stream.remove(i);
        }
        Op::TrimFront { n } => {
            let n = n.min(stream.len());
            stream.drain(..n);
        }
        Op::TrimBack { n } => {
            let n = n.min(stream.len());
            stream.truncate(stream.len() - n);
        }
        Op::Swap { a, b } if !stream.is_empty() => {
            let len = stream.len();
            stream.swap(a % len, b % len);
        }
        Op::Duplicate { at: i, to } if !stream.is_empty() => {
            // A copy after its original: a write tried again.
            let i = i % stream.len();
            let e = stream[i].clone();
            let to = i + 1 + to % (stream.len() - i);
            stream.insert(to, e);
        }
        Op::Junk { at: i, seq } => {
            let i = at(i, stream.len());
            stream.insert(
                i,
                Written {
                    kind: b"chunk".to_vec(),
                    body: vec![0; 8],
                    counts: Some(b"9 9 0 0".to_vec()),
                    seq: seq.to_string().into_bytes(),
                    prev: vec![],
                    mac: "ab".repeat(32).into_bytes(),
                },
            );
        }
        Op::Flip { at: i, field, byte } if !stream.is_empty() => {
            let len = stream.len();
            let e = &mut stream[i % len];
            let f = match field {
                0 => &mut e.kind,
                1 => &mut e.body,
                2 => e.counts.get_or_insert_with(Vec::new),
                3 => &mut e.seq,
                4 => &mut e.prev,
                _ => &mut e.mac,
            };
            if f.is_empty() {
                f.push(b'0');
            } else {
                let j = byte % f.len();
                f[j] = f[j].wrapping_add(1);
            }
        }
        _ => {}
    }
}

/// Every entry signed in two runs of three arms by two agents (the
/// attacker saw them all), and the honest streams by place.
/// Every entry signed, with its place; and each honest stream: its place,
/// the agent's last number before it, its entries.
type World = (Vec<(Place, Written)>, Vec<(Place, u64, Vec<Written>)>);

fn world(bodies: &[Vec<u8>]) -> World {
    let mut pool = Vec::new();
    let mut streams = Vec::new();
    for run in ["r1", "r2"] {
        for agent in ["g0", "g1"] {
            let mut seq = 1;
            for (k, arm) in ["a1", "a2", "a3"].iter().enumerate() {
                let p = place(run, arm, agent);
                let mut w = Writer::new(token(), p.clone(), seq);
                // Arms differ in length; an arm's bodies may equal
                // another's (a correct arm's chunks look like a broken
                // one's).
                let n = (k + 1).min(bodies.len());
                let written = honest(&mut w, &bodies[..n]);
                pool.extend(written.iter().map(|e| (p.clone(), e.clone())));
                streams.push((p, seq - 1, written));
                seq = w.next_seq();
            }
        }
    }
    (pool, streams)
}

fn cases() -> u32 {
    std::env::var("ADVERSARY_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Whatever the attacker does: the links taken are the start of the
    /// agent's own chain for that arm, in order; complete means all of
    /// it; not complete is either broken with a reason or short of its
    /// end; and noise alone never costs completeness.
    #[test]
    fn no_rewrite_of_a_stream_makes_the_controller_take_what_the_agent_did_not_send(
        bodies in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..6), 1..4),
        target in 0usize..12,
        ops in proptest::collection::vec(op(), 0..8),
    ) {
        let (pool, streams) = world(&bodies);
        let (p, after, own) = &streams[target % streams.len()];
        let mut stream = own.clone();
        for o in &ops {
            apply(&mut stream, o, &pool);
        }
        let mut r = Reader::new(token(), p.clone(), *after);
        let (taken, complete) = read(&mut r, &stream);
        let truth = links(own);
        prop_assert!(taken.len() <= truth.len());
        prop_assert_eq!(&taken[..], &truth[..taken.len()], "a link that is not the agent's");
        if complete {
            prop_assert_eq!(&taken, &truth, "complete but not all of it");
        } else {
            prop_assert!(
                r.broken().is_some() || taken.len() < truth.len(),
                "neither complete nor a named cause"
            );
        }
        if ops.iter().all(|o| harmless(o, &pool, own)) {
            prop_assert!(complete, "noise alone made the arm partial: {:?}", r.broken());
        }
    }
}
