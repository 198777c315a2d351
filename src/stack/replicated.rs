//! A primary and its replica, as teams run Redis for availability:
//! `replicaof` through a proxy rlbench controls (the replication link),
//! and the limiter replicas reaching the primary through another proxy (the
//! address a failover moves, as Sentinel or a floating IP would). A
//! failover kills the primary, promotes the replica (`REPLICAOF NO ONE`)
//! and moves the address to it, then starts a fresh server as the new
//! primary's replica; holding the link first leaves writes the primary
//! acknowledged unreplicated, so the promoted replica never sees them. Both
//! have the pair's one random password (the replica authenticates to its
//! primary with it). Stopped on every exit path, as each node is a
//! [`RedisServer`].

use super::error::{StackError, Waited};
use super::proxy::Proxy;
use super::redis::RedisServer;
use std::time::Duration;
use tokio::time::Instant;

const LINKED_WITHIN: Duration = Duration::from_secs(10);
/// A held link holds this long: past any run.
const HOLD: Duration = Duration::from_secs(24 * 3600);

pub(crate) struct Replicated {
    pub primary: RedisServer,
    pub replica: RedisServer,
    /// Between the replica and the primary.
    link: Proxy,
    /// In front of whichever is primary: what the limiter replicas use.
    pub front: Proxy,
    failed_over: bool,
    label: String,
    password: String,
}

impl Replicated {
    pub(crate) async fn start(label: &str) -> Result<Replicated, StackError> {
        let password = super::secret::fresh()?;
        let primary = RedisServer::start_with(label, &password, |_| Ok(no_sync_delay())).await?;
        let link = Proxy::start(format!("127.0.0.1:{}", primary.port)).await?;
        let link_port = port_of(&link)?;
        let replica = RedisServer::start_with(label, &password, |_| {
            let mut args = no_sync_delay();
            args.extend(["--replicaof".into(), "127.0.0.1".into(), link_port.clone()]);
            Ok(args)
        })
        .await?;
        let front = Proxy::start(format!("127.0.0.1:{}", primary.port)).await?;
        let pair = Replicated {
            primary,
            replica,
            link,
            front,
            failed_over: false,
            label: label.to_string(),
            password,
        };
        pair.wait_linked().await?;
        Ok(pair)
    }

    /// Ready once the replica acknowledges a write made on the primary
    /// (`WAIT 1`): a link that is "up" may not acknowledge yet (the
    /// primary counts the replica online only after its first ACK), and
    /// an arm that waits for replicas would reject until it did.
    async fn wait_linked(&self) -> Result<(), StackError> {
        let deadline = Instant::now() + LINKED_WITHIN;
        loop {
            let info = info(&self.replica.url, "replication")
                .await
                .unwrap_or_default();
            if info.lines().any(|l| l.trim() == "master_link_status:up")
                && acknowledged(&self.primary.url).await
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                let node = self.replica.redacted_url();
                return Err(StackError::TimedOut {
                    waited: Waited::PairLinked { node },
                    within: LINKED_WITHIN,
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The address the limiter replicas use (password included: both
    /// servers have the pair's).
    pub(crate) fn url(&self) -> String {
        self.primary.url_at(&self.front.address)
    }

    /// From now on the replica receives nothing from the primary.
    pub(crate) fn hold_link(&self) {
        self.link.set(HOLD, Duration::ZERO);
    }

    /// Kills the primary, promotes the replica, moves the address to it.
    pub(crate) async fn fail_over(&mut self) -> Result<(), StackError> {
        if self.failed_over {
            return Err(StackError::PromotedAlready);
        }
        self.primary.kill().await;
        // What the link held is dropped with it: writes never replicated.
        self.link.switch(format!("127.0.0.1:{}", self.primary.port));
        let promoted = async {
            let client = redis::Client::open(self.replica.url.as_str()).ok()?;
            let mut conn = client.get_multiplexed_async_connection().await.ok()?;
            redis::cmd("REPLICAOF")
                .arg("NO")
                .arg("ONE")
                .query_async::<()>(&mut conn)
                .await
                .ok()
        };
        match tokio::time::timeout(Duration::from_secs(2), promoted).await {
            Ok(Some(())) => {}
            _ => {
                let node = self.replica.redacted_url();
                return Err(StackError::PromotionFailed { node });
            }
        }
        self.front
            .switch(format!("127.0.0.1:{}", self.replica.port));
        self.failed_over = true;
        Ok(())
    }

    /// After [`Replicated::fail_over`]: a fresh server in the old
    /// primary's place comes back as the new primary's replica (as Sentinel
    /// brings the old one back), so that waiting for a replica can succeed
    /// again.
    pub(crate) async fn rejoin(&mut self) -> Result<(), StackError> {
        self.link.set(Duration::ZERO, Duration::ZERO);
        self.link.switch(format!("127.0.0.1:{}", self.replica.port));
        let link_port = port_of(&self.link)?;
        let label = self.label.clone();
        let old = std::mem::replace(
            &mut self.primary,
            RedisServer::start_with(&label, &self.password, |_| {
                let mut args = no_sync_delay();
                args.extend(["--replicaof".into(), "127.0.0.1".into(), link_port.clone()]);
                Ok(args)
            })
            .await?,
        );
        drop(old);
        Ok(())
    }

    pub(crate) fn pids(&self) -> impl Iterator<Item = u32> + '_ {
        self.primary.pid().into_iter().chain(self.replica.pid())
    }

    pub(crate) async fn stop(&mut self) {
        self.replica.stop().await;
        self.primary.stop().await;
    }
}

/// The port of the replication proxy `link`, for `--replicaof`.
fn port_of(link: &Proxy) -> Result<String, StackError> {
    match link.address.rsplit_once(':') {
        Some((_, port)) => Ok(port.to_string()),
        None => Err(StackError::ProxyAddress(link.address.clone())),
    }
}

/// A replica syncs at once: by default a primary waits 5 s for more
/// replicas before a diskless transfer.
fn no_sync_delay() -> Vec<String> {
    vec!["--repl-diskless-sync-delay".into(), "0".into()]
}

/// Whether one replica acknowledges a write made on the server at `url`.
async fn acknowledged(url: &str) -> bool {
    let ask = async {
        let client = redis::Client::open(url).ok()?;
        let mut conn = client.get_multiplexed_async_connection().await.ok()?;
        let (_, acked): ((), i64) = redis::pipe()
            .cmd("SET")
            .arg("rlbench:replication-check")
            .arg(1)
            .cmd("WAIT")
            .arg(1)
            .arg(200)
            .query_async(&mut conn)
            .await
            .ok()?;
        Some(acked >= 1)
    };
    tokio::time::timeout(Duration::from_millis(500), ask)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

async fn info(url: &str, section: &str) -> Option<String> {
    let ask = async {
        let client = redis::Client::open(url).ok()?;
        let mut conn = client.get_multiplexed_async_connection().await.ok()?;
        redis::cmd("INFO")
            .arg(section)
            .query_async::<String>(&mut conn)
            .await
            .ok()
    };
    tokio::time::timeout(Duration::from_millis(500), ask)
        .await
        .ok()
        .flatten()
}
