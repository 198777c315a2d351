//! Standalone reference API: `reference-api --config replica.json
//! [--listen 127.0.0.1:8080]`. rlbench itself starts replicas through its
//! own hidden `replica` subcommand, which calls the same library code.
//!
//! In a container the mode comes from the environment, so that one image
//! and one config file serve every mode (docker-compose.yml,
//! deploy/kubernetes/): `RLBENCH_MODE` = `local` | `redis_naive` |
//! `redis_lua` | `redis_batched` replaces the config's backend, and
//! `RLBENCH_REDIS_URL` names the Redis of the three Redis modes. Unset (or
//! empty), the config file decides. OpenTelemetry's own variables turn
//! the OTLP exporter on: `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_ENDPOINT`) names the collector's gRPC endpoint,
//! `OTEL_METRIC_EXPORT_INTERVAL` the milliseconds between exports.
#![allow(clippy::print_stdout)]

use reference_api::config::{
    mode_list, mode_named, Backend, ClockSource, OnError, RedisBackend, RedisMode, Topology,
};
use reference_api::{replica, ReplicaConfig};
use std::net::SocketAddr;
use std::process::ExitCode;

/// Chooses the backend over the config file's: one of [`MODES`].
const MODE_ENV: &str = "RLBENCH_MODE";
/// The Redis of the Redis modes, over the config file's.
const REDIS_URL_ENV: &str = "RLBENCH_REDIS_URL";
/// The collector's OTLP/gRPC endpoint, OpenTelemetry's names (first wins).
const OTLP_ENDPOINT_ENVS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];
/// Milliseconds between OTLP exports.
const OTLP_INTERVAL_ENV: &str = "OTEL_METRIC_EXPORT_INTERVAL";

/// What is wrong with what the environment says.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum EnvError {
    #[error("{name} is not valid UTF-8")]
    NotUnicode { name: String },
    /// Never echoed: a Redis URL may hold a password.
    #[error("{REDIS_URL_ENV} is not a Redis URL: it starts with redis://, rediss:// or unix://")]
    NotRedisUrl,
    #[error("{MODE_ENV}: {mode:?} is not a mode: {}", mode_list())]
    UnknownMode { mode: String },
    #[error(
        "{MODE_ENV}={mode} needs a Redis: set {REDIS_URL_ENV} (e.g. redis://redis:6379) or a redis backend in the config"
    )]
    NoRedis { mode: String },
    #[error("{OTLP_INTERVAL_ENV}: {interval:?} is not milliseconds (1 to 86400000)")]
    NotMilliseconds { interval: String },
}

/// What is wrong with the config the command line and the environment
/// make (exit 2).
#[derive(Debug, thiserror::Error)]
enum ConfigError {
    #[error("{}: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Json {
        path: std::path::PathBuf,
        source: serde_json::Error,
    },
    #[error(transparent)]
    Env(#[from] EnvError),
}

/// An environment variable's value; unset and empty are the same (a
/// compose file's `${RLBENCH_MODE:-}` passes an empty one).
fn env_value(name: &str) -> Result<Option<String>, EnvError> {
    match std::env::var(name) {
        Ok(v) if v.is_empty() => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(EnvError::NotUnicode {
            name: name.to_string(),
        }),
    }
}

/// The Redis backend a replica gets when the environment asks for a Redis
/// mode and its config file has none: every replica shares the keys (one
/// prefix) and one clock (Redis' `TIME`: containers on several machines
/// have clocks of their own), and a decision Redis cannot make within
/// 250 ms is a reject — never an admit beyond the limit.
fn default_redis(url: String, mode: RedisMode) -> RedisBackend {
    RedisBackend {
        url,
        topology: Topology::Single,
        prefix: "reference-api:".to_string(),
        mode,
        clock: ClockSource::Redis,
        timeout_us: 250_000,
        on_error: OnError::FailClosed,
        wait_replicas: 0,
        deadline: false,
        lease: 1,
        lease_ttl_us: 0,
    }
}

