//! Hostile clients against a replica over real sockets, while healthy
//! requests keep being served: slowloris clients trickling their heads
//! (cut off after `header_read_timeout_ms`), heads and bodies over their
//! bounds (refused), more connections than `max_connections` (closed at
//! once; idle ones held by a client time out and free their places). Each
//! test prints the healthy requests' latency before and during the
//! attack — measured, never asserted: these machines are shared.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use reference_api::config::Limits;
use reference_api::server::{self, AppState};
use reference_api::{Policy, ReplicaConfig};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

/// A replica within `limits` on a port-0 listener, and how to stop it.
async fn start(limits: Limits) -> (SocketAddr, oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = ReplicaConfig::new(
        "r0",
        Policy::SlidingLog {
            limit: 1_000,
            window_us: 1_000_000,
        },
    );
    config.limits = limits;
    let state = AppState::new(config).await.unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        server::serve(listener, state, async {
            let _ = rx.await;
        })
        .await
        .unwrap();
    });
    (addr, tx)
}

/// `n` healthy requests one after another on a fresh client, each on its
/// own key: every one must be decided (200); their latencies.
async fn healthy(addr: SocketAddr, n: usize) -> Vec<Duration> {
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let mut took = Vec::with_capacity(n);
    for i in 0..n {
        let req = Request::builder()
            .method(Method::POST)
            .uri(format!("http://{addr}/api/transfers"))
            .header("X-Customer-Id", format!("healthy-{i}"))
            .body(Full::new(Bytes::new()))
            .unwrap();
        let began = Instant::now();
        let res = tokio::time::timeout(Duration::from_secs(5), client.request(req))
            .await
            .expect("a healthy request answered within 5 s")
            .expect("a healthy request answered");
        assert_eq!(res.status(), StatusCode::OK);
        let _ = res.into_body().collect().await;
        took.push(began.elapsed());
    }
    took
}

