//! One request to a target and what its answer means: a keep-alive HTTP/1
//! client (a pool per target), a per-request timeout, and the mapping of
//! answers to outcomes (2xx admitted, 429 rejected, anything else an error).

use crate::events::Outcome;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::header::HeaderName;
use hyper::{Method, Request, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

pub type HttpClient = Client<HttpConnector, Empty<Bytes>>;

pub fn new(max_idle_per_target: usize) -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    connector.set_connect_timeout(Some(Duration::from_secs(2)));
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(max_idle_per_target)
        .pool_idle_timeout(Duration::from_secs(30))
        .build(connector)
}

pub fn classify(status: u16) -> Outcome {
    match status {
        200..=299 => Outcome::Admitted,
        429 => Outcome::Rejected,
        _ => Outcome::Error,
    }
}

/// Sends one limited request; returns the status (0 without one) and outcome.
pub async fn send(
    client: &HttpClient,
    method: Method,
    uri: &Uri,
    key_header: &HeaderName,
    key: &str,
    timeout: Duration,
) -> (u16, Outcome) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header(key_header, key)
        .body(Empty::new());
    let Ok(request) = request else {
        return (0, Outcome::Error);
    };
    let exchange = async {
        let response = client.request(request).await.ok()?;
        let status = response.status().as_u16();
        // Read the body so the connection goes back to the pool.
        response.into_body().collect().await.ok()?;
        Some(status)
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(Some(status)) => (status, classify(status)),
        Ok(None) => (0, Outcome::Error),
        Err(_) => (0, Outcome::Timeout),
    }
}

/// GET `uri`; the status, or `None` when nothing answered in time.
pub async fn get_status(client: &HttpClient, uri: &Uri, timeout: Duration) -> Option<u16> {
    let request = Request::get(uri).body(Empty::new()).ok()?;
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
        assert_eq!(classify(200), Outcome::Admitted);
        assert_eq!(classify(204), Outcome::Admitted);
        assert_eq!(classify(429), Outcome::Rejected);
        assert_eq!(classify(400), Outcome::Error);
        assert_eq!(classify(503), Outcome::Error);
    }
}
