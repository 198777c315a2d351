//! HTTP/2 to a target (`[target] http = "2"`): a [`Link`] is one HTTP/2
//! connection (hyper's client; over TLS with ALPN `h2`, else cleartext
//! with prior knowledge) that many requests share as streams — the open
//! loop's connection tasks of one lane and route all send on their
//! route's link, each request still leaving at its intended time. A
//! request is the same one HTTP/1.1 would send (the template's head and
//! body, read back into a request), its answer read for the same fields.

use crate::events::ErrorKind;
use crate::load::outcome::{answered, error_kind, failed, timed_out, Answer};
use crate::load::request::Template;
use crate::load::tls;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use hyper::Uri;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::net::IpAddr;
use std::time::Duration;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// One HTTP/2 connection to a target, opened when first needed and again
/// after it fails.
pub(crate) struct Link {
    uri: Uri,
    tls: Option<tls::Client>,
    bind: Option<IpAddr>,
    send: tokio::sync::Mutex<Option<SendRequest<Full<Bytes>>>>,
}

impl Link {
    pub(crate) fn new(uri: Uri, tls: Option<&tls::Client>, bind: Option<IpAddr>) -> Self {
        Link {
            tls: tls.filter(|_| uri.scheme_str() == Some("https")).cloned(),
            uri,
            bind,
            send: tokio::sync::Mutex::new(None),
        }
    }

    /// A sender on the open connection, opening it first if needed.
    async fn sender(&self) -> Result<SendRequest<Full<Bytes>>, ErrorKind> {
        let mut held = self.send.lock().await;
        if let Some(s) = held.as_ref().filter(|s| !s.is_closed()) {
            return Ok(s.clone());
        }
        *held = None;
        let opened = tokio::time::timeout(CONNECT_TIMEOUT, self.open())
            .await
            .map_err(|_| ErrorKind::ConnectTimeout)??;
        *held = Some(opened.clone());
        Ok(opened)
    }

    async fn open(&self) -> Result<SendRequest<Full<Bytes>>, ErrorKind> {
        let host = self.uri.host().ok_or(ErrorKind::Other)?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = crate::target::port(&self.uri);
        let tcp =
            super::socket::tcp(host, port, self.bind)
                .await
                .map_err(|e| match error_kind(&e) {
                    ErrorKind::Other => ErrorKind::Connect,
                    kind => kind,
                })?;
        let _ = tcp.set_nodelay(true);
        let stream = match &self.tls {
            None => tls::Stream::Plain(tcp),
            Some(tls) => tls
                .connect_h2(host, tcp)
                .await
                .map_err(|e| match error_kind(&e) {
                    ErrorKind::Other => ErrorKind::Tls,
                    kind => kind,
                })?,
        };
        let (send, connection) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|_| ErrorKind::Other)?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(send)
    }

    /// Opens the connection now, ahead of the first request (a failure is
    /// left for that request to meet and count).
    pub(crate) async fn warm(&self) {
        let _ = self.sender().await;
    }

    /// Sends one request as a stream of the link's connection: `request`
    /// is the HTTP/1.1 form the template wrote for its key.
    pub(crate) async fn send(
        &self,
        template: &Template,
        request: &[u8],
        head_only: bool,
        timeout: Duration,
    ) -> Answer {
        let Some(req) = as_request(&self.uri, request) else {
            return failed(ErrorKind::Other);
        };
        let rls = matches!(
            template.key_place,
            crate::load::request::KeyPlace::Rls { .. }
        );
        let exchange = async {
            let mut sender = self.sender().await?;
            sender.ready().await.map_err(|_| ErrorKind::Closed)?;
            let response = sender.send_request(req).await.map_err(|e| {
                if e.is_canceled() {
                    ErrorKind::Closed
                } else {
                    ErrorKind::Reset
                }
            })?;
            let status = response.status().as_u16();
            let advertised = crate::events::advertised::parse(response.headers());
            if rls && status == 200 {
                return Ok((grpc_status(response).await?, None));
            }
            if !head_only {
                let mut body = response.into_body();
                while let Some(frame) = body.frame().await {
                    frame.map_err(|_| ErrorKind::Reset)?;
                }
            }
            Ok::<_, ErrorKind>((status, advertised))
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(Ok((status, advertised))) => answered(status, &template.limited, advertised),
            Ok(Err(kind)) => failed(kind),
            Err(_) => timed_out(),
        }
    }
}

/// A rate-limit service's answer as the status it stands for (`rls.rs`):
/// its message (at most [`super::rls::MAX_ANSWER`] bytes read) and its
/// gRPC status, from its trailers or, answered with trailers only, its
/// headers.
async fn grpc_status(response: hyper::Response<hyper::body::Incoming>) -> Result<u16, ErrorKind> {
    let (parts, mut body) = response.into_parts();
    let mut grpc = parts
        .headers
        .get("grpc-status")
        .map(|v| v.as_bytes().to_vec());
    let mut data = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| ErrorKind::Reset)?;
        match frame.into_data() {
            Ok(chunk) => {
                if data.len() + chunk.len() > super::rls::MAX_ANSWER {
                    return Ok(502);
                }
                data.extend_from_slice(&chunk);
            }
            Err(frame) => {
                if let Some(v) = frame.trailers_ref().and_then(|t| t.get("grpc-status")) {
                    grpc = Some(v.as_bytes().to_vec());
                }
            }
        }
    }
    Ok(super::rls::status(grpc.as_deref(), &data))
}

/// Headers HTTP/2 forbids (connection-specific) or carries otherwise.
const NOT_IN_H2: [&str; 6] = [
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// The HTTP/1.1 request the template wrote, as an HTTP/2 request to `uri`'s
/// authority: the same method, path, headers and body.
fn as_request(uri: &Uri, bytes: &[u8]) -> Option<hyper::Request<Full<Bytes>>> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Request::new(&mut headers);
    let used = match parsed.parse(bytes).ok()? {
        httparse::Status::Complete(n) => n,
        httparse::Status::Partial => return None,
    };
    let scheme = uri.scheme_str().unwrap_or("http");
    let authority = uri.authority()?.as_str();
    let target = format!("{scheme}://{authority}{}", parsed.path?);
    let mut req = hyper::Request::builder()
        .method(parsed.method?)
        .uri(target)
        .version(hyper::Version::HTTP_2);
    for h in parsed.headers.iter() {
        if NOT_IN_H2.iter().any(|n| h.name.eq_ignore_ascii_case(n)) {
            continue;
        }
        req = req.header(h.name, h.value);
    }
    req.body(Full::new(Bytes::copy_from_slice(&bytes[used..])))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_http1_request_becomes_the_same_http2_one() {
        let bytes =
            b"POST /login?x=1 HTTP/1.1\r\nhost: 127.0.0.1:8443\r\nconnection: keep-alive\r\n\
                      authorization: Bearer k\r\ncontent-length: 4\r\n\r\nbody";
        let uri: Uri = "https://127.0.0.1:8443/".parse().unwrap();
        let req = as_request(&uri, bytes).unwrap();
        assert_eq!(req.method(), hyper::Method::POST);
        assert_eq!(req.uri().to_string(), "https://127.0.0.1:8443/login?x=1");
        assert_eq!(req.version(), hyper::Version::HTTP_2);
        assert_eq!(req.headers()["authorization"], "Bearer k");
        assert!(req.headers().get("host").is_none());
        assert!(req.headers().get("connection").is_none());
        assert!(
            as_request(&uri, b"GET / HTTP/1.1\r\n").is_none(),
            "cut short"
        );
    }
}
