//! The gRPC rate-limit service target (`[target] kind = "envoy_rls"`),
//! judged against a real implementation nobody here wrote: Kuadrant's
//! `limitador` library (crates.io), served over Envoy's
//! `RateLimitService/ShouldRateLimit` by tonic in a process of its own —
//! this test binary started again as the server (`rls_server`, which
//! serves only when its environment asks). The server's messages are
//! written here, apart from rlbench's (`src/load/rls.rs`), so the two
//! meet only on the wire. Limitador counts a fixed window anchored at a
//! key's first hit; each server decides one call at a time. In memory, one
//! process is exact twice in a row and three behind round-robin are
//! caught as a fake global limit. (Not on Redis: limitador's
//! `redis_storage` feature does not build without `disk_storage`, which
//! builds RocksDB from C++ source.)

use crate::common::{arm, free_port, run_scenario, summary, text};
use crate::external::{spawn_group, wait_listening, Group};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// What the server reads from its environment: `PORT;STORAGE` where the
/// storage is `memory` (the one this build of limitador has).
const ENV: &str = "RLBENCH_TEST_LIMITADOR_RLS";

/// The limit the servers enforce: 10 per 1 s per `customer_id`, in
/// domain `rlbench`.
const LIMIT: u64 = 10;

mod wire {
    //! Envoy's rate-limit messages, as the server reads and writes them.

    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct RateLimitRequest {
        #[prost(string, tag = "1")]
        pub(super) domain: String,
        #[prost(message, repeated, tag = "2")]
        pub(super) descriptors: Vec<Descriptor>,
        #[prost(uint32, tag = "3")]
        pub(super) hits_addend: u32,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct Descriptor {
        #[prost(message, repeated, tag = "1")]
        pub(super) entries: Vec<Entry>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct Entry {
        #[prost(string, tag = "1")]
        pub(super) key: String,
        #[prost(string, tag = "2")]
        pub(super) value: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct RateLimitResponse {
        #[prost(int32, tag = "1")]
        pub(super) overall_code: i32,
    }
}

/// Limitador behind `ShouldRateLimit`.
#[derive(Clone)]
struct Rls {
    limiter: std::sync::Arc<limitador::RateLimiter>,
}

impl Rls {
    fn decide(&self, request: wire::RateLimitRequest) -> Result<wire::RateLimitResponse, String> {
        let namespace = limitador::limit::Namespace::from(request.domain.as_str());
        let descriptors: Vec<HashMap<String, String>> = request
            .descriptors
            .into_iter()
            .map(|d| d.entries.into_iter().map(|e| (e.key, e.value)).collect())
            .collect();
        let mut ctx = limitador::limit::Context::default();
        ctx.list_binding("descriptors".to_string(), descriptors);
        let checked = self
            .limiter
            .check_rate_limited_and_update(&namespace, &ctx, u64::from(request.hits_addend.max(1)))
            .map_err(|e| e.to_string())?;
        Ok(wire::RateLimitResponse {
            overall_code: if checked.limited { 2 } else { 1 },
        })
    }
}

/// The service as tonic's generated code would route it, by hand.
#[derive(Clone)]
struct RlsService(Rls);

const METHOD: &str = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";

impl<B> tonic::codegen::Service<tonic::codegen::http::Request<B>> for RlsService
where
    B: tonic::codegen::Body + Send + 'static,
    B::Error: Into<tonic::codegen::StdError> + Send + 'static,
{
    type Response = tonic::codegen::http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future = tonic::codegen::BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: tonic::codegen::http::Request<B>) -> Self::Future {
        struct Unary(Rls);
        impl tonic::server::UnaryService<wire::RateLimitRequest> for Unary {
            type Response = wire::RateLimitResponse;
            type Future = tonic::codegen::BoxFuture<tonic::Response<Self::Response>, tonic::Status>;
            fn call(&mut self, request: tonic::Request<wire::RateLimitRequest>) -> Self::Future {
                let decided = self
                    .0
                    .decide(request.into_inner())
                    .map(tonic::Response::new)
                    .map_err(tonic::Status::unavailable);
                Box::pin(async move { decided })
            }
        }
        let rls = self.0.clone();
        if req.uri().path() != METHOD {
            return Box::pin(async move {
                Ok(tonic::Status::unimplemented("no such method").into_http())
            });
        }
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(tonic::codec::ProstCodec::default());
            Ok(grpc.unary(Unary(rls), req).await)
        })
    }
}

impl tonic::server::NamedService for RlsService {
    const NAME: &'static str = "envoy.service.ratelimit.v3.RateLimitService";
}

