//! The system under test for one arm: the Redis it needs when the scenario
//! names none (one server, a cluster or a primary and replica: see
//! `managed`), then N replica processes on free loopback ports, each
//! answering `/healthz` before the load starts; their admin endpoint takes
//! a token drawn for this stack alone. `down` stops them
//! gracefully (replicas first, then Redis); dropping the stack (error,
//! panic, abandoned start) kills whatever is left.

mod child;
pub(crate) mod cluster;
pub(crate) mod cluster_answers;
pub(crate) mod control;
pub(crate) mod error;
pub(crate) use error::StackError;
pub(crate) mod leftovers;
pub(crate) mod managed;
pub(crate) use managed::Managed;
pub(crate) mod metrics;
pub(crate) mod proxy;
pub(crate) mod redis;
pub(crate) mod redis_use;
mod replica;
pub(crate) mod replicated;
mod secret;

use error::Waited;
use managed::ManagedRedis;
use reference_api::config::Backend;
use reference_api::ReplicaConfig;
use replica::Replica;
use std::path::PathBuf;
use std::time::Duration;
use tokio::time::Instant;

const READY_WITHIN: Duration = Duration::from_secs(10);
const HEALTHY_WITHIN: Duration = Duration::from_secs(5);

pub(crate) struct Stack {
    replicas: Vec<Replica>,
    redis: Option<ManagedRedis>,
    /// What each replica was started with (to start it again).
    configs: Vec<ReplicaConfig>,
    /// The replicas' admin token (see `step_clock`).
    admin_token: String,
    run_id: String,
    exe: PathBuf,
}

impl Stack {
    /// Starts Redis if `managed_redis` says so (its URL — or, with
    /// `latency_proxy`, a delaying proxy's in front of a single server —
    /// replaces the one in every Redis-backed config), then one replica per
    /// config. On any failure what was started is stopped before the error
    /// returns.
    pub(crate) async fn up(
        configs: &[ReplicaConfig],
        managed_redis: Option<Managed>,
        latency_proxy: bool,
        run_id: &str,
    ) -> Result<Stack, StackError> {
        Self::up_on(configs, managed_redis, latency_proxy, run_id, None).await
    }

    /// As [`Stack::up`]; with `base_port`, replica i listens on
    /// 127.0.0.1:(base_port + i) instead of a free port.
    pub(crate) async fn up_on(
        configs: &[ReplicaConfig],
        managed_redis: Option<Managed>,
        latency_proxy: bool,
        run_id: &str,
        base_port: Option<u16>,
    ) -> Result<Stack, StackError> {
        let exe = current_exe()?;
        let admin_token = secret::fresh()?;
        let mut stack = Stack {
            replicas: Vec::with_capacity(configs.len()),
            redis: None,
            configs: Vec::new(),
            admin_token: admin_token.clone(),
            run_id: run_id.to_string(),
            exe: exe.clone(),
        };
        let mut configs = configs.to_vec();
        for config in configs.iter_mut().filter(|c| c.admin) {
            config.admin_token = Some(admin_token.clone());
        }
        if let Some(kind) = managed_redis {
            let redis = ManagedRedis::start(kind, run_id, latency_proxy).await?;
            let url = redis.url();
            stack.redis = Some(redis);
            for config in &mut configs {
                if let Backend::Redis(b) = &mut config.backend {
                    b.url = url.clone();
                }
            }
        }
        for (i, config) in configs.iter().enumerate() {
            let listen = match base_port.map(|p| p.checked_add(i as u16)) {
                None => None,
                Some(Some(port)) => Some(format!("127.0.0.1:{port}")),
                Some(None) => {
                    stack.down().await;
                    return Err(StackError::PortPastRange { replica: i });
                }
            };
            match Replica::start(&exe, config, run_id, READY_WITHIN, listen.as_deref()).await {
                Ok(replica) => stack.replicas.push(replica),
                Err(e) => {
                    stack.down().await;
                    return Err(e);
                }
            }
        }
        stack.configs = configs;
        if let Err(e) = stack.wait_healthy().await {
            stack.down().await;
            return Err(e);
        }
        Ok(stack)
    }

    pub(crate) fn urls(&self) -> Vec<String> {
        self.replicas.iter().map(|r| r.url.clone()).collect()
    }

    pub(crate) fn pids(&self) -> Vec<u32> {
        self.replicas
            .iter()
            .filter_map(Replica::pid)
            .chain(self.redis.iter().flat_map(ManagedRedis::pids))
            .collect()
    }

    /// The managed Redis in words, for the terminal.
    pub(crate) fn redis_said(&self) -> Option<String> {
        self.redis.as_ref().map(ManagedRedis::said)
    }

    /// The prefix of every Redis key the replicas use.
    pub(crate) fn redis_prefix(&self) -> Option<&str> {
        match self.configs.first().map(|c| &c.backend) {
            Some(Backend::Redis(b)) => Some(b.prefix.as_str()),
            _ => None,
        }
    }