/// Applies `RLBENCH_MODE` (`mode`) and `RLBENCH_REDIS_URL` (`url`) to the
/// config read from the file. A Redis mode keeps the file's Redis
/// settings (prefix, clock, timeout…) when it has them and changes only
/// the mode and, if given, the URL; `local` drops them. The URL alone
/// changes the file's Redis URL, and is unused in local mode.
fn apply_env(
    config: &mut ReplicaConfig,
    mode: Option<&str>,
    url: Option<&str>,
) -> Result<(), EnvError> {
    if let Some(url) = url {
        // Never echoed: a Redis URL may hold a password.
        let schemes = ["redis://", "rediss://", "unix://", "redis+unix://"];
        if !schemes.iter().any(|s| url.starts_with(s)) {
            return Err(EnvError::NotRedisUrl);
        }
    }
    let redis_mode = match mode.map(|m| (m, mode_named(m))) {
        None => None,
        Some((_, Some(None))) => {
            config.backend = Backend::Local;
            return Ok(());
        }
        Some((_, Some(redis))) => redis,
        Some((other, None)) => {
            return Err(EnvError::UnknownMode {
                mode: other.to_string(),
            })
        }
    };
    match (&mut config.backend, redis_mode) {
        (Backend::Redis(backend), mode) => {
            if let Some(mode) = mode {
                backend.mode = mode;
            }
            if let Some(url) = url {
                backend.url = url.to_string();
            }
        }
        (Backend::Local, None) => {}
        (Backend::Local, Some(redis_mode)) => {
            let url = url.ok_or_else(|| EnvError::NoRedis {
                mode: mode.unwrap_or_default().to_string(),
            })?;
            config.backend = Backend::Redis(default_redis(url.to_string(), redis_mode));
        }
    }
    Ok(())
}

/// The command line (clap: `--help`, and a bad flag is exit 2).
#[derive(clap::Parser)]
#[command(
    name = "reference-api",
    about = "The reference rate-limited API: one replica",
    after_help = environment_help()
)]
struct Args {
    /// The replica's config (JSON: the replica's name, its policy, ...)
    #[arg(long, value_name = "FILE.json")]
    config: std::path::PathBuf,
    /// Where to listen
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// The replica's name, over the config's (X-Replica, metrics)
    #[arg(long, value_name = "REPLICA")]
    name: Option<String>,
    /// Stop when standard input closes (a parent's pipe)
    #[arg(long)]
    exit_on_stdin_eof: bool,
}

/// What `--help` says of the environment.
fn environment_help() -> String {
    format!(
        "Environment: {MODE_ENV} ({}) and {REDIS_URL_ENV} over the config file's backend; \
         {} or {} and {OTLP_INTERVAL_ENV} (ms) send the metrics by OTLP.",
        mode_list(),
        OTLP_ENDPOINT_ENVS[0],
        OTLP_ENDPOINT_ENVS[1],
    )
}

/// The config the command line and the environment make.
fn parse(args: Args) -> Result<(ReplicaConfig, SocketAddr, bool), ConfigError> {
    let path = &args.config;
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.clone(),
        source,
    })?;
    let mut config =
        serde_json::from_str::<ReplicaConfig>(&text).map_err(|source| ConfigError::Json {
            path: path.clone(),
            source,
        })?;
    let (listen, watch_stdin, name) = (args.listen, args.exit_on_stdin_eof, args.name);
    if let Some(name) = name {
        config.replica = name;
    }
    apply_env(
        &mut config,
        env_value(MODE_ENV)?.as_deref(),
        env_value(REDIS_URL_ENV)?.as_deref(),
    )?;
    let endpoint = match env_value(OTLP_ENDPOINT_ENVS[0])? {
        Some(e) => Some(e),
        None => env_value(OTLP_ENDPOINT_ENVS[1])?,
    };
    apply_otlp_env(
        &mut config,
        endpoint.as_deref(),
        env_value(OTLP_INTERVAL_ENV)?.as_deref(),
    )?;
    Ok((config, listen, watch_stdin))
}

