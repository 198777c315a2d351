//! The live view's HTTP server on loopback: the page (`/`), the board as
//! JSON (`/status`), and once the run is judged its report.html
//! (`/report`: a page on http: cannot open a file: link). It answers only
//! requests addressed to it by its own host name (no DNS rebinding), and
//! stops with the run: gracefully by `stop`, and on every other path when
//! dropped.

use super::board::Board;
use crate::error::Error;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const PAGE: &str = include_str!("page.html");

/// The page may run its own inline script and ask this server, nothing else.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; connect-src 'self'; img-src data:; \
     base-uri 'none'; form-action 'none'";

/// Once the run ended, how long an open page may take to fetch the end
/// and the report before rlbench exits.
const LINGER: Duration = Duration::from_secs(3);

/// The live view, serving.
pub(crate) struct LiveServer {
    board: Arc<Board>,
    /// `http://127.0.0.1:PORT/`.
    pub url: String,
    stop: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<()>>,
    sampler: JoinHandle<()>,
}

#[derive(Clone)]
struct Shared {
    board: Arc<Board>,
    /// The Host values this server answers to.
    hosts: Arc<Vec<String>>,
}

/// Listens on `addr` (loopback, checked by the flag's parser) and serves
/// `board`; a port in use is an environment failure, in one line.
pub(crate) async fn start(addr: SocketAddr, board: Arc<Board>) -> Result<LiveServer, Error> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AddrInUse => {
                Error::environment(format!("--live {addr}: the address is in use"))
            }
            _ => Error::environment(format!("--live {addr}: cannot listen: {e}")),
        })?;
    let local = listener
        .local_addr()
        .map_err(|e| Error::environment(format!("--live {addr}: {e}")))?;
    let hosts = vec![local.to_string(), format!("localhost:{}", local.port())];
    let app = Router::new()
        .route("/", get(page))
        .route("/status", get(status))
        .route("/report", get(report))
        .with_state(Shared {
            board: board.clone(),
            hosts: Arc::new(hosts),
        });
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await;
    });
    let sampler = tokio::spawn({
        let board = board.clone();
        async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                board.tick();
            }
        }
    });
    Ok(LiveServer {
        board,
        url: format!("http://{local}/"),
        stop: Some(stop),
        server: Some(server),
        sampler,
    })
}

impl LiveServer {
    /// Once the run ended: gives a page that is open the moment to fetch
    /// the end and the report (at most [`LINGER`]), then stops serving.
    pub(crate) async fn stop(mut self) {
        let deadline = tokio::time::Instant::now() + LINGER;
        while self.board.watched()
            && !self.board.settled()
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            let abort = server.abort_handle();
            if tokio::time::timeout(Duration::from_secs(1), server)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        self.sampler.abort();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            server.abort();
        }
    }
}

/// Whether the request was addressed to this server by name.
fn ours(shared: &Shared, headers: &HeaderMap) -> bool {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|host| shared.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)))
}

fn refused() -> Response {
    (StatusCode::MISDIRECTED_REQUEST, "not this server's host\n").into_response()
}

async fn page(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    if !ours(&shared, &headers) {
        return refused();
    }
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, PAGE_POLICY),
        ],
        PAGE,
    )
        .into_response()
}

async fn status(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    if !ours(&shared, &headers) {
        return refused();
    }
    let body = shared.board.status().to_string();
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

async fn report(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    if !ours(&shared, &headers) {
        return refused();
    }
    let Some(path) = shared.board.report() else {
        return (
            StatusCode::NOT_FOUND,
            "the report is written when the run ends\n",
        )
            .into_response();
    };
    match tokio::fs::read(&path).await {
        Ok(html) => (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            html,
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{}: {e}\n", path.display()),
        )
            .into_response(),
    }
}
