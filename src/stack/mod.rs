//! The system under test for one arm: N replica processes on free loopback
//! ports, each answering `/healthz` before the load starts. `down` stops
//! them gracefully; dropping the stack (error, panic, abandoned start)
//! kills whatever is left.

mod process;

use crate::load::client;
use process::Replica;
use reference_api::ReplicaConfig;
use std::path::PathBuf;
use std::time::Duration;
use tokio::time::Instant;

const READY_WITHIN: Duration = Duration::from_secs(10);
const HEALTHY_WITHIN: Duration = Duration::from_secs(5);

pub struct Stack {
    replicas: Vec<Replica>,
}

impl Stack {
    /// Starts one replica per config, in order; on any failure the ones
    /// already started are stopped before the error returns.
    pub async fn up(configs: &[ReplicaConfig], run_id: &str) -> Result<Stack, String> {
        let exe = current_exe()?;
        let mut stack = Stack {
            replicas: Vec::with_capacity(configs.len()),
        };
        for config in configs {
            match Replica::start(&exe, config, run_id, READY_WITHIN).await {
                Ok(replica) => stack.replicas.push(replica),
                Err(e) => {
                    stack.down().await;
                    return Err(e);
                }
            }
        }
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
        self.replicas.iter().filter_map(Replica::pid).collect()
    }

    async fn wait_healthy(&mut self) -> Result<(), String> {
        let http = client::new(1);
        let deadline = Instant::now() + HEALTHY_WITHIN;
        for replica in &mut self.replicas {
            let uri: hyper::Uri = format!("{}/healthz", replica.url)
                .parse()
                .map_err(|e| format!("replica {}: bad url {}: {e}", replica.name, replica.url))?;
            loop {
                if client::get_status(&http, &uri, Duration::from_millis(500)).await == Some(200) {
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

    /// Stops every replica (SIGTERM, grace, SIGKILL) and waits for each.
    pub async fn down(&mut self) {
        for replica in &mut self.replicas {
            replica.stop().await;
        }
        self.replicas.clear();
    }
}

fn current_exe() -> Result<PathBuf, String> {
    std::env::current_exe()
        .map_err(|e| format!("cannot find rlbench's own binary to start replicas: {e}"))
}
