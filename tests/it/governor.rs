//! A limiter nobody here wrote, in Rust: the `governor` crate (GCRA),
//! keyed on `X-Customer-Id` with `Quota::per_second(10).allow_burst(5)`,
//! answering 429 — as a Rust service would put it in front of an axum
//! handler. Served by this test binary started again (`governor_server`,
//! which serves only when its environment asks), in a process group of
//! its own; `probe.rs` finds its key and policy.

use crate::common::free_port;
use crate::external::{spawn_group, wait_listening, Group};
use std::num::NonZeroU32;
use std::process::Command;

/// What the server reads from its environment: the port.
const ENV: &str = "RLBENCH_TEST_GOVERNOR";

/// The quota: 10 a second, 5 at once.
pub(crate) const PER_SECOND: u32 = 10;
pub(crate) const BURST: u32 = 5;

type Keyed = governor::RateLimiter<
    String,
    governor::state::keyed::DefaultKeyedStateStore<String>,
    governor::clock::DefaultClock,
>;

async fn limited(
    axum::extract::State(limiter): axum::extract::State<std::sync::Arc<Keyed>>,
    headers: axum::http::HeaderMap,
) -> axum::http::StatusCode {
    let Some(key) = headers.get("x-customer-id").and_then(|v| v.to_str().ok()) else {
        return axum::http::StatusCode::BAD_REQUEST;
    };
    match limiter.check_key(&key.to_string()) {
        Ok(()) => axum::http::StatusCode::OK,
        Err(_) => axum::http::StatusCode::TOO_MANY_REQUESTS,
    }
}

/// The server: started by [`start`] as this test binary with [`ENV`] set;
/// without it (a plain `--ignored` run) it returns at once.
#[test]
#[ignore = "the governor server the probe tests start in a process of its own"]
fn governor_server() {
    let Ok(port) = std::env::var(ENV) else {
        return;
    };
    let quota = governor::Quota::per_second(NonZeroU32::new(PER_SECOND).unwrap())
        .allow_burst(NonZeroU32::new(BURST).unwrap());
    let limiter: std::sync::Arc<Keyed> = std::sync::Arc::new(governor::RateLimiter::keyed(quota));
    let app = axum::Router::new()
        .route("/limited", axum::routing::get(limited))
        .with_state(limiter);
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

/// A governor server on a free port, killed (its whole group) when the
/// returned group is dropped.
pub(crate) fn start() -> (u16, Group) {
    let port = free_port();
    let mut group = spawn_group(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "governor::governor_server",
                "--ignored",
                "--nocapture",
            ])
            .env(ENV, port.to_string()),
    );
    wait_listening(port, &mut group.0);
    (port, group)
}
