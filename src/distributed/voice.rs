//! What an agent says into its arm's stream: who it is ([`Me`]), each
//! entry signed with the token it shares with its controller, and written
//! again while the coordinator refuses it (out of memory, a restart), for
//! a while.

use super::protocol::{self, FromAgent, Registration, Work};
use super::seal::{Header, Token};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// How long a write the coordinator refuses (out of memory, restarting)
/// is tried again before the agent gives up on its arm.
const RETRY_WITHIN: Duration = Duration::from_secs(10);

/// This process, as it registers and signs.
pub(super) struct Me {
    pub(super) reg: Registration,
    pub(super) token: Token,
    /// How often it has signed its registration.
    pub(super) beats: u64,
}

/// Adds one signed entry to the arm's stream, tried again while the
/// coordinator refuses it (within [`RETRY_WITHIN`]).
pub(super) async fn say(
    conn: &mut super::link::Conn,
    me: &Me,
    work: &Work,
    seq: &AtomicU64,
    message: &FromAgent,
) -> redis::RedisResult<()> {
    let body = serde_json::to_string(message).unwrap_or_default();
    let kind = match message {
        FromAgent::Ready { .. } => "ready",
        FromAgent::Anchor(_) => "anchor",
        FromAgent::Started { .. } => "started",
        FromAgent::Took { .. } => "took",
        FromAgent::Ended(_) => "ended",
        FromAgent::Failed { .. } => "failed",
    };
    let n = seq.fetch_add(1, Ordering::Relaxed);
    let mac = sign_entry(me, work, n, kind, None, body.as_bytes());
    let n = n.to_string();
    retrying(|| {
        let mut conn = conn.clone();
        let fields = [
            (protocol::KIND, kind),
            (protocol::BODY, body.as_str()),
            (protocol::SEQ, n.as_str()),
            (protocol::MAC, mac.as_str()),
        ];
        async move {
            redis::pipe()
                .xadd(&work.stream, "*", &fields)
                .ignore()
                .expire(&work.stream, protocol::STREAM_SLACK_S)
                .ignore()
                .query_async::<()>(&mut conn)
                .await
        }
    })
    .await
}

/// The signature of a stream entry: its run, this agent, its number, its
/// kind, and its body (a chunk's counts and bytes).
pub(super) fn sign_entry(
    me: &Me,
    work: &Work,
    seq: u64,
    kind: &str,
    counts: Option<&[u8]>,
    body: &[u8],
) -> String {
    me.token.sign(
        &Header {
            run: &work.run,
            from: &me.reg.name,
            to: protocol::CONTROLLER,
            seq,
            at_us: 0,
            kind,
        },
        &protocol::signed_body(counts, body),
    )
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
