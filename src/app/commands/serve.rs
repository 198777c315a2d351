//! `rlbench serve`: one arm's replicas, up until Ctrl-C, for poking at by
//! hand (curl) or with another load tool. `start` brings them up and says
//! where they are; `main` prints that and waits in `Serving::until`.

use crate::error::Error;
use crate::interrupt::Interrupt;
use crate::plan::replica_configs;
use crate::scenario;
use crate::stack::Stack;
use std::path::Path;

/// One arm's stack, up.
pub(crate) struct Serving {
    stack: Stack,
    /// Where it is and how to ask it, one line each.
    pub lines: Vec<String>,
}

impl Serving {
    /// Keeps the stack up until interrupted, then brings it down.
    pub(crate) async fn until(mut self, interrupt: &Interrupt) {
        interrupt.wait().await;
        self.stack.down().await;
    }
}

pub(crate) async fn start(
    path: &Path,
    arm: Option<&str>,
    port: Option<u16>,
) -> Result<Serving, Error> {
    let scenario = scenario::read(path)?;
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
    crate::stack::leftovers::sweep();
    let configs = replica_configs(&scenario, chosen, &run_id);
    let managed = scenario.managed_redis(chosen);
    let stack = Stack::up_on(&configs, managed, false, &run_id, port).await?;
    let mut lines = Vec::new();
    if let Some(said) = stack.redis_said() {
        lines.push(said);
    }
    lines.push(format!(
        "arm {} ({}), {}",
        chosen.name,
        chosen.mode.as_str(),
        chosen.policy.describe()
    ));
    for url in stack.urls() {
        lines.push(format!(
            "  POST {url}/api/transfers   (header {}: <key>)",
            chosen.key_header
        ));
    }
    lines.push("Ctrl-C to stop".to_string());
    Ok(Serving { stack, lines })
}

/// `rlbench serve`: one arm's stack up until Ctrl-C or SIGTERM, its URLs
/// printed.
pub(super) async fn execute(
    scenario: &Path,
    arm: Option<&str>,
    port: Option<u16>,
    out: &mut dyn std::io::Write,
) -> Result<super::ending::Ending, Error> {
    // Listening first: a Ctrl-C while the stack comes up still stops it.
    let interrupt = Interrupt::listen();
    let serving = start(scenario, arm, port).await?;
    let mut lines = serving.lines.join("\n");
    lines.push('\n');
    super::ending::write_out(out, &lines)?;
    serving.until(&interrupt).await;
    Ok(super::ending::Ending::passed())
}
