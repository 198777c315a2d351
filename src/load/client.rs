//! One request to a target and what its answer means: keep-alive HTTP/1
//! connections driven by the task that sends on them, a per-request
//! timeout, the mapping of answers to outcomes (2xx admitted, 429 rejected,
//! anything else an error) and of failures to their kind (refused, reset,
//! ...). A general pooled client serves the few control requests
//! (health, metrics).

use crate::events::advertised::{self, Advertised};
use crate::events::{ErrorKind, Outcome};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::header::{HeaderMap, HeaderName};
use hyper::{Method, Request, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::net::TcpStream;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Idle open-loop connections kept per target (each holds buffers).
const MAX_IDLE_PER_TARGET: usize = 1_024;

pub type HttpClient = Client<HttpConnector, Empty<Bytes>>;

pub fn new(max_idle_per_target: usize) -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    connector.set_connect_timeout(Some(CONNECT_TIMEOUT));
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(max_idle_per_target)
        .pool_idle_timeout(Duration::from_secs(30))
        .build(connector)
}

/// The outcome an answer means: a status in `limited` is the limiter's
/// no (checked first: a target may limit with any status), 2xx a yes, and
/// anything else an error.
pub fn classify(status: u16, limited: &[u16]) -> Outcome {
    if limited.contains(&status) {
        return Outcome::Rejected;
    }
    match status {
        200..=299 => Outcome::Admitted,
        _ => Outcome::Error,
    }
}

/// What a limiter answers by default when it says no.
pub const DEFAULT_LIMITED: &[u16] = &[429];

/// What every request of a load carries besides its target and key.
#[derive(Clone, Debug)]
pub struct Template {
    pub method: Method,
    /// Extra headers (`--header`), sent on every request.
    pub headers: HeaderMap,
    /// The header that carries the rate-limit key; none sends no key.
    pub key_header: Option<HeaderName>,
    /// The key header's value around the key (a `key_template` such as
    /// `"Bearer {key}"`); both empty sends the key as it is.
    pub key_affix: (String, String),
    /// Statuses that mean "limited" (429 by default; nginx says 503).
    pub limited: Vec<u16>,
}

impl Template {
    /// `method`, no extra headers, the key in `key_header` as it is, 429 limited.
    pub fn new(method: Method, key_header: Option<HeaderName>) -> Self {
        Template {
            method,
            headers: HeaderMap::new(),
            key_header,
            key_affix: Default::default(),
            limited: DEFAULT_LIMITED.to_vec(),
        }
    }
}

/// How one exchange ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    /// HTTP status, 0 when there was none.
    pub status: u16,
    pub outcome: Outcome,
    /// Why there was no answer.
    pub error: Option<ErrorKind>,
    /// The answer's rate-limit headers, if it had any.
    pub advertised: Option<Advertised>,
}

/// What every request to one target shares: the path for the request
/// line, and `Host` plus the template's headers. Built once per connection.
struct Prepared {
    origin: Uri,
    headers: HeaderMap,
}

impl Prepared {
    fn new(template: &Template, uri: &Uri) -> Option<Self> {
        let origin = uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .parse()
            .ok()?;
        let mut headers = template.headers.clone();
        let host = hyper::header::HeaderValue::from_str(uri.authority()?.as_str()).ok()?;
        headers.insert(hyper::header::HOST, host);
        Some(Prepared { origin, headers })
    }

    /// The request, with `key` in the template's key header.
    fn request(&self, template: &Template, key: &str) -> Option<Request<Empty<Bytes>>> {
        let mut request = Request::new(Empty::new());
        *request.method_mut() = template.method.clone();
        *request.uri_mut() = self.origin.clone();
        *request.headers_mut() = self.headers.clone();
        if let Some(name) = &template.key_header {
            let (before, after) = &template.key_affix;
            let value = if before.is_empty() && after.is_empty() {
                hyper::header::HeaderValue::from_str(key).ok()?
            } else {
                hyper::header::HeaderValue::from_str(&format!("{before}{key}{after}")).ok()?
            };
            request.headers_mut().insert(name.clone(), value);
        }
        Some(request)
    }
}

fn failed(kind: ErrorKind) -> Answer {
    Answer {
        status: 0,
        outcome: Outcome::Error,
        error: Some(kind),
        advertised: None,
    }
}

