//! A replica over real HTTP on a port-0 listener: status codes, the
//! rate-limit headers, `X-Replica` on every response, bad keys answered
//! with 400, and a graceful stop.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use reference_api::server::{self, AppState};
use reference_api::{Policy, ReplicaConfig};
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

struct Answer {
    status: StatusCode,
    headers: hyper::HeaderMap,
    body: String,
}

async fn start(
    config: ReplicaConfig,
) -> (SocketAddr, oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = AppState::new(config).await.unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        server::serve(listener, state, async {
            let _ = rx.await;
        })
        .await
        .unwrap();
    });
    (addr, tx, task)
}

async fn call(client: &HttpClient, method: Method, url: String, key: Option<&str>) -> Answer {
    call_as(client, method, url, key, None).await
}

/// As [`call`], with `Authorization: <authorization>`.
async fn call_as(
    client: &HttpClient,
    method: Method,
    url: String,
    key: Option<&str>,
    authorization: Option<&str>,
) -> Answer {
    let mut req = Request::builder().method(method).uri(url);
    if let Some(k) = key {
        req = req.header("X-Customer-Id", k);
    }
    if let Some(a) = authorization {
        req = req.header("Authorization", a);
    }
    let res = client
        .request(req.body(Full::new(Bytes::new())).unwrap())
        .await
        .unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

#[tokio::test]
async fn admits_to_the_limit_then_429_with_headers() {
    let policy = Policy::SlidingLog {
        limit: 3,
        window_us: 60_000_000,
    };
    let (addr, stop, task) = start(ReplicaConfig::new("r7", policy)).await;
    let c = client();
    let url = format!("http://{addr}/api/transfers");
    for remaining in [2, 1, 0] {
        let a = call(&c, Method::POST, url.clone(), Some("alice")).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.headers["content-type"], "application/json");
        assert_eq!(a.headers["x-replica"], "r7");
        assert_eq!(a.headers["ratelimit-policy"], "\"default\";q=3;w=60");
        let rl = a.headers["ratelimit"].to_str().unwrap();
        assert!(
            rl.starts_with(&format!("\"default\";r={remaining};t=")),
            "{rl}"
        );
    }
    let a = call(&c, Method::POST, url.clone(), Some("alice")).await;
    assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(a.body.contains("rate limited"), "{}", a.body);
    assert_eq!(a.headers["x-replica"], "r7");
    let retry: u64 = a.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((59..=60).contains(&retry), "retry-after {retry}");
    let rl = a.headers["ratelimit"].to_str().unwrap();
    assert!(rl.starts_with("\"default\";r=0;t="), "{rl}");
    // Another key has its own quota.
    let b = call(&c, Method::POST, url.clone(), Some("bob")).await;
    assert_eq!(b.status, StatusCode::OK);

    let m = call(&c, Method::GET, format!("http://{addr}/metrics"), None).await;
    assert!(
        m.body
            .contains("rlbench_requests_total{replica=\"r7\",mode=\"local\",key_from=\"header\",decision=\"admitted\"} 4"),
        "{}",
        m.body
    );
    assert!(m.body.contains("decision=\"rejected\"} 1"), "{}", m.body);

    stop.send(()).unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(5), task)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn each_header_style_sends_its_headers_and_only_those() {
    use reference_api::config::HeaderStyle;
    let policy = Policy::SlidingLog {
        limit: 2,
        window_us: 60_000_000,
    };
    let c = client();
    for style in [
        HeaderStyle::Ietf,
        HeaderStyle::XRateLimit,
        HeaderStyle::Both,
    ] {
        let mut config = ReplicaConfig::new("r0", policy.clone());
        config.ratelimit_headers = style;
        let (addr, stop, task) = start(config).await;
        let url = format!("http://{addr}/api/transfers");
        let mut answers = Vec::new();
        for _ in 0..3 {
            answers.push(call(&c, Method::POST, url.clone(), Some("alice")).await);
        }
        let statuses: Vec<_> = answers.iter().map(|a| a.status.as_u16()).collect();
        assert_eq!(statuses, [200, 200, 429], "{style:?}");
        for (a, remaining) in answers.iter().zip(["1", "0", "0"]) {
            let h = &a.headers;
            assert_eq!(h.contains_key("ratelimit"), style.ietf(), "{style:?}");
            assert_eq!(
                h.contains_key("ratelimit-policy"),
                style.ietf(),
                "{style:?}"
            );
            if style.x_ratelimit() {
                assert_eq!(h["x-ratelimit-limit"], "2", "{style:?}");
                assert_eq!(h["x-ratelimit-remaining"], remaining, "{style:?}");
                // Delta seconds until the oldest admit leaves the 60 s window.
                let reset: u64 = h["x-ratelimit-reset"].to_str().unwrap().parse().unwrap();
                assert!((59..=60).contains(&reset), "{style:?}: reset {reset}");
            } else {
                assert!(!h.contains_key("x-ratelimit-limit"), "{style:?}");
            }
        }
        assert!(answers[2].headers.contains_key("retry-after"), "{style:?}");
        stop.send(()).unwrap();
        task.await.unwrap();
    }
}

