//! The coordinator as both sides use it: a connection made within a bound
//! (its URL's password never shown), its clock read into an [`Anchor`],
//! and the errors a distributed run can meet, each with its exit.

use super::time_line::Anchor;
use crate::error::{Exit, Kind};
/// A connection to the coordinator that reconnects by itself after the
/// coordinator restarts (the request that found it gone fails; the next
/// ones reconnect).
pub(crate) type Conn = redis::aio::ConnectionManager;
use std::time::Duration;
use tokio::time::Instant;

/// How long a connection, or one command, may take before the coordinator
/// is called unreachable.
const CONNECT_WITHIN: Duration = Duration::from_secs(5);
/// Round trips per anchor: the one with the least RTT is kept.
const TRIPS: usize = 5;

#[derive(Debug, thiserror::Error)]
pub(crate) enum DistributedError {
    #[error("coordinator {url}: {why}")]
    Unreachable { url: String, why: String },
    /// No client for the coordinator's URL (its password hidden in `url`).
    #[error("coordinator {url}: {source}")]
    Client { url: String, source: ClientError },
    #[error("{0}")]
    Agents(String),
    /// Someone without the token wrote to the coordinator (or it lost
    /// what it held) so that the run cannot go on.
    #[error("the coordinator: {0}")]
    Coordinator(String),
    #[error("agent {agent}: {message}")]
    AgentFailed { agent: String, message: String },
}

impl Kind for DistributedError {
    fn exit(&self) -> Exit {
        // The coordinator, an agent or the agents' number: the machines.
        Exit::Environment
    }
}

/// A coordinator's URL with its password hidden.
pub(crate) fn redacted(url: &str) -> String {
    reference_api::redis_url::redact(url)
}

/// The environment variable naming the certificate authority (PEM) a
/// `rediss://` coordinator's certificate is checked against, when not
/// the system's.
pub(crate) const CA_ENV: &str = "RLBENCH_COORDINATOR_CA";

/// Why no client could be made for a coordinator's URL.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClientError {
    /// The authority [`CA_ENV`] names could not be read.
    #[error("{CA_ENV}={}: {source}", path.display())]
    Authority {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("with the authority of {CA_ENV}: {0}")]
    Tls(redis::RedisError),
    #[error("not a Redis URL")]
    NotRedisUrl,
}

/// The client for `url`: `rediss://` through rustls, against the system's
/// roots or the authority [`CA_ENV`] names.
fn client(url: &str) -> Result<redis::Client, ClientError> {
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        // Another may have been installed first: that one serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    let ca = std::env::var_os(CA_ENV).filter(|v| !v.is_empty());
    match (url.starts_with("rediss://"), ca) {
        (true, Some(path)) => {
            let pem = std::fs::read(&path).map_err(|source| ClientError::Authority {
                path: path.into(),
                source,
            })?;
            redis::Client::build_with_tls(
                url,
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem),
                },
            )
            .map_err(ClientError::Tls)
        }
        _ => redis::Client::open(url).map_err(|_| ClientError::NotRedisUrl),
    }
}

/// A connection to the coordinator, or why not (within a bound).
pub(crate) async fn connect(url: &str) -> Result<Conn, DistributedError> {
    let unreachable = |why: String| DistributedError::Unreachable {
        url: redacted(url),
        why,
    };
    let client = client(url).map_err(|source| DistributedError::Client {
        url: redacted(url),
        source,
    })?;
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(CONNECT_WITHIN))
        .set_response_timeout(Some(CONNECT_WITHIN))
        .set_number_of_retries(2);
    let mut conn = client
        .get_connection_manager_with_config(config)
        .await
        .map_err(|e| unreachable(format!("cannot connect: {e}")))?;
    let _: String = redis::cmd("PING")
        .query_async(&mut conn)
        .await
        .map_err(|e| unreachable(format!("does not answer PING: {e}")))?;
    Ok(conn)
}

/// A command's failure, as the coordinator's.
pub(crate) fn failed(url: &str, what: &str, e: redis::RedisError) -> DistributedError {
    DistributedError::Unreachable {
        url: redacted(url),
        why: format!("{what}: {e}"),
    }
}

/// The coordinator's clock (µs since the Unix epoch).
pub(crate) async fn time(conn: &mut Conn) -> redis::RedisResult<i64> {
    let (s, us): (i64, i64) = redis::cmd("TIME").query_async(conn).await?;
    Ok(s * 1_000_000 + us)
}

/// Where an anchor's coordinator reading comes from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ClockSource {
    /// Redis `TIME`: the coordinator's own clock (this machine's wall
    /// clock, shifted by `wall_shift_us` in tests, is only shown beside it).
    Coordinator { wall_shift_us: i64 },
    /// This machine's wall clock, shifted by so many µs, taken to be the
    /// coordinator's (tests only: what trusting unsynchronised clocks costs).
    OwnWall { shift_us: i64 },
}

/// This machine's wall clock (µs since the Unix epoch).
fn wall_us() -> i64 {
    reference_api::clock::wall_now_us()
}

/// One anchor: the tightest of a few round trips, local times in µs from
/// `origin`.
pub(crate) async fn anchor(
    conn: &mut Conn,
    origin: Instant,
    source: ClockSource,
) -> redis::RedisResult<Anchor> {
    let local = |origin: Instant| -> i64 {
        let now = Instant::now();
        if now >= origin {
            (now - origin).as_micros() as i64
        } else {
            -((origin - now).as_micros() as i64)
        }
    };
    let mut trips = Vec::with_capacity(TRIPS);
    for _ in 0..TRIPS {
        let before = local(origin);
        let (coord, wall) = match source {
            ClockSource::Coordinator { wall_shift_us } => {
                let coord = time(conn).await?;
                (coord, wall_us() + wall_shift_us)
            }
            ClockSource::OwnWall { shift_us } => {
                let wall = wall_us() + shift_us;
                (wall, wall)
            }
        };
        let after = local(origin);
        trips.push((before, coord, after, wall));
    }
    Ok(Anchor::tightest(&trips).expect("TRIPS > 0 round trips were made"))
}