    /// The Redis nodes the replicas use (the servers themselves, not a
    /// proxy in front; each master of a cluster); none for local replicas.
    pub(crate) async fn redis_nodes(&self) -> Vec<String> {
        if let Some(r) = &self.redis {
            return r.nodes();
        }
        match self.configs.first().map(|c| &c.backend) {
            Some(Backend::Redis(b)) => redis_use::nodes(&b.url, b.topology).await,
            _ => Vec::new(),
        }
    }

    /// The arm's own Redis, to break (see `managed` for what applies).
    pub(crate) fn redis_mut(&mut self) -> Option<&mut ManagedRedis> {
        self.redis.as_mut()
    }

    /// Starts a fresh single Redis on the killed one's port.
    pub(crate) async fn restart_redis(&mut self) -> Result<(), StackError> {
        match &mut self.redis {
            Some(r) => r.restart(&self.run_id).await,
            None => Ok(()),
        }
    }

    /// Sets replica `i`'s clock to its configured skew plus `step_us`
    /// (through its loopback-only admin endpoint, with the stack's token);
    /// false when there is no such replica.
    pub(crate) async fn step_clock(&self, i: usize, step_us: i64) -> Result<bool, StackError> {
        let (Some(replica), Some(config)) = (self.replicas.get(i), self.configs.get(i)) else {
            return Ok(false);
        };
        let skew = config.clock_skew_us + step_us;
        let uri: hyper::Uri = format!("{}/admin/clock-skew?us={skew}", replica.url)
            .parse()
            .map_err(|source| StackError::ClockUrl {
                name: replica.name.clone(),
                source,
            })?;
        let http = control::new(1);
        match control::put_status(&http, &uri, &self.admin_token, Duration::from_secs(2)).await {
            Some(200) => Ok(true),
            status => Err(StackError::ClockRefused {
                name: replica.name.clone(),
                status,
            }),
        }
    }

    /// Kills replica `i` hard; false when there is no such replica.
    pub(crate) async fn kill_replica(&mut self, i: usize) -> bool {
        match self.replicas.get_mut(i) {
            Some(r) => {
                r.kill().await;
                true
            }
            None => false,
        }
    }

    /// Starts replica `i` again on its old port, with its old config.
    pub(crate) async fn restart_replica(&mut self, i: usize) -> Result<(), StackError> {
        let (Some(old), Some(config)) = (self.replicas.get(i), self.configs.get(i)) else {
            return Ok(());
        };
        let address = old.address().to_string();
        let fresh = Replica::start(
            &self.exe,
            config,
            &self.run_id,
            READY_WITHIN,
            Some(&address),
        )
        .await?;
        self.replicas[i] = fresh;
        Ok(())
    }

    async fn wait_healthy(&mut self) -> Result<(), StackError> {
        let http = control::new(1);
        let deadline = Instant::now() + HEALTHY_WITHIN;
        for replica in &mut self.replicas {
            let uri: hyper::Uri = format!("{}/healthz", replica.url)
                .parse()
                .map_err(|source| StackError::ReplicaUrl {
                    name: replica.name.clone(),
                    url: replica.url.clone(),
                    source,
                })?;
            loop {
                if control::get_status(&http, &uri, Duration::from_millis(500)).await == Some(200) {
                    break;
                }
                if replica.has_exited() {
                    return Err(StackError::ReplicaDied {
                        name: replica.name.clone(),
                        stderr: replica.stderr_tail(),
                    });
                }
                if Instant::now() > deadline {
                    return Err(StackError::TimedOut {
                        waited: Waited::Healthz {
                            name: replica.name.clone(),
                            url: replica.url.clone(),
                        },
                        within: HEALTHY_WITHIN,
                    });
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        Ok(())
    }

    /// Each replica's Redis fallback counts, read from its `/metrics`.
    pub(crate) async fn redis_fallbacks(&self) -> Vec<crate::store::records::Fallbacks> {
        let http = control::new(1);
        let mut out = Vec::with_capacity(self.replicas.len());
        for replica in &self.replicas {
            let text = match format!("{}/metrics", replica.url).parse::<hyper::Uri>() {
                Ok(uri) => control::get_text(&http, &uri, Duration::from_secs(2)).await,
                Err(_) => None,
            };
            out.push(text.map(|t| metrics::fallbacks(&t)).unwrap_or_default());
        }
        out
    }

    /// Stops every replica, then Redis (SIGTERM, grace, SIGKILL), waiting for each.
    pub(crate) async fn down(&mut self) {
        for replica in &mut self.replicas {
            replica.stop().await;
        }
        self.replicas.clear();
        if let Some(mut redis) = self.redis.take() {
            redis.stop().await;
        }
    }
}

fn current_exe() -> Result<PathBuf, StackError> {
    std::env::current_exe().map_err(StackError::OwnBinary)
}