/// p50, p99 and max of `took`, in milliseconds, as the test prints them.
fn said(label: &str, took: &mut [Duration]) -> String {
    took.sort();
    let at = |q: f64| took[((took.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3;
    format!(
        "{label}: {} healthy requests, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        took.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    )
}

/// Reads until the server closes the connection (or `limit` passes):
/// when it closed, and the bytes it sent.
async fn until_closed(stream: &mut TcpStream, limit: Duration) -> (Option<Instant>, Vec<u8>) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (Some(Instant::now()), got),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return (None, got),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_clients_are_cut_off_while_healthy_requests_are_served() {
    let timeout = Duration::from_millis(1_000);
    let (addr, _stop) = start(Limits {
        header_read_timeout_ms: timeout.as_millis() as u64,
        ..Limits::default()
    })
    .await;
    let mut before = healthy(addr, 100).await;
    // 200 clients, each a head begun and a header byte every 100 ms.
    let began = Instant::now();
    let mut slow = Vec::new();
    for i in 0..200 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(
            format!("POST /api/transfers HTTP/1.1\r\nHost: x\r\nX-Customer-Id: slow-{i}\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
        slow.push(tokio::spawn(async move {
            let (mut read, mut write) = s.into_split();
            let trickle = tokio::spawn(async move {
                for _ in 0..100 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    if write.write_all(b"X").await.is_err() {
                        break;
                    }
                }
            });
            let mut buf = [0u8; 1024];
            let closed = loop {
                match tokio::time::timeout(Duration::from_secs(10), read.read(&mut buf)).await {
                    Ok(Ok(0)) | Ok(Err(_)) => break Some(Instant::now()),
                    Ok(Ok(_)) => continue,
                    Err(_) => break None,
                }
            };
            trickle.abort();
            closed
        }));
    }
    let mut during = healthy(addr, 100).await;
    let mut cut = Vec::new();
    for task in slow {
        cut.push(task.await.unwrap());
    }
    eprintln!("{}", said("before", &mut before));
    eprintln!("{}", said("during 200 slowloris clients", &mut during));
    let cut: Vec<Duration> = cut
        .iter()
        .map(|c| c.expect("every slowloris client is cut off") - began)
        .collect();
    let last = cut.iter().max().unwrap();
    eprintln!(
        "slowloris clients cut off by {:.2} s (timeout {timeout:?})",
        last.as_secs_f64()
    );
    // Cut off for their heads' time, not before: they were trickling.
    assert!(cut.iter().all(|c| *c >= timeout.mul_f64(0.9)), "{cut:?}");
    assert!(*last < timeout + Duration::from_secs(5), "{last:?}");
}

#[tokio::test]
async fn heads_and_bodies_over_their_bounds_are_refused_and_the_next_client_is_served() {
    let (addr, _stop) = start(Limits {
        max_header_bytes: 16 * 1024,
        max_body_bytes: 1024,
        ..Limits::default()
    })
    .await;
    let mut before = healthy(addr, 50).await;
    // A 100 KiB header: refused (431), or the connection closed, unserved.
    let mut s = TcpStream::connect(addr).await.unwrap();
    let huge = "a".repeat(100 * 1024);
    let _ = s
        .write_all(format!("POST /api/transfers HTTP/1.1\r\nHost: x\r\nX-Customer-Id: k\r\nX-Pad: {huge}\r\n\r\n").as_bytes())
        .await;
    let (closed, got) = until_closed(&mut s, Duration::from_secs(5)).await;
    let head = String::from_utf8_lossy(&got);
    assert!(closed.is_some(), "the connection was left open: {head}");
    assert!(
        head.is_empty() || head.starts_with("HTTP/1.1 431"),
        "a huge head was answered: {head}"
    );
    // A body declared over its bound: 413, before a byte of it is read.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(
        b"POST /api/transfers HTTP/1.1\r\nHost: x\r\nX-Customer-Id: k\r\nContent-Length: 10485760\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    let (_, got) = until_closed(&mut s, Duration::from_secs(5)).await;
    let head = String::from_utf8_lossy(&got);
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    let mut after = healthy(addr, 50).await;
    eprintln!("{}", said("before", &mut before));
    eprintln!("{}", said("after a huge head and a huge body", &mut after));
    let metrics = metrics(addr).await;
    assert!(
        metrics.contains(
            "rlbench_requests_total{replica=\"r0\",mode=\"local\",key_from=\"header\",decision=\"too_large\"} 1"
        ),
        "{metrics}"
    );
}

async fn metrics(addr: SocketAddr) -> String {
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let res = client
        .request(
            Request::builder()
                .uri(format!("http://{addr}/metrics"))
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await
        .unwrap();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&body).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_cap_are_closed_at_once_and_idle_ones_time_out() {
    let timeout = Duration::from_millis(1_000);
    let (addr, _stop) = start(Limits {
        max_connections: 20,
        header_read_timeout_ms: timeout.as_millis() as u64,
        ..Limits::default()
    })
    .await;
    let mut before = healthy(addr, 50).await;
    // A client holds every place with idle connections: half never send
    // a byte, half send one request and then keep the connection idle.
    let began = Instant::now();
    let mut held = Vec::new();
    for i in 0..20 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        if i % 2 == 1 {
            s.write_all(b"POST /api/transfers HTTP/1.1\r\nHost: x\r\nX-Customer-Id: idle\r\n\r\n")
                .await
                .unwrap();
            let mut buf = [0u8; 1024];
            let n = s.read(&mut buf).await.unwrap();
            assert!(buf[..n].starts_with(b"HTTP/1.1 "), "{:?}", &buf[..n]);
        }
        held.push(s);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    // One more: closed as soon as it is accepted.
    let mut over = TcpStream::connect(addr).await.unwrap();
    let (closed, _) = until_closed(&mut over, Duration::from_millis(500)).await;
    assert!(closed.is_some(), "a connection over the cap was kept");
    // The idle ones time out, and the places are the healthy clients'.
    let mut freed = Vec::new();
    for mut s in held {
        let (closed, _) = until_closed(&mut s, Duration::from_secs(10)).await;
        freed.push(closed.expect("an idle connection is closed") - began);
    }
    let mut after = healthy(addr, 50).await;
    eprintln!("{}", said("before", &mut before));
    eprintln!(
        "{}",
        said("after 20 idle connections held the cap", &mut after)
    );
    eprintln!(
        "idle connections closed by {:.2} s (timeout {timeout:?})",
        freed.iter().max().unwrap().as_secs_f64()
    );
    assert!(
        freed.iter().all(|f| *f >= timeout.mul_f64(0.9)),
        "{freed:?}"
    );
    let metrics = metrics(addr).await;
    assert!(
        metrics.contains("rlbench_connections_refused_total{replica=\"r0\"} 1"),
        "{metrics}"
    );
}
