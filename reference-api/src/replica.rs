//! Running one replica as a process: bind, announce the address on stdout
//! (the parent reads it), serve until told to stop. A replica stops on
//! SIGTERM, SIGINT, or when its stdin closes — so it dies with its parent
//! even if the parent is killed without a chance to clean up.

use crate::config::ReplicaConfig;
use crate::server::{self, AppState, SetupError};
use std::future::Future;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// The line a replica prints once it accepts connections: this prefix, then the URL.
pub const READY_PREFIX: &str = "reference-api listening on ";

/// The environment variable rlbench passes a replica's config in (JSON):
/// unlike the command line, which any local user sees in `ps`, a
/// process's environment is readable by its owner only, and the config
/// holds the Redis password and the admin token.
pub const CONFIG_ENV: &str = "RLBENCH_REPLICA_CONFIG";

/// How long in-flight requests may take to finish after shutdown is asked.
const DRAIN: Duration = Duration::from_secs(2);

/// Why a replica did not start, or stopped serving.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot read the bound address: {0}")]
    BoundAddress(#[source] std::io::Error),
    #[error("server failed: {0}")]
    Serve(#[source] std::io::Error),
    #[error("{0}")]
    Otlp(crate::otlp::OtlpError),
}

pub async fn run(
    config: ReplicaConfig,
    listen: SocketAddr,
    on_ready: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let otlp = config.otlp.clone();
    let replica = config.replica.clone();
    let state = AppState::new(config).await?;
    // The exporter reads the state while it lives, and holds it not.
    let exporter = match otlp {
        Some(otlp) => {
            let weak = Arc::downgrade(&state);
            let source: crate::otlp::Source =
                Arc::new(move || weak.upgrade().map(|s| s.samples()).unwrap_or_default());
            Some(crate::otlp::start(&otlp, &replica, source).map_err(RunError::Otlp)?)
        }
        None => None,
    };
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|source| RunError::Listen {
            addr: listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(RunError::BoundAddress)?;
    on_ready(addr);
    let (stopping_tx, stopping_rx) = oneshot::channel::<()>();
    let shutdown = async move {
        shutdown.await;
        let _ = stopping_tx.send(());
    };
    // A clone kept: the last export reads the state after serving ends.
    let serve = server::serve(listener, state.clone(), shutdown);
    let deadline = async move {
        // Waits for the shutdown request; if the sender is gone, never fires.
        if stopping_rx.await.is_ok() {
            tokio::time::sleep(DRAIN).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    let served = tokio::select! {
        r = serve => r.map_err(RunError::Serve),
        () = deadline => Ok(()),
    };
    if let Some(exporter) = exporter {
        exporter.shutdown().await;
    }
    served
}

/// Resolves on SIGTERM or SIGINT, or (with `watch_stdin`) when stdin reaches EOF.
pub async fn shutdown_signal(watch_stdin: bool) {
    let stdin_closed = async move {
        if !watch_stdin {
            return std::future::pending::<()>().await;
        }
        let (tx, rx) = oneshot::channel::<()>();
        // A plain thread, not tokio's blocking pool: a blocked read there
        // would hold up runtime shutdown.
        std::thread::spawn(move || {
            let mut buf = [0u8; 64];
            let mut stdin = std::io::stdin();
            while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
            let _ = tx.send(());
        });
        let _ = rx.await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
        () = stdin_closed => {}
    }
}
