//! The system under test for one arm: a Redis server when the arm needs one
//! and the scenario names none, then N replica processes on free loopback
//! ports, each answering `/healthz` before the load starts. `down` stops
//! them gracefully (replicas first, then Redis); dropping the stack (error,
//! panic, abandoned start) kills whatever is left.

mod child;
pub use child::RUN_ENV;
pub mod cluster;
pub mod control;
pub mod metrics;
pub mod proxy;
pub mod redis;
pub mod redis_use;
mod replica;
pub mod replicated;

use cluster::RedisCluster;
use redis::RedisServer;
use reference_api::config::Backend;
use reference_api::ReplicaConfig;
use replica::Replica;
use replicated::Replicated;
use std::path::PathBuf;
use std::time::Duration;
use tokio::time::Instant;

const READY_WITHIN: Duration = Duration::from_secs(10);
const HEALTHY_WITHIN: Duration = Duration::from_secs(5);

pub struct Stack {
    replicas: Vec<Replica>,
    redis: Option<RedisServer>,
    /// A managed Redis Cluster, in place of `redis`.
    cluster: Option<RedisCluster>,
    /// A managed primary and replica, in place of `redis`.
    replicated: Option<Replicated>,
    /// In front of the managed Redis when the scenario adds latency.
    proxy: Option<proxy::Proxy>,
    /// What each replica was started with (to start it again).
    configs: Vec<ReplicaConfig>,
    run_id: String,
    exe: PathBuf,
}

/// The Redis rlbench starts for an arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Managed {
    /// One redis-server.
    Single,
    /// A Redis Cluster of this many masters.
    Cluster { masters: usize },
    /// A primary and one replica, which a failover promotes.
    Replicated,
}

impl Stack {
    /// Starts Redis if `managed_redis` says so (its URL — or, with
    /// `latency_proxy`, a delaying proxy's in front of a single server —
    /// replaces the one in every Redis-backed config), then one replica per
    /// config. On any failure what was started is stopped before the error
    /// returns.
    pub async fn up(
        configs: &[ReplicaConfig],
        managed_redis: Option<Managed>,
        latency_proxy: bool,
        run_id: &str,
    ) -> Result<Stack, String> {
        Self::up_on(configs, managed_redis, latency_proxy, run_id, None).await
    }

