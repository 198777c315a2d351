//! The few control requests rlbench sends its own replicas (health,
//! metrics, clock steps) through one general pooled client — apart from
//! the load's own connections.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::{Request, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

pub(crate) type HttpClient = Client<HttpConnector, Empty<Bytes>>;

pub(crate) fn new(max_idle_per_target: usize) -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    connector.set_connect_timeout(Some(CONNECT_TIMEOUT));
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(max_idle_per_target)
        .pool_idle_timeout(Duration::from_secs(30))
        .build(connector)
}

/// PUT `uri` (no body) with `Authorization: Bearer <token>`; the status,
/// or `None` when nothing answered in time.
pub(crate) async fn put_status(
    client: &HttpClient,
    uri: &Uri,
    token: &str,
    timeout: Duration,
) -> Option<u16> {
    let request = Request::put(uri).header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
    status_of(client, request, timeout).await
}

/// GET `uri`; the status, or `None` when nothing answered in time.
pub(crate) async fn get_status(client: &HttpClient, uri: &Uri, timeout: Duration) -> Option<u16> {
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
pub(crate) async fn get_text(client: &HttpClient, uri: &Uri, timeout: Duration) -> Option<String> {
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
