//! `rlbench serve`: one arm's replicas, up until Ctrl-C, for poking at by
//! hand (curl) or with another load tool.
#![allow(clippy::print_stdout)]

use crate::app::plan::replica_configs;
use crate::error::Error;
use crate::interrupt::Interrupt;
use crate::scenario;
use crate::stack::Stack;
use std::path::Path;

pub async fn serve(
    path: &Path,
    arm: Option<&str>,
    port: Option<u16>,
    interrupt: &Interrupt,
) -> Result<(), Error> {
    let scenario = scenario::load(path)?;
    if scenario.external.is_some() {
        return Err(Error::input(format!(
            "{}: the target is external, rlbench has nothing of its own to serve",
            path.display()
        )));
    }
    let chosen = match arm {
        None => &scenario.arms[0],
        Some(name) => scenario
            .arms
            .iter()
            .find(|a| a.name == name)
            .ok_or_else(|| {
                Error::input(format!("--arm {name:?}: no such arm in {}", path.display()))
            })?,
    };
    let run_id = format!("rlbench-serve-{}", std::process::id());
    let configs = replica_configs(&scenario, chosen, &run_id);
    let managed = scenario.needs_managed_redis(chosen);
    let mut stack = Stack::up_on(&configs, managed, false, &run_id, port)
        .await
        .map_err(Error::environment)?;
    if let Some(url) = stack.redis_url() {
        println!("redis-server at {url}");
    }
    println!(
        "arm {} ({}), {}",
        chosen.name,
        chosen.mode.as_str(),
        chosen.policy.describe()
    );
    for url in stack.urls() {
        println!(
            "  POST {url}/api/transfers   (header {}: <key>)",
            chosen.key_header
        );
    }
    println!("Ctrl-C to stop");
    interrupt.wait().await;
    stack.down().await;
    Ok(())
}
