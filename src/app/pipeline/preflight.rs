//! Before any load: what the selected arms need from this machine — a
//! `redis-server` to start or a `[redis] url` that answers and takes its
//! credentials (named with the password hidden), external URLs
//! that accept connections, and enough open files for the connections the
//! load may hold. Every missing piece is one line with its fix; the run
//! stops with exit 3 before the first arm starts.

use crate::error::Error;
use crate::load::schedule::Shape;
use crate::scenario::{Arm, LoadSpec, Scenario};
use reference_api::redis_url::redact;
use std::path::PathBuf;
use std::time::Duration;

/// How long a reachability check waits for a connection.
const CONNECT_WITHIN: Duration = Duration::from_secs(2);

/// Files rlbench keeps open besides its connections (events, logs,
/// replicas' pipes), with room to spare.
const OTHER_FILES: u64 = 64;

/// One missing piece: what, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Missing(pub String);

/// Checks every selected arm's needs; all missing pieces in one error.
pub(crate) async fn ensure(scenario: &Scenario, arms: &[&Arm]) -> Result<(), Error> {
    let mut missing = Vec::new();
    let managed: Vec<&str> = arms
        .iter()
        .filter(|a| scenario.needs_managed_redis(a))
        .map(|a| a.name.as_str())
        .collect();
    if !managed.is_empty() && find_on_path("redis-server").is_none() {
        missing.push(Missing(format!(
            "arm {} needs redis-server, which is not on PATH: install it (Debian/Ubuntu: \
             sudo apt-get install redis-server; Fedora: sudo dnf install redis; macOS: brew \
             install redis; or scripts/quickstart.sh) or point the scenario at a running \
             Redis with [redis] url = \"redis://127.0.0.1:6379\"",
            managed.join(", ")
        )));
    }
    if let Some(url) = &scenario.redis.url {
        if arms.iter().any(|a| a.mode.uses_redis()) {
            if let Err(e) = redis_reachable(url).await {
                missing.push(Missing(format!(
                    "cannot reach Redis at {}: {e}: start it, or drop [redis] url so that \
                     rlbench starts its own",
                    redact(url)
                )));
            } else if let Some(e) = redis_refuses(url).await {
                missing.push(Missing(format!(
                    "Redis at {} refused the login: {e}: check the user and password in \
                     [redis] url",
                    redact(url)
                )));
            }
        }
    }
    let mut seen = Vec::new();
    for url in arms.iter().flat_map(|a| &a.urls) {
        if seen.contains(&url) {
            continue;
        }
        seen.push(url);
        if let Err(e) = crate::target::reachable(std::slice::from_ref(url)).await {
            missing.push(Missing(e.message));
        }
    }
    if let Err(m) = open_files(most_connections(scenario)) {
        missing.push(m);
    }
    if missing.is_empty() {
        Ok(())
    } else {
        let lines: Vec<String> = missing.into_iter().map(|m| m.0).collect();
        Err(Error::environment(lines.join("\nrlbench: ")))
    }
}

/// The most connections any arm's load may hold at once (arms run one
/// after another): `[load]`'s, or an arm's own schedule's.
pub(crate) fn most_connections(scenario: &crate::scenario::Scenario) -> u64 {
    scenario
        .arms
        .iter()
        .filter_map(|a| a.schedule.as_ref())
        .map(|own| shape_connections(&scenario.load, own, scenario.duration))
        .fold(connections(&scenario.load, scenario.duration), u64::max)
}

/// The most connections the load may hold at once: what can be in flight
/// (the rate times the timeout, or the closed loop's workers), never more
/// than `max_in_flight`.
pub(crate) fn connections(load: &LoadSpec, duration: Duration) -> u64 {
    shape_connections(load, &load.shape, duration)
}

/// [`connections`] for `shape` sent with `load`'s timeout and cap.
fn shape_connections(load: &LoadSpec, shape: &Shape, duration: Duration) -> u64 {
    let timeout = load.timeout.as_secs_f64();
    let peak = match shape {
        Shape::Closed { concurrency, .. } => *concurrency as f64,
        Shape::Constant { rate } | Shape::Poisson { rate } => rate * timeout,
        Shape::Stages { from, stages } => {
            stages.iter().map(|s| s.target).fold(*from, f64::max) * timeout
        }
        Shape::Bursts { per_edge, .. } => {
            (*per_edge as f64).max(shape.target_rate(duration) * timeout)
        }
    };
    (peak.ceil() as u64).clamp(1, load.max_in_flight.max(1) as u64)
}

/// Makes room for `connections` open sockets: raises the soft open-files
/// limit toward the hard one when needed; fails when even the hard limit is
/// too low.
pub(crate) fn open_files(connections: u64) -> Result<(), Missing> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let need = connections + OTHER_FILES;
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return Ok(());
    };
    if soft >= need {
        return Ok(());
    }
    if hard >= need && setrlimit(Resource::RLIMIT_NOFILE, need, hard).is_ok() {
        return Ok(());
    }
    Err(Missing(format!(
        "the load may hold {connections} connections but the open-files limit is {soft} \
         (hard {hard}): raise it, e.g. `ulimit -n {need}` in this shell (as root, or \
         LimitNOFILE= for a service), or lower [load] max_in_flight"
    )))
}

