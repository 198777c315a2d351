//! The HTTP surface of a replica: `POST /api/transfers` (limited),
//! `GET /healthz`, `GET /metrics`, and when enabled `PUT
//! /admin/clock-skew` behind a bearer token. It takes an already-bound
//! listener and a shutdown future, so tests bind port 0 and stop it when
//! they like.

use crate::clock::Clock;
use crate::config::{Backend, ReplicaConfig};
use crate::headers;
use crate::identity::{Identity, Refused};
use crate::limiter::redis_backed::{ConnectError, RedisLimiter};
use crate::limiter::{self, Decision, LocalLimiter};
use crate::metrics::{self, Decisions, Sample};
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::net::TcpListener;

pub const REPLICA_HEADER: &str = "x-replica";
/// The samples `/metrics` names the decisions taken without Redis (timeout
/// or error), by the decision `on_redis_error` made.
pub const REDIS_ERRORS: &str = "rlbench_redis_errors_total";

const JSON: [(axum::http::header::HeaderName, &str); 1] =
    [(axum::http::header::CONTENT_TYPE, "application/json")];

pub struct AppState {
    config: ReplicaConfig,
    key_header: HeaderName,
    replica_header: HeaderValue,
    policy_header: HeaderValue,
    /// `X-RateLimit-Limit`, when the config asks for those headers.
    limit_header: Option<HeaderValue>,
    limiter: Limiter,
    clock: Clock,
    /// What `/api/transfers` answered, by decision (401s: no valid token
    /// with `key_from = jwt_claim`; 413s: a declared body over
    /// `max_body_bytes`).
    decisions: Decisions,
    identity: Identity,
    /// What the connection limits turned away (`listen.rs`).
    turned: Arc<crate::listen::Turned>,
}

/// Where decisions are made: this process, or Redis shared by all replicas.
enum Limiter {
    Local(Box<dyn LocalLimiter>),
    Redis(Box<RedisLimiter>),
}

impl Limiter {
    async fn decide(&self, key: &str, now: i64) -> Decision {
        match self {
            Limiter::Local(l) => l.decide(key, now),
            Limiter::Redis(r) => r.decide(key, now).await,
        }
    }
}

/// Why a replica's state could not be set up from its config.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("invalid key header name {0:?}")]
    KeyHeader(String),
    #[error("invalid replica name {0:?}")]
    ReplicaName(String),
    #[error("policy does not fit in a header")]
    PolicyHeader,
    #[error("admin needs an admin_token: the endpoint is never open")]
    NoAdminToken,
    #[error("key_from: {0}")]
    KeyFrom(crate::identity::KeyFromError),
    #[error(transparent)]
    Redis(#[from] ConnectError),
}

impl AppState {
    /// Checks the parts of the config that become HTTP header names/values
    /// and, for a Redis backend, connects.
    pub async fn new(config: ReplicaConfig) -> Result<Arc<Self>, SetupError> {
        let key_header = HeaderName::try_from(config.key_header.as_str())
            .map_err(|_| SetupError::KeyHeader(config.key_header.clone()))?;
        let replica_header = HeaderValue::try_from(config.replica.as_str())
            .map_err(|_| SetupError::ReplicaName(config.replica.clone()))?;
        let policy_header = HeaderValue::try_from(headers::ratelimit_policy(&config.policy))
            .map_err(|_| SetupError::PolicyHeader)?;
        let limit_header = config
            .ratelimit_headers
            .x_ratelimit()
            .then(|| HeaderValue::try_from(headers::x_ratelimit_limit(&config.policy)))
            .transpose()
            .map_err(|_| SetupError::PolicyHeader)?;
        if config.admin && config.admin_token.as_deref().unwrap_or("").is_empty() {
            return Err(SetupError::NoAdminToken);
        }
        let limiter = match &config.backend {
            Backend::Local => Limiter::Local(limiter::local(&config.policy, config.max_keys)),
            Backend::Redis(backend) => {
                let redis =
                    RedisLimiter::connect(backend.clone(), config.policy.clone(), &config.replica)
                        .await?
                        .with_max_keys(config.max_keys);
                Limiter::Redis(Box::new(redis))
            }
        };
        let identity = Identity::new(&config.key_from).map_err(SetupError::KeyFrom)?;
        Ok(Arc::new(AppState {
            identity,
            limiter,
            clock: Clock::new(config.clock_skew_us, config.clock_rate_ppm),
            key_header,
            replica_header,
            policy_header,
            limit_header,
            config,
            decisions: Decisions::default(),
            turned: Default::default(),
        }))
    }
}