fn timed_out() -> Answer {
    Answer {
        status: 0,
        outcome: Outcome::Timeout,
        error: None,
        advertised: None,
    }
}

fn answered(status: u16, limited: &[u16], advertised: Option<Advertised>) -> Answer {
    Answer {
        status,
        outcome: classify(status, limited),
        error: None,
        advertised,
    }
}

/// Idle dedicated connections per target, for open-loop requests: each
/// request takes one (or opens a new one) and drives it in its own task,
/// then puts it back. Cheaper than a general pool whose connections run as
/// tasks of their own and hand every answer across tasks.
pub struct Connections {
    targets: Vec<Uri>,
    idle: Vec<std::sync::Mutex<Vec<Dedicated>>>,
}

impl Connections {
    pub fn new(targets: &[Uri]) -> Self {
        Connections {
            targets: targets.to_vec(),
            idle: targets.iter().map(|_| Default::default()).collect(),
        }
    }

    /// Sends one request to target `target` on an idle connection or a new one.
    pub async fn send(
        &self,
        target: usize,
        template: &Template,
        key: &str,
        timeout: Duration,
    ) -> Answer {
        let idle = self.idle[target]
            .lock()
            .ok()
            .and_then(|mut idle| idle.pop());
        let mut connection = idle.unwrap_or_else(|| Dedicated::new(self.targets[target].clone()));
        let answer = connection.send(template, key, timeout).await;
        if let Ok(mut idle) = self.idle[target].lock() {
            // A burst of slow answers can open thousands; keep a bounded few.
            if idle.len() < MAX_IDLE_PER_TARGET {
                idle.push(connection);
            }
        }
        answer
    }
}

type Sender = hyper::client::conn::http1::SendRequest<Empty<Bytes>>;
type Connection = hyper::client::conn::http1::Connection<TokioIo<TcpStream>, Empty<Bytes>>;

/// One keep-alive connection owned by one closed-loop worker, driven inside
/// the worker's own task: no pool, no hand-off between tasks — the way wrk
/// drives each of its connections. Reconnects after any failure.
pub struct Dedicated {
    uri: Uri,
    prepared: Option<Prepared>,
    live: Option<(Sender, Pin<Box<Connection>>)>,
}

impl Dedicated {
    pub fn new(uri: Uri) -> Self {
        Dedicated {
            uri,
            prepared: None,
            live: None,
        }
    }

    async fn connect(&mut self) -> Result<(), ErrorKind> {
        let host = self.uri.host().ok_or(ErrorKind::Other)?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = self.uri.port_u16().unwrap_or(80);
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect((host, port)))
            .await
            .map_err(|_| ErrorKind::ConnectTimeout)?
            .map_err(|e| match error_kind(&e) {
                ErrorKind::Other => ErrorKind::Connect,
                kind => kind,
            })?;
        let _ = stream.set_nodelay(true);
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| error_kind(&e))?;
        self.live = Some((sender, Box::pin(connection)));
        Ok(())
    }

    /// Sends one request on this connection (connecting first if needed).
    pub async fn send(&mut self, template: &Template, key: &str, timeout: Duration) -> Answer {
        if self.prepared.is_none() {
            self.prepared = Prepared::new(template, &self.uri);
        }
        let Some(request) = self
            .prepared
            .as_ref()
            .and_then(|p| p.request(template, key))
        else {
            return failed(ErrorKind::Other);
        };
        // An idle connection the server closed meanwhile (a restarted
        // replica) has ended: one poll of it tells, before a request is
        // lost on it.
        if let Some((_, connection)) = self.live.as_mut() {
            let ended = std::future::poll_fn(|cx| {
                std::task::Poll::Ready(connection.as_mut().poll(cx).is_ready())
            })
            .await;
            if ended {
                // Finished: dropped here, never polled again.
                self.live = None;
            }
        }
        let exchange = async {
            if !self.live.as_ref().is_some_and(|(s, _)| !s.is_closed()) {
                self.connect().await?;
            }
            let Some((sender, connection)) = self.live.as_mut() else {
                return Err(ErrorKind::Other);
            };
            let response = async {
                sender.ready().await.map_err(|e| error_kind(&e))?;
                let response = sender
                    .send_request(request)
                    .await
                    .map_err(|e| error_kind(&e))?;
                let status = response.status().as_u16();
                let advertised = advertised::parse(response.headers());
                response
                    .into_body()
                    .collect()
                    .await
                    .map_err(|e| error_kind(&e))?;
                Ok((status, advertised))
            };
            tokio::pin!(response);
            tokio::select! {
                biased;
                r = &mut response => r.map(|answer| (answer, false)),
                r = connection.as_mut() => match r {
                    Err(e) => Err(error_kind(&e)),
                    // It ended cleanly (the server closed after answering):
                    // an answer it delivered first still counts.
                    Ok(()) => response.await.map(|answer| (answer, true)),
                },
            }
        };
        let answer = match tokio::time::timeout(timeout, exchange).await {
            Ok(Ok(((status, advertised), ended))) => {
                if ended {
                    // A finished connection must not be polled again.
                    self.live = None;
                }
                answered(status, &template.limited, advertised)
            }
            Ok(Err(kind)) => failed(kind),
            Err(_) => timed_out(),
        };
        if answer.status == 0 {
            // No answer: a request may still be outstanding on it, start afresh.
            self.live = None;
        }
        answer
    }
}