#[tokio::test]
async fn bad_keys_get_400_and_every_response_names_the_replica() {
    let policy = Policy::FixedWindow {
        limit: 1,
        window_us: 1_000_000,
    };
    let mut config = ReplicaConfig::new("r0", policy);
    config.max_key_len = 8;
    let (addr, _stop, _task) = start(config).await;
    let c = client();
    let url = format!("http://{addr}/api/transfers");
    let missing = call(&c, Method::POST, url.clone(), None).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert!(
        missing.body.contains("missing X-Customer-Id header"),
        "{}",
        missing.body
    );
    let long = call(&c, Method::POST, url.clone(), Some("123456789")).await;
    assert_eq!(long.status, StatusCode::BAD_REQUEST);
    assert!(long.body.contains("longer than 8 bytes"), "{}", long.body);
    let empty = call(&c, Method::POST, url.clone(), Some("")).await;
    assert_eq!(empty.status, StatusCode::BAD_REQUEST);
    for a in [&missing, &long, &empty] {
        assert_eq!(a.headers["x-replica"], "r0");
    }
    let health = call(&c, Method::GET, format!("http://{addr}/healthz"), None).await;
    assert_eq!(health.status, StatusCode::OK);
    assert_eq!(health.headers["x-replica"], "r0");
    let nothing = call(&c, Method::GET, format!("http://{addr}/nope"), None).await;
    assert_eq!(nothing.status, StatusCode::NOT_FOUND);
    assert_eq!(nothing.headers["x-replica"], "r0");
}

#[tokio::test]
async fn a_custom_key_header_is_honoured() {
    let policy = Policy::SlidingLog {
        limit: 1,
        window_us: 60_000_000,
    };
    let mut config = ReplicaConfig::new("r1", policy);
    config.key_header = "X-Api-Key".into();
    let (addr, _stop, _task) = start(config).await;
    let c = client();
    let url = format!("http://{addr}/api/transfers");
    // The default header is not the key any more.
    let a = call(&c, Method::POST, url.clone(), Some("alice")).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(a.body.contains("missing X-Api-Key header"));
    let req = |k: &str| {
        Request::post(url.clone())
            .header("X-Api-Key", k)
            .body(Full::new(Bytes::new()))
            .unwrap()
    };
    assert_eq!(c.request(req("k")).await.unwrap().status(), StatusCode::OK);
    assert_eq!(
        c.request(req("k")).await.unwrap().status(),
        StatusCode::TOO_MANY_REQUESTS
    );
}

