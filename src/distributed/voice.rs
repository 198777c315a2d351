//! What an agent says into its arm's stream: who it is ([`Me`]), each
//! entry the next link of its chain for the arm (`chain`), signed with the
//! token it shares with its controller, written one at a time, and again
//! while the coordinator refuses it (out of memory, a restart), for a
//! while.

use super::chain::Writer;
use super::protocol::{self, Ended, FromAgent, Registration};
use super::seal::Token;
use std::time::Duration;
use tokio::time::Instant;

/// How long a write the coordinator refuses (out of memory, restarting)
/// is tried again before the agent gives up on its arm.
const RETRY_WITHIN: Duration = Duration::from_secs(10);

/// This process, as it registers and signs.
#[derive(Clone)]
pub(super) struct Me {
    pub(super) reg: Registration,
    pub(super) token: Token,
    /// How often it has signed its registration.
    pub(super) beats: u64,
    /// The coordinator's clock when it first registered (µs): work handed
    /// out before then was an earlier agent's of its name.
    pub(super) registered_us: i64,
}

/// An agent's chain of one arm, shared by everything that writes to its
/// stream: held across signing and writing, so the stream holds the
/// entries in the order they were signed.
pub(super) type Chain = std::sync::Arc<tokio::sync::Mutex<Writer>>;

/// A new chain for one arm.
pub(super) fn chain(writer: Writer) -> Chain {
    std::sync::Arc::new(tokio::sync::Mutex::new(writer))
}

/// Adds one signed entry to the arm's stream, tried again while the
/// coordinator refuses it (within [`RETRY_WITHIN`]). An `ended` says how
/// many entries came before it, and the last one's signature.
pub(super) async fn say(
    conn: &mut super::link::Conn,
    chain: &Chain,
    message: &FromAgent,
) -> redis::RedisResult<()> {
    let mut writer = chain.lock().await;
    let message = match message {
        FromAgent::Ended(e) => {
            let (entries, digest) = writer.so_far();
            FromAgent::Ended(Ended {
                entries,
                digest,
                ..e.clone()
            })
        }
        other => other.clone(),
    };
    let body = serde_json::to_vec(&message).unwrap_or_default();
    write_entry(conn, &mut writer, message.kind(), None, &body).await
}

/// Signs the chain's next entry and writes it (a chunk with its
/// `counts`), tried again while the coordinator refuses it.
pub(super) async fn write_entry(
    conn: &mut super::link::Conn,
    writer: &mut Writer,
    kind: &str,
    counts: Option<&[u8]>,
    body: &[u8],
) -> redis::RedisResult<()> {
    let link = writer.sign(kind, counts, body);
    let seq = link.seq.to_string();
    let stream = writer.place().stream.clone();
    retrying(|| {
        let mut conn = conn.clone();
        let mut fields: Vec<(&str, &[u8])> = vec![
            (protocol::KIND, kind.as_bytes()),
            (protocol::BODY, body),
            (protocol::SEQ, seq.as_bytes()),
            (protocol::PREV, link.prev.as_bytes()),
            (protocol::MAC, link.mac.as_bytes()),
        ];
        if let Some(c) = counts {
            fields.push((protocol::COUNTS, c));
        }
        let stream = stream.clone();
        async move {
            redis::pipe()
                .xadd(&stream, "*", &fields)
                .ignore()
                .expire(&stream, protocol::STREAM_SLACK_S)
                .ignore()
                .query_async::<()>(&mut conn)
                .await
        }
    })
    .await
}

/// `write` again while the coordinator refuses it (out of memory, a
/// restart), for at most [`RETRY_WITHIN`].
pub(super) async fn retrying<F, Fut, T>(mut write: F) -> redis::RedisResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = redis::RedisResult<T>>,
{
    let deadline = Instant::now() + RETRY_WITHIN;
    let mut pause = Duration::from_millis(20);
    loop {
        match write().await {
            Ok(v) => return Ok(v),
            Err(e) if Instant::now() + pause < deadline => {
                tracing::debug!("coordinator: {e}; trying again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
            Err(e) => return Err(e),
        }
    }
}
