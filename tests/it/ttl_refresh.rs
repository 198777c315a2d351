//! A limiter stricter than any policy it could declare, as teams ship it:
//! a counter per key (`X-Customer-Id`) incremented on every request and
//! given a fresh 2 s time-to-live each time (Redis' `INCR` then `EXPIRE`
//! on every call, here in memory), admitting while the count is at most
//! 10. A client that keeps sending, however slowly within 2 s, is refused
//! for ever. Served by this test binary started again (`ttl_server`), in
//! a process group of its own; `probe.rs` probes it.

use crate::external::{spawn_group, wait_listening, Group};
use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the server reads from its environment: the port.
const ENV: &str = "RLBENCH_TEST_TTL_REFRESH";

/// Admits while a key's count is at most this.
pub(crate) const LIMIT: u64 = 10;
/// Each request gives its key's count this long to live again.
pub(crate) const TTL: Duration = Duration::from_secs(2);

type Counts = Arc<Mutex<HashMap<String, (u64, Instant)>>>;

async fn limited(
    axum::extract::State(counts): axum::extract::State<Counts>,
    headers: axum::http::HeaderMap,
) -> axum::http::StatusCode {
    let key = headers
        .get("x-customer-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let now = Instant::now();
    let mut counts = counts.lock().unwrap();
    let entry = counts.entry(key).or_insert((0, now));
    if entry.1 <= now {
        entry.0 = 0;
    }
    entry.0 += 1;
    entry.1 = now + TTL;
    if entry.0 <= LIMIT {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::TOO_MANY_REQUESTS
    }
}

/// The server: started by [`start`] as this test binary with [`ENV`] set;
/// without it (a plain `--ignored` run) it returns at once.
#[test]
#[ignore = "the TTL-refreshing server the probe tests start in a process of its own"]
fn ttl_server() {
    let Ok(port) = std::env::var(ENV) else {
        return;
    };
    let app = axum::Router::new()
        .route("/limited", axum::routing::get(limited))
        .with_state(Counts::default());
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}"))
                .await
                .unwrap();
            axum::serve(listener, app).await.unwrap();
        });
}

/// The server on a free port, killed (its whole group) when the returned
/// group is dropped.
pub(crate) fn start() -> (u16, Group) {
    let port = crate::common::free_port();
    let mut group = spawn_group(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "ttl_refresh::ttl_server",
                "--ignored",
                "--nocapture",
            ])
            .env(ENV, port.to_string()),
    );
    wait_listening(port, &mut group.0);
    (port, group)
}
