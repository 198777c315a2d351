//! What the agents write to their arm's streams, read by the controller:
//! deflated event chunks with their counts, and the messages of
//! `protocol::FromAgent`; entries that are not rlbench's are skipped.

use super::protocol::{self, FromAgent};
use redis::aio::MultiplexedConnection;
use redis::streams::{StreamReadOptions, StreamReadReply};
use redis::AsyncCommands;
use std::io::Write;

/// One stream entry, read.
pub(super) enum Entry {
    Chunk { bytes: Vec<u8>, counts: [u64; 4] },
    Said(FromAgent),
}

/// New entries of the streams after `ids` (blocking up to 100 ms): the
/// stream's index, the entry's id, and what it holds; entries that are
/// not rlbench's are skipped.
pub(super) async fn read(
    conn: &mut MultiplexedConnection,
    streams: &[String],
    ids: &[String],
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
            let parsed = match kind.as_deref() {
                Some(k) if k == protocol::CHUNK => {
                    let body: Option<Vec<u8>> = entry.get(protocol::BODY);
                    let counts: Option<String> = entry.get(protocol::COUNTS);
                    body.and_then(|b| {
                        inflate(&b)
                            .map_err(|e| {
                                tracing::warn!("a chunk of {} does not inflate: {e}", key.key)
                            })
                            .ok()
                    })
                    .map(|bytes| Entry::Chunk {
                        bytes,
                        counts: parse_counts(counts.as_deref().unwrap_or("")),
                    })
                }
                Some(_) => {
                    let body: Option<String> = entry.get(protocol::BODY);
                    body.and_then(|b| serde_json::from_str(&b).ok())
                        .map(Entry::Said)
                }
                None => None,
            };
            if let Some(p) = parsed {
                out.push((i, entry.id.clone(), p));
            }
        }
    }
    Ok(out)
}

fn parse_counts(text: &str) -> [u64; 4] {
    let mut counts = [0u64; 4];
    for (c, n) in counts.iter_mut().zip(text.split(' ')) {
        *c = n.parse().unwrap_or(0);
    }
    counts
}

fn inflate(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = flate2::write::DeflateDecoder::new(Vec::with_capacity(bytes.len() * 4));
    out.write_all(bytes)?;
    out.finish()
}