pub fn router(state: Arc<AppState>) -> Router {
    let mut router = Router::new()
        .route("/api/transfers", post(transfer))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics));
    if state.config.admin {
        router = router.route("/admin/clock-skew", axum::routing::put(set_clock_skew));
    }
    router
        .layer(middleware::map_response_with_state(
            state.clone(),
            tag_replica,
        ))
        .with_state(state)
}

/// Serves until `shutdown` resolves, then drains in-flight requests; each
/// client within the config's limits (`listen.rs`).
pub async fn serve(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = state.config.limits.clone();
    let turned = state.turned.clone();
    crate::listen::serve(listener, router(state), &limits, turned, shutdown).await
}

async fn tag_replica(State(app): State<Arc<AppState>>, mut res: Response) -> Response {
    res.headers_mut()
        .insert(REPLICA_HEADER, app.replica_header.clone());
    res
}

fn bad_request(app: &AppState, why: String) -> Response {
    app.decisions.bad_request.fetch_add(1, Ordering::Relaxed);
    (StatusCode::BAD_REQUEST, why + "\n").into_response()
}

/// Takes the request whole: the `HeaderMap` extractor would copy every
/// header to read one.
async fn transfer(State(app): State<Arc<AppState>>, req: Request) -> Response {
    let declared = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > app.config.limits.max_body_bytes) {
        app.decisions.too_large.fetch_add(1, Ordering::Relaxed);
        let max = app.config.limits.max_body_bytes;
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("a body of at most {max} bytes\n"),
        )
            .into_response();
    }
    let peer = req
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0);
    match app.identity.key(req.headers(), peer) {
        None => {}
        Some(Ok(key)) => return decide(&app, &key).await,
        Some(Err(Refused::BadRequest(why))) => return bad_request(&app, why),
        Some(Err(Refused::Unauthorized(why))) => {
            app.decisions.unauthorized.fetch_add(1, Ordering::Relaxed);
            return (StatusCode::UNAUTHORIZED, why + "\n").into_response();
        }
    }
    let name = &app.config.key_header;
    let Some(raw) = req.headers().get(&app.key_header) else {
        return bad_request(&app, format!("missing {name} header"));
    };
    let key = match raw.to_str() {
        Ok("") => return bad_request(&app, format!("empty {name} header")),
        Ok(k) if k.len() > app.config.max_key_len => {
            let max = app.config.max_key_len;
            return bad_request(&app, format!("{name} header longer than {max} bytes"));
        }
        Ok(k) => k,
        Err(_) => return bad_request(&app, format!("{name} header is not visible ASCII")),
    };
    decide(&app, key).await
}

/// The limiter's decision for `key`, as the answer says it.
async fn decide(app: &AppState, key: &str) -> Response {
    if key.len() > app.config.max_key_len {
        let max = app.config.max_key_len;
        return bad_request(app, format!("key longer than {max} bytes"));
    }
    let decision = app.limiter.decide(key, app.clock.now_us()).await;
    let mut res = if decision.allowed {
        if app.config.lossy_metrics {
            // The racy count `lossy_metrics` asks for: read, work, write.
            let seen = app.decisions.admitted.load(Ordering::Relaxed);
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            app.decisions.admitted.store(seen + 1, Ordering::Relaxed);
        } else {
            app.decisions.admitted.fetch_add(1, Ordering::Relaxed);
        }
        (StatusCode::OK, JSON, "{\"status\":\"accepted\"}\n").into_response()
    } else {
        app.decisions.rejected.fetch_add(1, Ordering::Relaxed);
        let body = "{\"error\":\"rate limited\"}\n";
        let mut res = (StatusCode::TOO_MANY_REQUESTS, JSON, body).into_response();
        if let Ok(v) = HeaderValue::try_from(headers::retry_after(&decision)) {
            res.headers_mut().insert("retry-after", v);
        }
        res
    };
    let h = res.headers_mut();
    if app.config.ratelimit_headers.ietf() {
        h.insert("ratelimit-policy", app.policy_header.clone());
        if let Ok(v) = HeaderValue::try_from(headers::ratelimit(&decision)) {
            h.insert("ratelimit", v);
        }
    }
    if let Some(limit) = &app.limit_header {
        h.insert("x-ratelimit-limit", limit.clone());
        for (name, value) in headers::x_ratelimit(&decision) {
            if let Ok(v) = HeaderValue::try_from(value) {
                h.insert(name, v);
            }
        }
    }
    res
}

