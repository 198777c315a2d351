//! Keep-alive HTTP/1.1 connections, plain or TLS (`tls`), driven by the
//! task that sends on them, with a per-request timeout ([`Dedicated`]):
//! one per closed-loop worker and target, one per open-loop connection
//! task. A connection is opened ahead of its first request where the
//! load can (the TLS handshake too), so set-up stays out of latency —
//! unless the template keeps no connection alive (`keep_alive = false`):
//! then each request opens its own, inside its latency.

use crate::events::ErrorKind;
use crate::load::h2::Link;
use crate::load::outcome::{answered, error_kind, failed, timed_out, Answer};
use crate::load::read_answer::Reader;
use crate::load::request::{Head, Http, Template};
use crate::load::tls::{self, Stream};
use hyper::Uri;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// One keep-alive connection owned by one task (a closed-loop worker, an
/// open-loop connection task) and driven inside it: no pool, no hand-off
/// between tasks, the request written from bytes built once and the
/// answer read in place (`wire`) — the way wrk drives each of its
/// connections. Reconnects after any failure.
pub(crate) struct Dedicated {
    uri: Uri,
    /// For an `https://` target.
    tls: Option<tls::Client>,
    /// The local address its connections come from (a key's own).
    bind: Option<std::net::IpAddr>,
    /// With HTTP/2: the connection it sends on as a stream, shared with
    /// the other tasks of its lane and route (its own when none was given).
    h2: Option<Arc<Link>>,
    head: Option<Head>,
    stream: Option<Stream>,
    request: Vec<u8>,
    reader: Reader,
}

impl Dedicated {
    /// A connection to `uri`, over TLS when it is `https://` (with `tls`).
    pub(crate) fn new(uri: Uri, tls: Option<&tls::Client>) -> Self {
        Dedicated {
            tls: tls.filter(|_| uri.scheme_str() == Some("https")).cloned(),
            bind: None,
            h2: None,
            uri,
            head: None,
            stream: None,
            request: Vec::with_capacity(512),
            reader: Reader::new(),
        }
    }

    /// With HTTP/2, it sends on `link`, shared with others.
    pub(crate) fn on(mut self, link: Arc<Link>) -> Self {
        self.h2 = Some(link);
        self
    }

    /// Its connections come from `bind` (when given).
    pub(crate) fn from(mut self, bind: Option<std::net::IpAddr>) -> Self {
        self.bind = bind;
        self
    }

