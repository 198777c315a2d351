//! What the agents write to their arm's streams, read by the controller:
//! deflated event chunks with their counts, and the messages of
//! `protocol::FromAgent`. Only entries signed with the run's token by the
//! stream's own agent, each number once, are taken; the others (someone
//! else's writes, replays, damaged or oversized chunks) are skipped *and*
//! acknowledged, so they are never read again, and counted.

use super::protocol::{self, FromAgent};
use super::seal::{Header, Seen, Token};
use redis::streams::{StreamReadOptions, StreamReadReply};
use redis::AsyncCommands;
use std::io::Read;

/// One stream entry, read.
pub(super) enum Entry {
    Chunk {
        bytes: Vec<u8>,
        counts: [u64; 4],
    },
    Ending(FromAgent),
    /// Not taken: why, in a few words.
    Refused(&'static str),
}

/// What the controller checks entries against: the run's token and id,
/// and per stream its agent and the numbers already taken.
pub(super) struct Check {
    pub token: Token,
    pub run: String,
    pub senders: Vec<String>,
    pub seen: Vec<Seen>,
}

/// New entries of the streams after `ids` (blocking up to 100 ms): the
/// stream's index, the entry's id, and what it holds.
pub(super) async fn read(
    conn: &mut super::link::Conn,
    streams: &[String],
    ids: &[String],
    check: &mut Check,
) -> redis::RedisResult<Vec<(usize, String, Entry)>> {
    let opts = StreamReadOptions::default().block(100).count(64);
    let reply: Option<StreamReadReply> = conn.xread_options(streams, ids, &opts).await?;
    let mut out = Vec::new();
    for key in reply.map(|r| r.keys).unwrap_or_default() {
        let Some(i) = streams.iter().position(|s| *s == key.key) else {
            continue;
        };
        for entry in key.ids {
            let kind: Option<String> = entry.get(protocol::KIND);
            let body: Option<Vec<u8>> = entry.get(protocol::BODY);
            let counts: Option<Vec<u8>> = entry.get(protocol::COUNTS);
            let seq: Option<String> = entry.get(protocol::SEQ);
            let mac: Option<String> = entry.get(protocol::MAC);
            let parsed = taken(
                check,
                i,
                kind.as_deref(),
                body.as_deref(),
                counts.as_deref(),
                seq.as_deref(),
                mac.as_deref(),
            );
            out.push((i, entry.id.clone(), parsed));
        }
    }
    Ok(out)
}

/// One entry of stream `i`, checked and read.
fn taken(
    check: &mut Check,
    i: usize,
    kind: Option<&str>,
    body: Option<&[u8]>,
    counts: Option<&[u8]>,
    seq: Option<&str>,
    mac: Option<&str>,
) -> Entry {
    let (Some(kind), Some(body), Some(seq), Some(mac)) = (kind, body, seq, mac) else {
        return Entry::Refused("not rlbench's");
    };
    let Ok(seq) = seq.parse::<u64>() else {
        return Entry::Refused("not rlbench's");
    };
    let chunk = kind == protocol::CHUNK;
    let header = Header {
        run: &check.run,
        from: &check.senders[i],
        to: protocol::CONTROLLER,
        seq,
        at_us: 0,
        kind,
    };
    let signed = protocol::signed_body(
        if chunk {
            Some(counts.unwrap_or(b""))
        } else {
            None
        },
        body,
    );
    if !check.token.verify(&header, &signed, mac) {
        return Entry::Refused("not signed by this run's agent");
    }
    if !check.seen[i].take(seq) {
        return Entry::Refused("a replay");
    }
    if chunk {
        return match inflate(body, protocol::MAX_CHUNK_BYTES) {
            Ok(bytes) => Entry::Chunk {
                bytes,
                counts: parse_counts(std::str::from_utf8(counts.unwrap_or(b"")).unwrap_or("")),
            },
            Err(_) => Entry::Refused("a chunk that does not inflate within its bound"),
        };
    }
    match serde_json::from_slice::<FromAgent>(body) {
        Ok(m) => Entry::Ending(m),
        Err(_) => Entry::Refused("not rlbench's"),
    }
}

fn parse_counts(text: &str) -> [u64; 4] {
    let mut counts = [0u64; 4];
    for (c, n) in counts.iter_mut().zip(text.split(' ')) {
        *c = n.parse().unwrap_or(0);
    }
    counts
}

/// The inflated bytes, or an error when they do not inflate or would pass
/// `limit` bytes (a small chunk may inflate without bound).
fn inflate(bytes: &[u8], limit: u64) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len().saturating_mul(4).min(limit as usize));
    flate2::read::DeflateDecoder::new(bytes)
        .take(limit + 1)
        .read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(std::io::Error::other("beyond its bound"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn deflated(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn a_chunk_inflating_past_its_bound_is_refused() {
        let bomb = deflated(&vec![0u8; 8 * 1024 * 1024]);
        assert!(bomb.len() < 64 * 1024, "{}", bomb.len());
        assert!(inflate(&bomb, 1024 * 1024).is_err());
        assert_eq!(
            inflate(&bomb, 8 * 1024 * 1024).unwrap().len(),
            8 * 1024 * 1024
        );
        assert!(inflate(b"not deflate at all", 1024).is_err());
    }

    #[test]
    fn only_signed_entries_of_the_streams_agent_are_taken_once() {
        let token = Token::new("0123456789abcdef").unwrap();
        let mut check = Check {
            token: token.clone(),
            run: "run-1".into(),
            senders: vec!["agent-0".into(), "agent-1".into()],
            seen: vec![Seen::default(), Seen::default()],
        };
        let body = br#"{"kind":"ready","lanes":2}"#;
        let sign = |from: &str, run: &str, seq: u64| {
            token.sign(
                &Header {
                    run,
                    from,
                    to: protocol::CONTROLLER,
                    seq,
                    at_us: 0,
                    kind: "ready",
                },
                body,
            )
        };
        let mac = sign("agent-0", "run-1", 1);
        let entry = |check: &mut Check, i, mac: &str, seq: &str| {
            taken(
                check,
                i,
                Some("ready"),
                Some(body),
                None,
                Some(seq),
                Some(mac),
            )
        };
        assert!(matches!(entry(&mut check, 0, &mac, "1"), Entry::Ending(_)));
        assert!(matches!(
            entry(&mut check, 0, &mac, "1"),
            Entry::Refused("a replay")
        ));
        // In another agent's stream, or from an earlier run: refused.
        assert!(matches!(entry(&mut check, 1, &mac, "1"), Entry::Refused(_)));
        let old = sign("agent-0", "run-0", 2);
        assert!(matches!(entry(&mut check, 0, &old, "2"), Entry::Refused(_)));
        // Junk: no kind, no signature.
        assert!(matches!(
            taken(&mut check, 0, None, None, None, None, None),
            Entry::Refused("not rlbench's")
        ));
        // A signed chunk that is a deflate bomb.
        let bomb = deflated(&vec![0u8; (protocol::MAX_CHUNK_BYTES + 1) as usize]);
        let counts = b"1 1 0 0";
        let mac = token.sign(
            &Header {
                run: "run-1",
                from: "agent-0",
                to: protocol::CONTROLLER,
                seq: 9,
                at_us: 0,
                kind: protocol::CHUNK,
            },
            &protocol::signed_body(Some(counts), &bomb),
        );
        assert!(matches!(
            taken(
                &mut check,
                0,
                Some(protocol::CHUNK),
                Some(&bomb),
                Some(counts),
                Some("9"),
                Some(&mac)
            ),
            Entry::Refused("a chunk that does not inflate within its bound")
        ));
    }
}
