//! What the agents write to their arm's streams, read by the controller
//! within a bound whatever is in them: a few entries per stream and a
//! byte budget per read, an entry past its bound never sent at all (a
//! script at the coordinator measures it first). Each entry goes through
//! its agent's chain (`chain`): only the next link of the agent's own
//! chain for this arm is taken — deflated event chunks with their counts,
//! and the messages of `protocol::FromAgent`; everything else is skipped
//! and counted, or breaks the chain.

use super::chain::{Raw, Reader, Taken};
use super::protocol::{self, FromAgent};
use redis::Value;
use std::io::Read;

/// The most one read takes from one stream.
const ENTRIES_PER_READ: usize = 64;
/// The most one read takes in all (bytes): an entry is taken whole, so a
/// read holds at most this plus one entry.
const BYTES_PER_READ: usize = 8 * 1024 * 1024;
/// The most one entry may hold (its fields' names and values, bytes): an
/// agent sends a chunk at 256 KiB before deflating.
pub(crate) const MAX_ENTRY_BYTES: usize = 2 * 1024 * 1024;
/// The most fields an entry of an agent has (names and values).
const MAX_FIELDS: usize = 12;

/// Reads, for each stream in `KEYS`, the entries after the id in
/// `ARGV[3 + i]`, one at a time: at most `ARGV[1]` per stream and, past
/// the first, `ARGV[2]` bytes in all. An entry larger than `MAX_ENTRY_BYTES`
/// or with more fields than an agent writes comes back as its id and
/// `oversized` only.
const READ: &str = r"
local per, budget, most = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
for i, key in ipairs(KEYS) do
  local after = ARGV[3 + i]
  local got = {}
  while #got < per and budget > 0 do
    local e = redis.call('XRANGE', key, '(' .. after, '+', 'COUNT', 1)
    if #e == 0 then break end
    local id, fields = e[1][1], e[1][2]
    local size = 0
    for j = 1, #fields do size = size + #fields[j] end
    if size > most or #fields > tonumber(ARGV[4 + #KEYS]) then
      got[#got + 1] = {id, 'oversized'}
    else
      budget = budget - size
      local entry = {id}
      for j = 1, #fields do entry[#entry + 1] = fields[j] end
      got[#got + 1] = entry
    end
    after = id
  end
  out[#out + 1] = got
end
return out
";

/// One stream entry, read.
pub(super) enum Entry {
    Chunk {
        bytes: Vec<u8>,
        counts: [u64; 4],
    },
    Message(FromAgent),
    /// Not taken, and harmless (its reader counts it, and why).
    Skipped,
    /// The agent's chain broke (its reader says why).
    Broken,
}

/// New entries of the streams after `ids` (without waiting): the
/// stream's index, the entry's id, and what it holds, each through the
/// stream's reader.
pub(super) async fn read(
    conn: &mut super::link::Conn,
    streams: &[String],
    ids: &[String],
    readers: &mut [Reader],
) -> redis::RedisResult<Vec<(usize, String, Entry)>> {
    let read = redis::Script::new(READ);
    let mut script = read.prepare_invoke();
    for s in streams {
        script.key(s);
    }
    script
        .arg(ENTRIES_PER_READ)
        .arg(BYTES_PER_READ)
        .arg(MAX_ENTRY_BYTES);
    for id in ids {
        script.arg(id);
    }
    script.arg(MAX_FIELDS);
    let reply: Value = script.invoke_async(conn).await?;
    let mut out = Vec::new();
    let Value::Array(per_stream) = reply else {
        return Ok(out);
    };
    for (i, got) in per_stream.into_iter().enumerate().take(streams.len()) {
        let Value::Array(entries) = got else { continue };
        for entry in entries {
            let Value::Array(parts) = entry else { continue };
            let mut parts = parts.into_iter().map(|v| match v {
                Value::BulkString(b) => b,
                Value::SimpleString(s) => s.into_bytes(),
                _ => Vec::new(),
            });
            let Some(id) = parts.next().and_then(|b| String::from_utf8(b).ok()) else {
                continue;
            };
            let fields: Vec<Vec<u8>> = parts.collect();
            out.push((i, id, entry_of(&mut readers[i], &fields)));
        }
    }
    Ok(out)
}

/// One entry's fields (name, value, …) through its stream's reader.
fn entry_of(reader: &mut Reader, fields: &[Vec<u8>]) -> Entry {
    if fields.len() == 1 && fields[0] == b"oversized" {
        reader.skip("larger than any entry of an agent");
        return Entry::Skipped;
    }
    let field = |name: &str| {
        fields
            .chunks(2)
            .find(|p| p.len() == 2 && p[0] == name.as_bytes())
            .map(|p| p[1].as_slice())
    };
    let raw = Raw {
        kind: field(protocol::KIND),
        body: field(protocol::BODY),
        counts: field(protocol::COUNTS),
        seq: field(protocol::SEQ),
        prev: field(protocol::PREV),
        mac: field(protocol::MAC),
    };
    match reader.take(&raw) {
        Taken::Skipped(_) => Entry::Skipped,
        Taken::Broken => Entry::Broken,
        Taken::Link { kind, body, counts } => {
            let read = if kind == protocol::CHUNK {
                inflate(body, protocol::MAX_CHUNK_BYTES)
                    .ok()
                    .map(|bytes| Entry::Chunk {
                        bytes,
                        counts: parse_counts(
                            std::str::from_utf8(counts.unwrap_or(b"")).unwrap_or(""),
                        ),
                    })
            } else {
                serde_json::from_slice::<FromAgent>(body)
                    .ok()
                    .filter(|m| m.kind() == kind)
                    .map(Entry::Message)
            };
            // Signed by the agent, yet not what it writes: nothing after
            // it can be trusted to be whole.
            read.unwrap_or_else(|| {
                reader.break_at(format!("its {kind} entry cannot be read"));
                Entry::Broken
            })
        }
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
    use crate::distributed::chain::{Place, Writer};
    use crate::distributed::seal::Token;
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

    fn fields(kind: &str, counts: Option<&[u8]>, body: &[u8], w: &mut Writer) -> Vec<Vec<u8>> {
        let l = w.sign(kind, counts, body);
        let mut f = vec![
            protocol::KIND.into(),
            kind.into(),
            protocol::BODY.into(),
            body.to_vec(),
            protocol::SEQ.into(),
            l.seq.to_string().into(),
            protocol::PREV.into(),
            l.prev.into(),
            protocol::MAC.into(),
            l.mac.into(),
        ];
        if let Some(c) = counts {
            f.extend([protocol::COUNTS.as_bytes().to_vec(), c.to_vec()]);
        }
        f
    }

    #[test]
    fn a_signed_link_that_cannot_be_read_breaks_the_chain() {
        let token = Token::new("0123456789abcdef").unwrap();
        let place = Place {
            run: "r".into(),
            arm: "a".into(),
            agent: "g".into(),
            stream: "s".into(),
        };
        let mut w = Writer::new(token.clone(), place.clone(), 1);
        let mut r = Reader::new(token, place, 0);
        let ready = br#"{"kind":"ready","lanes":2}"#;
        assert!(matches!(
            entry_of(&mut r, &fields("ready", None, ready, &mut w)),
            Entry::Message(FromAgent::Ready { lanes: 2 })
        ));
        let chunk = deflated(b"events");
        assert!(matches!(
            entry_of(&mut r, &fields("chunk", Some(b"1 1 0 0"), &chunk, &mut w)),
            Entry::Chunk {
                counts: [1, 1, 0, 0],
                ..
            }
        ));
        assert!(matches!(
            entry_of(&mut r, &[b"oversized".to_vec()]),
            Entry::Skipped
        ));
        // A deflate bomb the agent signed (it never would).
        let bomb = deflated(&vec![0u8; (protocol::MAX_CHUNK_BYTES + 1) as usize]);
        assert!(matches!(
            entry_of(&mut r, &fields("chunk", Some(b"1 1 0 0"), &bomb, &mut w)),
            Entry::Broken
        ));
        assert!(r.broken().unwrap().contains("chunk entry cannot be read"));
        // A body whose kind is not the one it was signed as.
        let mut w = Writer::new(
            Token::new("0123456789abcdef").unwrap(),
            Place {
                run: "r".into(),
                arm: "b".into(),
                agent: "g".into(),
                stream: "s2".into(),
            },
            1,
        );
        let mut r = Reader::new(
            Token::new("0123456789abcdef").unwrap(),
            w.place().clone(),
            0,
        );
        assert!(matches!(
            entry_of(&mut r, &fields("anchor", None, ready, &mut w)),
            Entry::Broken
        ));
    }
}
