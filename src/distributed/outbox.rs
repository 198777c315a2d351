//! An agent's load events on their way to the controller: encoded as the
//! trace is, deflated and signed a chunk at a time into the arm's stream,
//! waiting (within a bound) while the controller is far behind.

use super::protocol;
use super::voice::{write_entry, Chain};
use crate::events::binary::Encoder;
use crate::events::Batch;
use redis::AsyncCommands;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A chunk is sent once it holds this many bytes, or is this old.
const CHUNK_BYTES: usize = 256 * 1024;
const CHUNK_AGE: Duration = Duration::from_millis(250);
/// The longest an agent waits for its controller to read its stream.
const BACKLOG_WITHIN: Duration = Duration::from_secs(30);

/// What streams the load's events.
pub(super) struct Streamer {
    pub(super) conn: super::link::Conn,
    /// The arm's chain; its stream is where the chunks go.
    pub(super) chain: Chain,
    pub(super) stream: String,
    /// Set when the controller stopped beating: nobody reads any more.
    pub(super) gone: Arc<AtomicBool>,
    pub(super) rx: mpsc::Receiver<Batch>,
}

/// Encodes the load's events as the trace does, and sends them deflated
/// and signed, a chunk at a time; waits while the controller is far
/// behind — at most [`BACKLOG_WITHIN`], and not once it stopped beating.
/// The number of events sent.
pub(super) async fn stream_events(mut s: Streamer) -> redis::RedisResult<u64> {
    let mut encoder = Encoder::default();
    let mut bytes = Vec::with_capacity(CHUNK_BYTES * 2);
    Encoder::start(&mut bytes).map_err(io)?;
    let mut counts = [0u64; 4];
    let mut sent = 0u64;
    let mut since = Instant::now();
    loop {
        let batch = tokio::select! {
            b = s.rx.recv() => b,
            () = tokio::time::sleep_until(since + CHUNK_AGE) => Some(Vec::new()),
        };
        let end = batch.is_none();
        for e in batch.iter().flatten() {
            encoder.write(&mut bytes, e).map_err(io)?;
            counts[0] += 1;
            match e.outcome {
                crate::events::Outcome::Admitted => counts[1] += 1,
                crate::events::Outcome::Rejected => counts[2] += 1,
                _ => counts[3] += 1,
            }
        }
        if s.gone.load(Ordering::Relaxed) {
            // Nobody reads: drain the load's events without sending them.
            bytes.clear();
            if end {
                return Ok(sent);
            }
            continue;
        }
        if !bytes.is_empty() && (end || bytes.len() >= CHUNK_BYTES || since.elapsed() >= CHUNK_AGE)
        {
            let waited = Instant::now();
            loop {
                // (An unreadable length is the coordinator's trouble: the
                // write below is tried again for a while anyway.)
                let unread = s.conn.xlen::<_, u64>(&s.stream).await.unwrap_or(0);
                if unread < protocol::MAX_UNREAD {
                    break;
                }
                if s.gone.load(Ordering::Relaxed) || waited.elapsed() >= BACKLOG_WITHIN {
                    return Err(redis::RedisError::from((
                        redis::ErrorKind::Io,
                        "the controller stopped reading the stream",
                    )));
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let chunk = deflate(&bytes).map_err(io)?;
            let counted = format!("{} {} {} {}", counts[0], counts[1], counts[2], counts[3]);
            let mut writer = s.chain.lock().await;
            write_entry(
                &mut s.conn,
                &mut writer,
                protocol::CHUNK,
                Some(counted.as_bytes()),
                &chunk,
            )
            .await?;
            sent += counts[0];
            counts = [0; 4];
            bytes.clear();
            since = Instant::now();
        } else if bytes.is_empty() {
            since = Instant::now();
        }
        if end {
            return Ok(sent);
        }
    }
}

fn io(e: std::io::Error) -> redis::RedisError {
    redis::RedisError::from(e)
}

fn deflate(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = flate2::write::DeflateEncoder::new(
        Vec::with_capacity(bytes.len() / 4),
        flate2::Compression::fast(),
    );
    out.write_all(bytes)?;
    out.finish()
}