/// The first executable called `name` on PATH.
pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// Why nothing accepts connections at a Redis URL, in the words of what
/// refused (the line around it says where, and the fix).
#[derive(Debug, thiserror::Error)]
enum Unreachable {
    /// The URL is not one the replicas' client takes.
    #[error(transparent)]
    Url(#[from] redis::RedisError),
    /// A Unix socket file that is not there (or cannot be looked at).
    #[error(transparent)]
    NoSocket(std::io::Error),
    #[error(transparent)]
    Refused(std::io::Error),
    #[error("no connection within {} s", .0.as_secs())]
    Silent(Duration),
}

/// Whether something accepts connections at a Redis URL (parsed as the
/// replicas' client parses it).
async fn redis_reachable(url: &str) -> Result<(), Unreachable> {
    use redis::{ConnectionAddr, IntoConnectionInfo};
    let info = url.into_connection_info()?;
    let (host, port) = match info.addr() {
        ConnectionAddr::Tcp(host, port) => (host.clone(), *port),
        ConnectionAddr::TcpTls { host, port, .. } => (host.clone(), *port),
        // A socket file: its presence is the check.
        other => {
            return std::fs::metadata(other.to_string())
                .map(|_| ())
                .map_err(Unreachable::NoSocket)
        }
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let connect = tokio::net::TcpStream::connect((host.as_str(), port));
    match tokio::time::timeout(CONNECT_WITHIN, connect).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(Unreachable::Refused(e)),
        Err(_) => Err(Unreachable::Silent(CONNECT_WITHIN)),
    }
}

/// Why Redis refuses the URL's credentials (a wrong password, or none
/// where one is needed), if it does. Any other outcome — an answer, an
/// error of another kind, silence — is left to the arm's start to report.
async fn redis_refuses(url: &str) -> Option<String> {
    let ping = async {
        let client = redis::Client::open(url).ok()?;
        let answer: redis::RedisResult<String> = async {
            let mut conn = client.get_multiplexed_async_connection().await?;
            redis::cmd("PING").query_async(&mut conn).await
        }
        .await;
        match answer {
            Err(e)
                if e.kind() == redis::ErrorKind::AuthenticationFailed
                    || matches!(e.code(), Some("NOAUTH" | "WRONGPASS")) =>
            {
                Some(e.to_string())
            }
            _ => None,
        }
    };
    tokio::time::timeout(CONNECT_WITHIN, ping)
        .await
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::pick::KeyDistribution;

    fn load(shape: Shape, timeout_ms: u64, max_in_flight: usize) -> LoadSpec {
        LoadSpec {
            shape,
            keys: 1,
            key_distribution: KeyDistribution::Uniform,
            timeout: Duration::from_millis(timeout_ms),
            max_in_flight,
            retry: None,
            key: Default::default(),
            spoof: None,
        }
    }

    /// Arms run one after another: the most any one may hold, its own
    /// schedule's or `[load]`'s.
    #[test]
    fn the_most_connections_are_the_busiest_arms() {
        let text = |own: &str| {
            format!(
                "name = \"t\"\nduration = \"10s\"\n[policy]\nalgorithm = \"sliding_log\"\n\
                 limit = 10\nwindow = \"2s\"\n[load]\nrate = 75\ntimeout = \"2s\"\n\
                 [[arms]]\nname = \"steady\"\nmode = \"local\"\n\
                 [[arms]]\nname = \"own\"\nmode = \"local\"\n{own}"
            )
        };
        let most =
            |own: &str| most_connections(&crate::scenario::parse("t.toml", &text(own)).unwrap());
        assert_eq!(most(""), 150);
        assert_eq!(
            most("schedule = \"constant\"\nrate = 1500\nkeys = 100\n"),
            3_000
        );
        assert_eq!(most("schedule = \"constant\"\nrate = 10\n"), 150);
        assert_eq!(most("schedule = \"bursts\"\nburst = 400\n"), 400);
    }

    #[test]
    fn connections_are_what_may_be_in_flight_at_most() {
        let d = Duration::from_secs(10);
        let constant = load(Shape::Constant { rate: 400.0 }, 2_000, 10_000);
        assert_eq!(connections(&constant, d), 800);
        let capped = load(Shape::Constant { rate: 50_000.0 }, 2_000, 10_000);
        assert_eq!(connections(&capped, d), 10_000);
        let closed = load(
            Shape::Closed {
                concurrency: 64,
                think: Duration::ZERO,
            },
            2_000,
            10_000,
        );
        assert_eq!(connections(&closed, d), 64);
        let bursts = load(
            Shape::Bursts {
                per_edge: 200,
                spread: Duration::from_millis(10),
                window: Duration::from_secs(1),
            },
            100,
            10_000,
        );
        assert_eq!(connections(&bursts, d), 200, "a burst is sent at once");
    }

    #[test]
    fn a_limit_high_enough_is_fine_and_an_impossible_one_says_how_to_raise_it() {
        assert_eq!(open_files(10), Ok(()));
        let Missing(line) = open_files(u64::MAX / 4).unwrap_err();
        assert!(line.contains("ulimit -n"), "{line}");
        assert!(!line.contains('\n'));
    }

    #[test]
    fn programs_are_found_on_path() {
        assert!(find_on_path("sh").is_some());
        assert!(find_on_path("surely-not-a-program-rlbench").is_none());
    }
}