/// The kind of a failed exchange, from the innermost I/O error when there
/// is one (refused, reset, ...), else from hyper's own classification.
pub fn error_kind(e: &(dyn std::error::Error + 'static)) -> ErrorKind {
    use std::io::ErrorKind as Io;
    let mut connect = false;
    let mut closed = false;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(e) = err.downcast_ref::<hyper_util::client::legacy::Error>() {
            connect |= e.is_connect();
        }
        if let Some(e) = err.downcast_ref::<hyper::Error>() {
            closed |= e.is_incomplete_message() || e.is_closed() || e.is_canceled();
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            match io.kind() {
                Io::ConnectionRefused => return ErrorKind::ConnectRefused,
                Io::TimedOut if connect => return ErrorKind::ConnectTimeout,
                Io::ConnectionReset | Io::ConnectionAborted | Io::BrokenPipe => {
                    return ErrorKind::Reset
                }
                Io::AddrNotAvailable | Io::AddrInUse => return ErrorKind::NoLocalPort,
                Io::UnexpectedEof => return ErrorKind::Closed,
                _ => {}
            }
        }
        source = err.source();
    }
    if connect {
        ErrorKind::Connect
    } else if closed {
        ErrorKind::Closed
    } else {
        ErrorKind::Other
    }
}

/// PUT `uri` (no body); the status, or `None` when nothing answered in time.
pub async fn put_status(client: &HttpClient, uri: &Uri, timeout: Duration) -> Option<u16> {
    status_of(client, Request::put(uri), timeout).await
}

/// GET `uri`; the status, or `None` when nothing answered in time.
pub async fn get_status(client: &HttpClient, uri: &Uri, timeout: Duration) -> Option<u16> {
    status_of(client, Request::get(uri), timeout).await
}

async fn status_of(
    client: &HttpClient,
    request: hyper::http::request::Builder,
    timeout: Duration,
) -> Option<u16> {
    let request = request.body(Empty::new()).ok()?;
    let exchange = async {
        let response = client.request(request).await.ok()?;
        let status = response.status().as_u16();
        response.into_body().collect().await.ok()?;
        Some(status)
    };
    tokio::time::timeout(timeout, exchange).await.ok().flatten()
}

