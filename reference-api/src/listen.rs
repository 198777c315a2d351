//! Connections served within limits, so that hostile clients cannot take a
//! replica from the healthy ones: a request head must arrive whole within
//! `header_read_timeout` (a slowloris client trickling its headers, or one
//! holding an idle connection, is cut off), may be at most
//! `max_header_bytes` (a bigger one is refused), and at most
//! `max_connections` are open at once (one more is closed as soon as it is
//! accepted, counted). HTTP/1.1 and cleartext HTTP/2 (h2c) on the same
//! port, as `axum::serve` served them; in-flight requests are drained on
//! shutdown.

use crate::config::Limits;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// What the limits turned away, for `/metrics`.
#[derive(Debug, Default)]
pub struct Turned {
    /// Connections closed at once: `max_connections` were open.
    pub connections: AtomicU64,
}

/// hyper's smallest read buffer: heads up to this size are always read.
const MIN_BUFFER: usize = 8_192;

/// How long a failed accept (out of file descriptors) waits before the
/// next: the connections open will close and free some.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(20);

/// Serves `router` on `listener` within `limits` until `shutdown`
/// resolves, then waits for the connections' requests in flight.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: &Limits,
    turned: Arc<Turned>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let open = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let head_timeout = Duration::from_millis(limits.header_read_timeout_ms.max(1));
    let graceful = GracefulShutdown::new();
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(head_timeout)
        .max_buf_size(limits.max_header_bytes.max(MIN_BUFFER));
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX));
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(_) => {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = open.clone().try_acquire_owned() else {
            turned.connections.fetch_add(1, Ordering::Relaxed);
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone().layer(axum::Extension(
            axum::extract::ConnectInfo::<SocketAddr>(peer),
        )));
        let connection = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            // The first bytes tell HTTP/1.1 from h2c, and the builder waits
            // for them with no timeout of its own: a client that connects
            // and sends nothing would hold its place for ever.
            let mut first = [0u8; 1];
            if let Ok(Ok(n)) = tokio::time::timeout(head_timeout, stream.peek(&mut first)).await {
                if n > 0 {
                    let connection =
                        connection.serve_connection_with_upgrades(TokioIo::new(stream), service);
                    let _ = watcher.watch(connection).await;
                }
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