    async fn connect(&mut self) -> Result<(), ErrorKind> {
        let host = self.uri.host().ok_or(ErrorKind::Other)?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = crate::target::port(&self.uri);
        let bind = self.bind;
        let opening = async {
            let tcp =
                super::socket::tcp(host, port, bind)
                    .await
                    .map_err(|e| match error_kind(&e) {
                        ErrorKind::Other => ErrorKind::Connect,
                        kind => kind,
                    })?;
            let _ = tcp.set_nodelay(true);
            match &self.tls {
                None => Ok(Stream::Plain(tcp)),
                Some(tls) => tls
                    .connect(host, tcp)
                    .await
                    .map_err(|e| match error_kind(&e) {
                        ErrorKind::Other => ErrorKind::Tls,
                        kind => kind,
                    }),
            }
        };
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, opening)
            .await
            .map_err(|_| ErrorKind::ConnectTimeout)??;
        self.reader.reset();
        self.stream = Some(stream);
        Ok(())
    }

    /// Connects now, ahead of the first request (a failure is left for that
    /// request to meet and count).
    pub(crate) async fn open(&mut self) {
        if let Some(link) = &self.h2 {
            link.warm().await;
        } else if self.stream.is_none() {
            let _ = self.connect().await;
        }
    }

    /// Sends one request on this connection (connecting first if needed).
    pub(crate) async fn send(
        &mut self,
        template: &Template,
        key: &str,
        timeout: Duration,
    ) -> Answer {
        if self.head.is_none() {
            self.head = Head::new(template, &self.uri);
        }
        let Some(head) = &self.head else {
            return failed(ErrorKind::Other);
        };
        if !head.write(key, &mut self.request) {
            return failed(ErrorKind::Other);
        }
        let head_only = head.head_only;
        if template.http == Http::H2 {
            let link = self.h2.get_or_insert_with(|| {
                Arc::new(Link::new(self.uri.clone(), self.tls.as_ref(), self.bind))
            });
            return link.send(template, &self.request, head_only, timeout).await;
        }
        if let Some(stream) = &mut self.stream {
            if stream.closed_while_idle().await {
                self.stream = None;
            }
        }
        let exchange = async {
            if self.stream.is_none() {
                self.connect().await?;
            }
            let Some(stream) = self.stream.as_mut() else {
                return Err(ErrorKind::Other);
            };
            stream
                .write_all(&self.request)
                .await
                .map_err(|e| error_kind(&e))?;
            // TLS may hold the last record back until asked.
            stream.flush().await.map_err(|e| error_kind(&e))?;
            self.reader.answer(stream, head_only).await
        };
        let answer = match tokio::time::timeout(timeout, exchange).await {
            Ok(Ok(answer)) => {
                if !answer.reusable || !template.keep_alive {
                    self.stream = None;
                }
                answered(answer.status, &template.limited, answer.advertised)
            }
            Ok(Err(kind)) => failed(kind),
            Err(_) => timed_out(),
        };
        if answer.status == 0 {
            // No answer: a request may still be outstanding on it, start afresh.
            self.stream = None;
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Outcome;
    use hyper::header::HeaderName;
    use hyper::Method;

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
        let mut c = Dedicated::new(format!("http://{addr}/x").parse().unwrap(), None);
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
        let mut c = Dedicated::new(format!("http://{addr}/").parse().unwrap(), None);
        for _ in 0..3 {
            let a = c.send(&template, "k", Duration::from_secs(2)).await;
            assert_eq!((a.status, a.error), (200, None));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    #[tokio::test]
    async fn without_keep_alive_every_request_opens_its_own_connection() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // Answers every request of a connection, keeping it open; counts
        // the connections and keeps each request's head.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let accepts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (s, a) = (seen.clone(), accepts.clone());
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                a.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let s = s.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 2048];
                    while let Ok(n) = conn.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        s.lock()
                            .unwrap()
                            .push(String::from_utf8_lossy(&buf[..n]).into());
                        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                        if conn.write_all(ok).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        let uri: Uri = format!("http://{addr}/").parse().unwrap();
        let mut template = Template::new(Method::GET, None);
        let mut kept = Dedicated::new(uri.clone(), None);
        for _ in 0..3 {
            let a = kept.send(&template, "k", Duration::from_secs(2)).await;
            assert_eq!((a.status, a.error), (200, None));
        }
        assert_eq!(accepts.load(std::sync::atomic::Ordering::SeqCst), 1);
        template.keep_alive = false;
        let mut fresh = Dedicated::new(uri, None);
        fresh.open().await;
        for _ in 0..3 {
            let a = fresh.send(&template, "k", Duration::from_secs(2)).await;
            assert_eq!((a.status, a.error), (200, None));
        }
        // The one opened ahead, then one per request (the first reused it:
        // lanes do not open ahead without keep-alive).
        assert_eq!(accepts.load(std::sync::atomic::Ordering::SeqCst), 1 + 3);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 6);
        assert!(seen[..3].iter().all(|r| !r.contains("connection: close")));
        assert!(
            seen[3..]
                .iter()
                .all(|r| r.contains("connection: close\r\n")),
            "{seen:?}"
        );
    }

    #[tokio::test]
    async fn a_dedicated_connection_to_a_closed_port_is_refused_then_recovers() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let template = Template::new(Method::GET, None);
        let uri: Uri = format!("http://{addr}/x").parse().unwrap();
        let mut c = Dedicated::new(uri, None);
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