/// GET `uri`; the body of a 200 answer as text.
pub async fn get_text(client: &HttpClient, uri: &Uri, timeout: Duration) -> Option<String> {
    let request = Request::get(uri).body(Empty::new()).ok()?;
    let exchange = async {
        let response = client.request(request).await.ok()?;
        if response.status() != hyper::StatusCode::OK {
            return None;
        }
        let body = response.into_body().collect().await.ok()?.to_bytes();
        Some(String::from_utf8_lossy(&body).into_owned())
    };
    tokio::time::timeout(timeout, exchange).await.ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_outcomes() {
        assert_eq!(classify(200, DEFAULT_LIMITED), Outcome::Admitted);
        assert_eq!(classify(204, DEFAULT_LIMITED), Outcome::Admitted);
        assert_eq!(classify(429, DEFAULT_LIMITED), Outcome::Rejected);
        assert_eq!(classify(400, DEFAULT_LIMITED), Outcome::Error);
        assert_eq!(classify(503, DEFAULT_LIMITED), Outcome::Error);
        // nginx limits with 503 unless told otherwise; then 429 is an error.
        assert_eq!(classify(503, &[503]), Outcome::Rejected);
        assert_eq!(classify(429, &[503]), Outcome::Error);
        assert_eq!(classify(200, &[503, 429]), Outcome::Admitted);
    }

    /// An error whose cause is `inner`, as hyper wraps I/O errors.
    #[derive(Debug)]
    struct Wrapped(std::io::Error);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "wrapped")
        }
    }

    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn failures_are_named_by_their_innermost_io_error() {
        use std::io::{Error, ErrorKind as Io};
        for (io, kind) in [
            (Io::ConnectionRefused, ErrorKind::ConnectRefused),
            (Io::ConnectionReset, ErrorKind::Reset),
            (Io::BrokenPipe, ErrorKind::Reset),
            (Io::AddrNotAvailable, ErrorKind::NoLocalPort),
            (Io::UnexpectedEof, ErrorKind::Closed),
            (Io::PermissionDenied, ErrorKind::Other),
            // A timeout is a connect timeout only while connecting.
            (Io::TimedOut, ErrorKind::Other),
        ] {
            assert_eq!(error_kind(&Wrapped(Error::from(io))), kind, "{io:?}");
            assert_eq!(error_kind(&Error::from(io)), kind, "{io:?}");
        }
    }

    #[tokio::test]
    async fn the_key_goes_out_in_its_template_and_headers_come_back_parsed() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let n = s.read(&mut buf).await.unwrap();
            s.write_all(
                b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 3\r\nx-ratelimit-remaining: 0\r\ncontent-length: 0\r\n\r\n",
            )
            .await
            .unwrap();
            String::from_utf8_lossy(&buf[..n]).to_lowercase()
        });
        let mut template =
            Template::new(Method::GET, Some(HeaderName::from_static("authorization")));
        template.key_affix = ("Bearer ".into(), ";v=1".into());
        template.limited = vec![503];
        let mut c = Dedicated::new(format!("http://{addr}/x").parse().unwrap());
        let a = c
            .send(&template, "customer-7", Duration::from_secs(2))
            .await;
        assert_eq!((a.status, a.outcome), (503, Outcome::Rejected));
        let advertised = a.advertised.unwrap();
        assert_eq!(advertised.retry_after_ms, Some(3_000));
        assert_eq!(advertised.remaining, Some(0));
        let request = server.await.unwrap();
        assert!(
            request.contains("authorization: bearer customer-7;v=1\r\n"),
            "{request}"
        );
    }

    #[tokio::test]
    async fn an_idle_connection_the_server_closed_is_not_used_again() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // Answers one request per connection, then hangs up (as a replica
        // that restarted would have).
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                    .await;
            }
        });
        let template = Template::new(Method::GET, None);
        let mut c = Dedicated::new(format!("http://{addr}/").parse().unwrap());
        for _ in 0..3 {
            let a = c.send(&template, "k", Duration::from_secs(2)).await;
            assert_eq!((a.status, a.error), (200, None));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    #[tokio::test]
    async fn a_dedicated_connection_to_a_closed_port_is_refused_then_recovers() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let template = Template::new(Method::GET, None);
        let uri: Uri = format!("http://{addr}/x").parse().unwrap();
        let mut c = Dedicated::new(uri);
        let a = c.send(&template, "k", Duration::from_secs(2)).await;
        assert_eq!(a.outcome, Outcome::Error);
        assert_eq!(a.error, Some(ErrorKind::ConnectRefused));
        // The port comes alive: the same connection object reconnects.
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let _ = s.read(&mut buf).await;
            s.write_all(b"HTTP/1.1 429 Too Many Requests\r\ncontent-length: 0\r\n\r\n")
                .await
                .unwrap();
            let _ = s.read(&mut buf).await;
        });
        let a = c.send(&template, "k", Duration::from_secs(2)).await;
        assert_eq!(
            (a.status, a.outcome, a.error),
            (429, Outcome::Rejected, None)
        );
    }
}