#[tokio::test]
async fn the_clock_can_be_stepped_only_when_the_admin_endpoint_is_on_and_with_its_token() {
    let policy = Policy::SlidingLog {
        limit: 1,
        window_us: 10_000_000,
    };
    // Off by default: no such route.
    let (addr, stop, task) = start(ReplicaConfig::new("r0", policy.clone())).await;
    let c = client();
    let url = format!("http://{addr}/admin/clock-skew?us=20000000");
    assert_eq!(
        call(&c, Method::PUT, url, None).await.status,
        StatusCode::NOT_FOUND
    );
    let _ = stop.send(());
    task.await.unwrap();

    // On without a token: refused at start, never open.
    let mut config = ReplicaConfig::new("r0", policy);
    config.admin = true;
    let refused = AppState::new(config.clone()).await.err().unwrap();
    assert!(refused.to_string().contains("admin_token"), "{refused}");

    config.admin_token = Some("0123456789abcdef0123456789abcdef".into());
    let (addr, stop, task) = start(config).await;
    let bearer = Some("Bearer 0123456789abcdef0123456789abcdef");
    let transfer = format!("http://{addr}/api/transfers");
    assert_eq!(
        call(&c, Method::POST, transfer.clone(), Some("k"))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        call(&c, Method::POST, transfer.clone(), Some("k"))
            .await
            .status,
        StatusCode::TOO_MANY_REQUESTS
    );
    // Without the token, or with any other, nothing moves: 401.
    let step = format!("http://{addr}/admin/clock-skew?us=20000000");
    for wrong in [
        None,
        Some("Bearer "),
        Some("Bearer 0123456789abcdef0123456789abcdee"),
        Some("Bearer 0123456789abcdef0123456789abcdef0"),
        Some("Bearer 0123456789abcdef"),
        Some("0123456789abcdef0123456789abcdef"),
        Some("Basic 0123456789abcdef0123456789abcdef"),
    ] {
        let answer = call_as(&c, Method::PUT, step.clone(), None, wrong).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{wrong:?}");
        assert_eq!(answer.headers["www-authenticate"], "Bearer");
    }
    assert_eq!(
        call(&c, Method::POST, transfer.clone(), Some("k"))
            .await
            .status,
        StatusCode::TOO_MANY_REQUESTS,
        "a refused step left the clock alone"
    );
    // Twenty seconds ahead, the one admit of the 10 s window has expired.
    let step = call_as(&c, Method::PUT, step, None, bearer).await;
    assert_eq!(step.status, StatusCode::OK, "{}", step.body);
    assert_eq!(
        call(&c, Method::POST, transfer, Some("k")).await.status,
        StatusCode::OK
    );
    let bad = call_as(
        &c,
        Method::PUT,
        format!("http://{addr}/admin/clock-skew?us=soon"),
        None,
        bearer,
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let _ = stop.send(());
    task.await.unwrap();
}

/// A replica keyed on a verified JWT claim: the claim is the key whatever
/// X-Customer-Id says (a forged header moves nothing), and a request
/// without a valid token is a 401 and no decision — counted apart.
#[tokio::test]
async fn keyed_on_a_jwt_claim_a_forged_header_moves_nothing_and_bad_tokens_get_401() {
    use reference_api::identity::{JwtAlg, KeyFrom};
    const SECRET: &str = "the replica's verifying secret";
    let mut config = ReplicaConfig::new(
        "r1",
        Policy::SlidingLog {
            limit: 2,
            window_us: 60_000_000,
        },
    );
    config.key_from = KeyFrom::JwtClaim {
        claim: "sub".into(),
        alg: JwtAlg::HS256,
        secret: Some(SECRET.into()),
        public_key: None,
    };
    let (addr, stop, task) = start(config).await;
    let c = client();
    let url = format!("http://{addr}/api/transfers");
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 300;
    let mint = |sub: &str, secret: &str| {
        let claims = serde_json::json!({ "sub": sub, "exp": exp });
        let token = jsonwebtoken::encode(
            &jsonwebtoken::Header::default(),
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap();
        format!("Bearer {token}")
    };
    let alice = mint("alice", SECRET);
    // Two admits for alice, each under another forged header key...
    for forged in ["f1", "f2"] {
        let a = call_as(&c, Method::POST, url.clone(), Some(forged), Some(&alice)).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    }
    // ...and the third is limited though its header key is fresh.
    let a = call_as(&c, Method::POST, url.clone(), Some("f3"), Some(&alice)).await;
    assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS);
    // Another principal has its own quota.
    let bob = mint("bob", SECRET);
    let b = call_as(&c, Method::POST, url.clone(), Some("f3"), Some(&bob)).await;
    assert_eq!(b.status, StatusCode::OK);
    // No token, a token signed with another secret, a mangled one: 401.
    let forged = mint("alice", "not the replica's secret");
    for auth in [None, Some(forged.as_str()), Some("Bearer x.y.z")] {
        let a = call_as(&c, Method::POST, url.clone(), Some("f9"), auth).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{auth:?}: {}", a.body);
    }
    let m = call(&c, Method::GET, format!("http://{addr}/metrics"), None).await;
    assert!(
        m.body
            .contains("key_from=\"jwt_claim\",decision=\"unauthorized\"} 3"),
        "{}",
        m.body
    );
    assert!(m.body.contains("decision=\"admitted\"} 3"), "{}", m.body);
    let _ = stop.send(());
    task.await.unwrap();
}

/// A replica that trusts X-Forwarded-For keys on its first address, so a
/// client that writes a new one each time is never limited.
#[tokio::test]
async fn trusting_forwarded_for_lets_a_client_that_forges_it_through() {
    let mut config = ReplicaConfig::new(
        "r2",
        Policy::SlidingLog {
            limit: 1,
            window_us: 60_000_000,
        },
    );
    config.key_from = reference_api::identity::KeyFrom::ForwardedFor;
    let (addr, stop, task) = start(config).await;
    let c = client();
    let url = format!("http://{addr}/api/transfers");
    for i in 0..5 {
        let req = Request::builder()
            .method(Method::POST)
            .uri(url.clone())
            .header("X-Forwarded-For", format!("10.9.0.{i}"))
            .body(Full::new(Bytes::new()))
            .unwrap();
        assert_eq!(c.request(req).await.unwrap().status(), StatusCode::OK);
    }
    // Without the header, the peer's address: limited at its second.
    assert_eq!(
        call(&c, Method::POST, url.clone(), None).await.status,
        StatusCode::OK
    );
    assert_eq!(
        call(&c, Method::POST, url.clone(), None).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    let _ = stop.send(());
    task.await.unwrap();
}