    /// As [`Stack::up`]; with `base_port`, replica i listens on
    /// 127.0.0.1:(base_port + i) instead of a free port.
    pub async fn up_on(
        configs: &[ReplicaConfig],
        managed_redis: Option<Managed>,
        latency_proxy: bool,
        run_id: &str,
        base_port: Option<u16>,
    ) -> Result<Stack, String> {
        let exe = current_exe()?;
        let mut stack = Stack {
            replicas: Vec::with_capacity(configs.len()),
            redis: None,
            cluster: None,
            replicated: None,
            proxy: None,
            configs: Vec::new(),
            run_id: run_id.to_string(),
            exe: exe.clone(),
        };
        let mut configs = configs.to_vec();
        if let Some(Managed::Cluster { masters }) = managed_redis {
            let cluster = RedisCluster::start(run_id, masters).await?;
            let url = cluster.url().unwrap_or_default().to_string();
            stack.cluster = Some(cluster);
            for config in &mut configs {
                if let Backend::Redis(b) = &mut config.backend {
                    b.url = url.clone();
                }
            }
        }
        if managed_redis == Some(Managed::Replicated) {
            let pair = Replicated::start(run_id).await?;
            let url = pair.url();
            stack.replicated = Some(pair);
            for config in &mut configs {
                if let Backend::Redis(b) = &mut config.backend {
                    b.url = url.clone();
                }
            }
        }
        if managed_redis == Some(Managed::Single) {
            let server = RedisServer::start(run_id).await?;
            let mut url = server.url.clone();
            stack.redis = Some(server);
            if latency_proxy {
                let port = stack.redis.as_ref().map_or(0, |r| r.port);
                match proxy::Proxy::start(format!("127.0.0.1:{port}")).await {
                    Ok(p) => {
                        url = format!("redis://{}", p.address);
                        stack.proxy = Some(p);
                    }
                    Err(e) => {
                        stack.down().await;
                        return Err(e);
                    }
                }
            }
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
                    return Err(format!("--port: replica {i} would need a port above 65535"));
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

    pub fn urls(&self) -> Vec<String> {
        self.replicas.iter().map(|r| r.url.clone()).collect()
    }

    pub fn pids(&self) -> Vec<u32> {
        self.replicas
            .iter()
            .filter_map(Replica::pid)
            .chain(self.redis.as_ref().and_then(RedisServer::pid))
            .chain(self.cluster.iter().flat_map(RedisCluster::pids))
            .chain(self.replicated.iter().flat_map(Replicated::pids))
            .collect()
    }

    pub fn redis_url(&self) -> Option<&str> {
        if let Some(pair) = &self.replicated {
            return Some(pair.primary_url());
        }
        match &self.cluster {
            Some(c) => c.url(),
            None => self.redis.as_ref().map(|r| r.url.as_str()),
        }
    }

    /// The managed Redis in words: `redis-server at URL`, or the cluster's
    /// masters.
    pub fn redis_said(&self) -> Option<String> {
        match &self.cluster {
            Some(c) => Some(format!(
                "redis cluster of {} master(s) at {}",
                c.nodes.len(),
                c.nodes
                    .iter()
                    .map(|n| n.url.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            None => match &self.replicated {
                Some(pair) => Some(format!(
                    "redis primary at {}, its replica at {}, reached through {}",
                    pair.primary.url,
                    pair.replica.url,
                    pair.url()
                )),
                None => self.redis_url().map(|u| format!("redis-server at {u}")),
            },
        }
    }

    /// Stops replication to the replica (what it holds is lost at a
    /// failover); false without a primary and replica.
    pub fn hold_replication(&self) -> bool {
        self.replicated
            .as_ref()
            .map(Replicated::hold_link)
            .is_some()
    }

    /// Kills the primary and promotes its replica; false without them.
    pub async fn fail_over(&mut self) -> Result<bool, String> {
        match &mut self.replicated {
            Some(pair) => pair.fail_over().await.map(|()| true),
            None => Ok(false),
        }
    }

    /// After a failover, a fresh replica for the promoted primary.
    pub async fn rejoin_redis(&mut self) -> Result<(), String> {
        match &mut self.replicated {
            Some(pair) => pair.rejoin().await,
            None => Ok(()),
        }
    }

    /// The prefix of every Redis key the replicas use.
    pub fn redis_prefix(&self) -> Option<&str> {
        match self.configs.first().map(|c| &c.backend) {
            Some(Backend::Redis(b)) => Some(b.prefix.as_str()),
            _ => None,
        }
    }

    /// The Redis nodes the replicas use (the server itself, not a proxy in
    /// front; each master of a cluster); none for local replicas.
    pub async fn redis_nodes(&self) -> Vec<String> {
        if let Some(c) = &self.cluster {
            return c.nodes.iter().map(|n| n.url.clone()).collect();
        }
        if let Some(pair) = &self.replicated {
            // Both: after a failover the killed primary is left out.
            return vec![pair.primary.url.clone(), pair.replica.url.clone()];
        }
        if let Some(r) = &self.redis {
            return vec![r.url.clone()];
        }
        match self.configs.first().map(|c| &c.backend) {
            Some(Backend::Redis(b)) => redis_use::nodes(&b.url, b.topology).await,
            _ => Vec::new(),
        }
    }

    /// Pauses the managed Redis (SIGSTOP); false when there is none.
    pub fn pause_redis(&self) -> bool {
        self.redis.as_ref().map(RedisServer::pause).is_some()
    }

    pub fn resume_redis(&self) {
        if let Some(r) = &self.redis {
            r.resume();
        }
    }

    /// Delays everything between the replicas and Redis; false when there
    /// is no proxy (no managed Redis in this arm).
    pub fn delay_redis(&self, delay: Duration, jitter: Duration) -> bool {
        self.proxy.as_ref().map(|p| p.set(delay, jitter)).is_some()
    }

    /// Kills the managed Redis; false when there is none.
    pub async fn kill_redis(&mut self) -> bool {
        match &mut self.redis {
            Some(r) => {
                r.kill().await;
                true
            }
            None => false,
        }
    }

    /// Starts a fresh Redis on the killed one's port.
    pub async fn restart_redis(&mut self) -> Result<(), String> {
        match &mut self.redis {
            Some(r) => r.restart(&self.run_id).await,
            None => Ok(()),
        }
    }

    /// Sets replica `i`'s clock to its configured skew plus `step_us`
    /// (through its loopback-only admin endpoint); false when there is no
    /// such replica.
    pub async fn step_clock(&self, i: usize, step_us: i64) -> Result<bool, String> {
        let (Some(replica), Some(config)) = (self.replicas.get(i), self.configs.get(i)) else {
            return Ok(false);
        };
        let skew = config.clock_skew_us + step_us;
        let uri: hyper::Uri = format!("{}/admin/clock-skew?us={skew}", replica.url)
            .parse()
            .map_err(|e| format!("replica {}: {e}", replica.name))?;
        match control::put_status(&control::new(1), &uri, Duration::from_secs(2)).await {
            Some(200) => Ok(true),
            other => Err(format!(
                "replica {} did not take the clock step (status {other:?})",
                replica.name
            )),
        }
    }

    /// Kills replica `i` hard; false when there is no such replica.
    pub async fn kill_replica(&mut self, i: usize) -> bool {
        match self.replicas.get_mut(i) {
            Some(r) => {
                r.kill().await;
                true
            }
            None => false,
        }
    }

    /// Starts replica `i` again on its old port, with its old config.
    pub async fn restart_replica(&mut self, i: usize) -> Result<(), String> {
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

    async fn wait_healthy(&mut self) -> Result<(), String> {
        let http = control::new(1);
        let deadline = Instant::now() + HEALTHY_WITHIN;
        for replica in &mut self.replicas {
            let uri: hyper::Uri = format!("{}/healthz", replica.url)
                .parse()
                .map_err(|e| format!("replica {}: bad url {}: {e}", replica.name, replica.url))?;
            loop {
                if control::get_status(&http, &uri, Duration::from_millis(500)).await == Some(200) {
                    break;
                }
                if replica.has_exited() {
                    return Err(format!(
                        "replica {} died at start: {}",
                        replica.name,
                        replica.stderr_tail()
                    ));
                }
                if Instant::now() > deadline {
                    return Err(format!(
                        "replica {} at {} did not answer /healthz within {HEALTHY_WITHIN:?}",
                        replica.name, replica.url
                    ));
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        Ok(())
    }

    /// Each replica's Redis fallback counts, read from its `/metrics`.
    pub async fn redis_fallbacks(&self) -> Vec<crate::store::records::Fallbacks> {
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
    pub async fn down(&mut self) {
        for replica in &mut self.replicas {
            replica.stop().await;
        }
        self.replicas.clear();
        self.proxy = None;
        if let Some(mut redis) = self.redis.take() {
            redis.stop().await;
        }
        if let Some(mut cluster) = self.cluster.take() {
            cluster.stop().await;
        }
        if let Some(mut pair) = self.replicated.take() {
            pair.stop().await;
        }
    }
}

fn current_exe() -> Result<PathBuf, String> {
    std::env::current_exe()
        .map_err(|e| format!("cannot find rlbench's own binary to start replicas: {e}"))
}