/// Applies OpenTelemetry's variables over the config file's `otlp`: an
/// endpoint turns the exporter on, an interval (ms) sets how often it
/// sends.
fn apply_otlp_env(
    config: &mut ReplicaConfig,
    endpoint: Option<&str>,
    interval: Option<&str>,
) -> Result<(), EnvError> {
    if let Some(endpoint) = endpoint {
        let interval_ms = config.otlp.as_ref().map_or(60_000, |o| o.interval_ms);
        config.otlp = Some(reference_api::config::Otlp {
            endpoint: endpoint.to_string(),
            interval_ms,
        });
    }
    if let Some(interval) = interval {
        let ms = interval
            .parse::<u64>()
            .ok()
            .filter(|ms| (1..=86_400_000).contains(ms))
            .ok_or_else(|| EnvError::NotMilliseconds {
                interval: interval.to_string(),
            })?;
        if let Some(otlp) = config.otlp.as_mut() {
            otlp.interval_ms = ms;
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = <Args as clap::Parser>::parse();
    let (config, listen, watch_stdin) = match parse(args) {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("reference-api: {e}");
            return ExitCode::from(2);
        }
    };
    let announce = |addr: SocketAddr| println!("{}http://{addr}", replica::READY_PREFIX);
    match replica::run(
        config,
        listen,
        announce,
        replica::shutdown_signal(watch_stdin),
    )
    .await
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reference-api: {e}");
            ExitCode::from(3)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> ReplicaConfig {
        serde_json::from_str(
            r#"{"replica":"r0","policy":{"algorithm":"sliding_log","limit":10,"window_us":2000000}}"#,
        )
        .unwrap()
    }

    fn redis(mode: RedisMode) -> ReplicaConfig {
        let mut c = local();
        c.backend = Backend::Redis(RedisBackend {
            prefix: "mine:".to_string(),
            timeout_us: 9,
            on_error: OnError::FailOpen,
            clock: ClockSource::Replica,
            ..default_redis("redis://file:6379".to_string(), mode)
        });
        c
    }

    fn backend(c: &ReplicaConfig) -> &RedisBackend {
        match &c.backend {
            Backend::Redis(b) => b,
            Backend::Local => panic!("expected a redis backend, got local"),
        }
    }

    #[test]
    fn the_command_line_takes_what_compose_and_kubernetes_pass() {
        use clap::{CommandFactory, Parser};
        Args::command().debug_assert();
        let a = Args::try_parse_from([
            "reference-api",
            "--config",
            "reference-api/docker/replica.json",
            "--listen",
            "0.0.0.0:8080",
            "--name",
            "r1",
            "--exit-on-stdin-eof",
        ])
        .unwrap();
        assert_eq!(a.listen.to_string(), "0.0.0.0:8080");
        assert_eq!(a.name.as_deref(), Some("r1"));
        assert!(a.exit_on_stdin_eof);
        let d = Args::try_parse_from(["reference-api", "--config", "c.json"]).unwrap();
        assert_eq!(d.listen.to_string(), "127.0.0.1:8080");
        assert!(!d.exit_on_stdin_eof);
        for bad in [
            &["reference-api"][..],
            &["reference-api", "--config", "c.json", "--listen", "nope"],
            &["reference-api", "--config", "c.json", "--bogus"],
        ] {
            assert!(Args::try_parse_from(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn opentelemetrys_variables_turn_the_exporter_on_and_set_its_interval() {
        let mut c = local();
        apply_otlp_env(&mut c, None, Some("1000")).unwrap();
        assert_eq!(c.otlp, None, "an interval alone turns nothing on");
        apply_otlp_env(&mut c, Some("http://127.0.0.1:4317"), None).unwrap();
        let otlp = c.otlp.clone().unwrap();
        assert_eq!(otlp.endpoint, "http://127.0.0.1:4317");
        assert_eq!(otlp.interval_ms, 60_000);
        apply_otlp_env(&mut c, None, Some("250")).unwrap();
        assert_eq!(c.otlp.as_ref().unwrap().interval_ms, 250);
        for bad in ["0", "-5", "1s", "", "86400001"] {
            let e = apply_otlp_env(&mut c, None, Some(bad))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("OTEL_METRIC_EXPORT_INTERVAL: "), "{e}");
        }
    }

    #[test]
    fn without_the_environment_the_file_decides() {
        for c in [local(), redis(RedisMode::Naive)] {
            let mut d = c.clone();
            apply_env(&mut d, None, None).unwrap();
            assert_eq!(d, c);
        }
    }

    #[test]
    fn a_redis_mode_on_a_local_file_takes_the_url_and_safe_defaults() {
        for (name, mode) in [
            ("redis_naive", RedisMode::Naive),
            ("redis_lua", RedisMode::Lua),
            ("redis_batched", RedisMode::Batched),
        ] {
            let mut c = local();
            apply_env(&mut c, Some(name), Some("redis://redis:6379")).unwrap();
            let b = backend(&c);
            assert_eq!(b.mode, mode);
            assert_eq!(b.url, "redis://redis:6379");
            assert_eq!(
                b.clock,
                ClockSource::Redis,
                "one clock for replicas on several machines"
            );
            assert_eq!(
                b.on_error,
                OnError::FailClosed,
                "Redis trouble never admits beyond"
            );
            assert_eq!(b.topology, Topology::Single);
            assert!(!b.prefix.is_empty());
            assert!(b.timeout_us > 0);
            assert_eq!(c.policy, local().policy, "the policy is the file's");
        }
    }

    #[test]
    fn a_redis_mode_without_a_redis_is_one_line_naming_the_variable() {
        let mut c = local();
        let e = apply_env(&mut c, Some("redis_lua"), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("RLBENCH_MODE=redis_lua") && e.contains("RLBENCH_REDIS_URL"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        assert_eq!(c, local(), "nothing changed");
    }

    #[test]
    fn a_redis_mode_on_a_redis_file_keeps_its_settings() {
        let mut c = redis(RedisMode::Lua);
        apply_env(&mut c, Some("redis_naive"), None).unwrap();
        let b = backend(&c);
        assert_eq!(b.mode, RedisMode::Naive);
        assert_eq!(b.url, "redis://file:6379");
        assert_eq!((b.prefix.as_str(), b.timeout_us), ("mine:", 9));
        assert_eq!(
            (b.on_error, b.clock),
            (OnError::FailOpen, ClockSource::Replica)
        );

        let mut c = redis(RedisMode::Lua);
        apply_env(
            &mut c,
            Some("redis_batched"),
            Some("rediss://u:p@elsewhere:6380"),
        )
        .unwrap();
        let b = backend(&c);
        assert_eq!(b.mode, RedisMode::Batched);
        assert_eq!(b.url, "rediss://u:p@elsewhere:6380");
        assert_eq!(b.prefix, "mine:");
    }

    #[test]
    fn local_drops_the_redis_of_the_file() {
        let mut c = redis(RedisMode::Lua);
        apply_env(&mut c, Some("local"), Some("redis://redis:6379")).unwrap();
        assert_eq!(c.backend, Backend::Local);
    }

    #[test]
    fn the_url_alone_changes_the_files_redis_and_is_unused_in_local_mode() {
        let mut c = redis(RedisMode::Lua);
        apply_env(&mut c, None, Some("redis://other:6379")).unwrap();
        assert_eq!(backend(&c).url, "redis://other:6379");
        assert_eq!(backend(&c).mode, RedisMode::Lua);

        let mut c = local();
        apply_env(&mut c, None, Some("redis://other:6379")).unwrap();
        assert_eq!(c, local());
    }

    #[test]
    fn an_unknown_mode_is_one_line_naming_it_and_the_modes() {
        for bad in ["lua", "REDIS_LUA", " redis_lua", "redis-lua"] {
            let mut c = local();
            let e = apply_env(&mut c, Some(bad), Some("redis://redis:6379"))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("RLBENCH_MODE: "), "{e}");
            assert!(
                e.contains(&format!("{bad:?}")) && e.contains(&mode_list()),
                "{e}"
            );
            assert!(!e.contains('\n'), "{e}");
            assert_eq!(c, local());
        }
    }

    #[test]
    fn a_url_that_is_not_redis_is_refused_without_echoing_it() {
        for bad in ["http://redis:6379", "redis:6379", "secret-password@redis"] {
            let mut c = redis(RedisMode::Lua);
            let e = apply_env(&mut c, Some("redis_lua"), Some(bad))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("RLBENCH_REDIS_URL is not a Redis URL"), "{e}");
            assert!(!e.contains(bad) && !e.contains('\n'), "{e}");
            assert_eq!(backend(&c).url, "redis://file:6379");
        }
    }

    #[test]
    fn an_empty_variable_is_unset() {
        // A name no other test or tool uses: tests run in parallel.
        let name = "REFERENCE_API_TEST_EMPTY_VARIABLE";
        std::env::set_var(name, "");
        assert_eq!(env_value(name), Ok(None));
        std::env::set_var(name, "redis_lua");
        assert_eq!(env_value(name), Ok(Some("redis_lua".to_string())));
        std::env::remove_var(name);
        assert_eq!(env_value(name), Ok(None));
    }

    /// The config the containers run (docker-compose.yml, deploy/): it
    /// parses, and the environment turns it into each mode.
    #[test]
    fn the_containers_config_parses_and_takes_every_mode() {
        let file: ReplicaConfig = serde_json::from_str(include_str!("../docker/replica.json"))
            .expect("reference-api/docker/replica.json");
        for (name, mode) in [
            ("redis_naive", Some(RedisMode::Naive)),
            ("redis_lua", Some(RedisMode::Lua)),
            ("redis_batched", Some(RedisMode::Batched)),
            ("local", None),
        ] {
            let mut c = file.clone();
            apply_env(&mut c, Some(name), Some("redis://redis:6379")).unwrap();
            match (&c.backend, mode) {
                (Backend::Local, None) => {}
                (Backend::Redis(b), Some(mode)) => {
                    assert_eq!((b.mode, b.url.as_str()), (mode, "redis://redis:6379"));
                }
                (b, _) => panic!("{name}: {b:?}"),
            }
        }
    }
}