async fn metrics(State(app): State<Arc<AppState>>) -> Response {
    let text = metrics::render(&app.samples());
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

impl AppState {
    /// This replica's account of itself now: what `/metrics` shows and the
    /// OTLP exporter sends.
    pub fn samples(&self) -> Vec<Sample> {
        let replica = || ("replica", self.config.replica.clone());
        let mode = || ("mode", self.config.backend.mode_name().to_string());
        let mut out: Vec<Sample> = self
            .decisions
            .each()
            .into_iter()
            .map(|(decision, value)| Sample {
                family: metrics::REQUESTS,
                labels: vec![
                    replica(),
                    mode(),
                    ("key_from", self.config.key_from.name().to_string()),
                    ("decision", decision.to_string()),
                ],
                value,
            })
            .collect();
        let one = |family, labels: Vec<(&'static str, String)>, value| Sample {
            family,
            labels,
            value,
        };
        match &self.limiter {
            Limiter::Local(l) => {
                out.push(one(
                    metrics::LIVE_KEYS,
                    vec![replica(), mode()],
                    l.live_keys() as u64,
                ));
                out.push(one(
                    metrics::KEYS_REFUSED,
                    vec![replica(), mode()],
                    l.refused_keys(),
                ));
            }
            Limiter::Redis(redis) => {
                let f = redis.fallbacks();
                for (decision, value) in
                    [("admitted", f.failed_open), ("rejected", f.failed_closed)]
                {
                    let labels = vec![replica(), mode(), ("decision", decision.to_string())];
                    out.push(one(metrics::REDIS_ERRORS, labels, value));
                }
                if let Some(calls) = redis.lease_calls() {
                    for (outcome, value) in [("granted", calls.granted), ("denied", calls.denied)] {
                        let labels = vec![replica(), mode(), ("outcome", outcome.to_string())];
                        out.push(one(metrics::LEASE_CALLS, labels, value));
                    }
                }
            }
        }
        out.push(one(
            metrics::CONNECTIONS_REFUSED,
            vec![replica()],
            self.turned.connections.load(Ordering::Relaxed),
        ));
        out
    }
}

/// `PUT /admin/clock-skew?us=N`: sets this replica's clock skew (µs), for
/// loopback peers with the admin token only, and only when the config
/// enables it.
async fn set_clock_skew(
    State(app): State<Arc<AppState>>,
    axum::extract::ConnectInfo(peer): axum::extract::ConnectInfo<std::net::SocketAddr>,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
    headers: axum::http::HeaderMap,
) -> Response {
    let expected = app.config.admin_token.as_deref().unwrap_or("");
    let given = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
        .unwrap_or(b"");
    if expected.is_empty() || !same_secret(given, expected.as_bytes()) {
        let mut res = (StatusCode::UNAUTHORIZED, "admin token required\n").into_response();
        res.headers_mut().insert(
            axum::http::header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer"),
        );
        return res;
    }
    if !peer.ip().is_loopback() {
        return (axum::http::StatusCode::FORBIDDEN, "loopback only\n").into_response();
    }
    let skew = query
        .as_deref()
        .and_then(|q| q.strip_prefix("us="))
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|v| v.unsigned_abs() <= 86_400_000_000);
    match skew {
        Some(us) => {
            app.clock.set_skew_us(us);
            format!("clock_skew_us {us}\n").into_response()
        }
        None => (
            axum::http::StatusCode::BAD_REQUEST,
            "expected ?us=<microseconds, at most a day either way>\n",
        )
            .into_response(),
    }
}

/// Whether `given` is the secret, in time that depends on the lengths
/// only (no exit at the first differing byte, so timing tells a caller
/// nothing about how much of a guess was right).
fn same_secret(given: &[u8], secret: &[u8]) -> bool {
    let mut differ = u8::from(given.len() != secret.len());
    for (i, s) in secret.iter().enumerate() {
        differ |= s ^ given.get(i).copied().unwrap_or(!s);
    }
    std::hint::black_box(differ) == 0
}

#[cfg(test)]
mod tests {
    use super::same_secret;

    #[test]
    fn only_the_whole_secret_is_the_secret() {
        assert!(same_secret(b"0123abcd", b"0123abcd"));
        for wrong in [&b""[..], b"0123abc", b"0123abcd0", b"0123abce", b"x123abcd"] {
            assert!(!same_secret(wrong, b"0123abcd"), "{wrong:?}");
        }
    }
}
