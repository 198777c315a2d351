//! `rlbench replica` (hidden): runs as one replica of the reference API;
//! rlbench starts these itself and reads the address each announces.

use crate::error::Error;
use reference_api::{replica, ReplicaConfig};
use std::io::Write;
use std::net::SocketAddr;

/// The config from `--config-json` or the environment (how rlbench passes
/// it), then the replica until its shutdown signal.
pub(crate) async fn run(
    config_json: Option<String>,
    listen: Option<SocketAddr>,
) -> Result<(), Error> {
    let Some(config_json) = config_json.or_else(|| std::env::var(replica::CONFIG_ENV).ok()) else {
        return Err(Error::input(format!(
            "replica: no config (--config-json or {})",
            replica::CONFIG_ENV
        )));
    };
    let config: ReplicaConfig = serde_json::from_str(&config_json)
        .map_err(|e| Error::input(format!("replica config: {e}")))?;
    // The announcement is read line by line by the rlbench that started
    // the replica (stack/replica.rs): written and flushed at once.
    let announce = |addr: SocketAddr| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}http://{addr}", replica::READY_PREFIX);
        let _ = out.flush();
    };
    let listen = listen.unwrap_or_else(|| ([127, 0, 0, 1], 0).into());
    replica::run(config, listen, announce, replica::shutdown_signal(true))
        .await
        .map_err(|e| Error::environment(e.to_string()))
}

/// `rlbench replica` (hidden): one replica until its shutdown signal.
pub(super) async fn execute(
    config_json: Option<String>,
    listen: Option<SocketAddr>,
) -> Result<super::ending::Ending, Error> {
    run(config_json, listen).await?;
    Ok(super::ending::Ending::passed())
}
