//! An arm's stack brought up: its replicas (and Redis) started unless
//! interrupted first, or, for a target rlbench does not run, the target
//! checked reachable (and shaken hands with over TLS); and the load's
//! plan against what is up.

use crate::error::{Error, Exit};
use crate::interrupt::Interrupt;
use crate::load;
use crate::plan::{ArmSpec, StackSpec};
use crate::stack::Stack;
use tracing::info;

/// Set to make rlbench panic right after the first stack is up: lets a
/// test prove that a panic leaves no replica behind.
pub(crate) const PANIC_HOOK_ENV: &str = "RLBENCH_TEST_PANIC_AFTER_UP";

/// The arm's stack up (none for a target rlbench does not run, which is
/// checked reachable and, over TLS, shaken hands with), and the load's
/// plan against it.
pub(crate) async fn stack_up(
    spec: &ArmSpec,
    run_id: &str,
    interrupt: &Interrupt,
    quiet: bool,
) -> Result<(Option<Stack>, load::Plan), Error> {
    let announce = spec.announce && !quiet;
    let mut template = spec.plan.template.clone();
    let (stack, targets) = match &spec.stack {
        None => {
            crate::target::reachable(&spec.plan.targets).await?;
            template.http = crate::load::tls::handshakes(
                &spec.plan.targets,
                spec.plan.tls.as_ref(),
                template.http,
            )
            .await?;
            (None, spec.plan.targets.clone())
        }
        Some(wanted) => {
            let stack = up(spec, wanted, run_id, interrupt, !announce)
                .await
                .map_err(|e| match e.exit {
                    Exit::Interrupted => e,
                    _ => Error {
                        exit: e.exit,
                        message: format!("could not start: {}", e.message),
                    },
                })?;
            let parsed = stack
                .urls()
                .iter()
                .map(|u| format!("{u}/api/transfers").parse())
                .collect::<Result<Vec<hyper::Uri>, _>>();
            match parsed {
                Ok(targets) => (Some(stack), targets),
                Err(e) => {
                    // Down in order, not by Drop's kill.
                    let mut stack = stack;
                    stack.down().await;
                    return Err(Error::environment(format!(
                        "a replica reported a bad address: {e}"
                    )));
                }
            }
        }
    };
    let plan = load::Plan {
        targets,
        template,
        shape: spec.plan.shape.clone(),
        retry: spec.plan.retry.clone(),
        tls: spec.plan.tls.clone(),
        ..spec.plan
    };
    Ok((stack, plan))
}

/// Starts the arm's replicas (and Redis), unless interrupted first.
async fn up(
    spec: &ArmSpec,
    stack: &StackSpec,
    run_id: &str,
    interrupt: &Interrupt,
    quiet: bool,
) -> Result<Stack, Error> {
    if !quiet {
        info!(
            "arm {}: starting {} {} replica(s)",
            spec.name,
            spec.replicas,
            spec.mode.as_str()
        );
    }
    let up = Stack::up(&stack.configs, stack.managed_redis, stack.proxy, run_id);
    let stack = tokio::select! {
        biased;
        () = interrupt.wait() => return Err(Error::interrupted()),
        stack = up => stack?,
    };
    if let (false, Some(said)) = (quiet, stack.redis_said()) {
        info!("arm {}: {said}", spec.name);
    }
    if std::env::var_os(PANIC_HOOK_ENV).is_some() {
        panic!(
            "{PANIC_HOOK_ENV} is set: panicking with {} process(es) up",
            stack.pids().len()
        );
    }
    Ok(stack)
}