/// The server: started by [`start`] as this test binary with [`ENV`] set;
/// without it (a plain `--ignored` run) it returns at once.
#[test]
#[ignore = "the rate-limit server the envoy_rls tests start in a process of its own"]
fn rls_server() {
    let Ok(config) = std::env::var(ENV) else {
        return;
    };
    let (port, storage) = config.split_once(';').expect("PORT;STORAGE");
    assert_eq!(storage, "memory", "{ENV}: the storage");
    let limiter = limitador::RateLimiter::new(10_000);
    limiter.add_limit(limitador::limit::Limit::new(
        "rlbench",
        LIMIT,
        1,
        Vec::<limitador::limit::Predicate>::new(),
        vec![limitador::limit::Expression::parse("descriptors[0].customer_id").unwrap()],
    ));
    let service = RlsService(Rls {
        limiter: std::sync::Arc::new(limiter),
    });
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    // One thread: each decision whole before the next.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve(addr),
        )
        .unwrap();
}

/// A server on a free port, `storage` as [`ENV`] says.
fn start(storage: &str) -> (u16, Group) {
    let port = free_port();
    let mut group = spawn_group(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "envoy_rls::rls_server",
                "--ignored",
                "--nocapture",
            ])
            .env(ENV, format!("{port};{storage}")),
    );
    wait_listening(port, &mut group.0);
    (port, group)
}

fn scenario(ports: &[u16], expect: &str) -> String {
    let urls: Vec<String> = ports
        .iter()
        .map(|p| format!("\"http://127.0.0.1:{p}\""))
        .collect();
    format!(
        r#"name = "limitador"
duration = "4s"
seed = 19
[target]
kind = "envoy_rls"
urls = [{}]
domain = "rlbench"
descriptor = "customer_id"
[policy]
algorithm = "fixed_window"
limit = {LIMIT}
window = "1s"
[load]
rate = 200
keys = 4
timeout = "1s"
[[arms]]
name = "rls"
[arms.expect]
{expect}
"#,
        urls.join(", ")
    )
}

const EXACT: &str = "max_definite_violations = 0\nmax_false_reject_ratio = 0\nmax_error_ratio = 0";

/// Runs the scenario on `ports`: its arm's summary.
fn judged(dir: &Path, ports: &[u16], expect: &str, code: i32) -> serde_json::Value {
    let (out, _) = run_scenario(dir, &scenario(ports, expect), &[], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{stdout}{}",
        text(&out.stderr)
    );
    arm(&summary(&dir.join("out")), "rls").clone()
}

fn exact(a: &serde_json::Value) {
    assert_eq!(a["correctness"]["definite_violations"], 0, "{a}");
    assert_eq!(a["correctness"]["false_rejects"], 0, "{a}");
    assert!(
        a["requests"]["rejected"].as_u64().unwrap() > 0,
        "limited nothing: {a}"
    );
    assert!(a["requests"]["admitted"].as_u64().unwrap() > 0, "{a}");
    // Its answers carry no HTTP rate-limit headers, and none are asked of it.
    assert!(
        a["headers"]["findings"]
            .as_array()
            .map_or(true, |f| f.is_empty()),
        "{a}"
    );
    assert_eq!(
        a["keys"]["key_in"],
        "the rate-limit descriptor customer_id (domain rlbench) of a ShouldRateLimit call"
    );
}

#[test]
fn limitador_in_memory_is_exact_twice_on_one_process_and_caught_on_three() {
    let (one, _server) = start("memory");
    for _ in 0..2 {
        let dir = tempfile::tempdir().unwrap();
        exact(&judged(dir.path(), &[one], EXACT, 0));
    }
    let (two, _b) = start("memory");
    let (three, _c) = start("memory");
    let dir = tempfile::tempdir().unwrap();
    let a = judged(
        dir.path(),
        &[one, two, three],
        "min_definite_violations = 1",
        0,
    );
    assert!(
        a["correctness"]["over_admission_ratio"]
            .as_f64()
            .unwrap_or(f64::INFINITY)
            > 2.0,
        "{a}"
    );
    assert_eq!(a["correctness"]["false_rejects"], 0, "{a}");
}

#[test]
fn a_service_that_errs_or_says_unknown_decides_nothing() {
    // No server at all: refused before any load (exit 3).
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (out, _) = run_scenario(
        dir.path(),
        &scenario(&[port], "max_error_ratio = 0"),
        &[],
        &[],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert!(
        stderr.contains("cannot reach http://127.0.0.1:"),
        "{stderr}"
    );
    // A domain with no limits in limitador: every call OK (nothing
    // limited), judged as admits of a limiter that never limits.
    let (one, _server) = start("memory");
    let dir = tempfile::tempdir().unwrap();
    let other = scenario(&[one], "min_definite_violations = 1")
        .replace("domain = \"rlbench\"", "domain = \"unlimited\"");
    let (out, _) = run_scenario(dir.path(), &other, &[], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let a = arm(&summary(&dir.path().join("out")), "rls").clone();
    assert_eq!(a["requests"]["rejected"], 0, "{a}");
}
