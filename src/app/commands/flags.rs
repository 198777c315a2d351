//! The command line's flags turned into the commands' checked inputs
//! (low-level args → high-level ones). clap reads every value (cli/values.rs);
//! what is left here is what spans flags: open or closed loop, keys that
//! need a key header, the gate's defaults, the inline policy.

mod attack;

pub(crate) use attack::attack;

use crate::app::commands::run::Request;
use crate::cli::probe::ProbeArgs;
use crate::cli::run::{AgentArgs, RunArgs};
use crate::distributed::agent::AgentArgs as AgentArgsChecked;
use crate::distributed::link::ClockSource;
use crate::error::Error;
use crate::gate::{Bound, Expectation, Figure};
use crate::load::request::Template;
use hyper::header::HeaderMap;
use std::time::Duration;

/// `rlbench run`'s flags.
pub(crate) fn run(args: &RunArgs) -> Request {
    Request {
        scenario: args.scenario.clone(),
        duration: args.duration.clone(),
        arms: args.arms.clone(),
        out: args.out.clone(),
        quiet: args.quiet,
        agents: crate::app::commands::run::AgentFlags {
            agents: args.agents.map(usize::from),
            coordinator: args.coordinator.clone(),
            token: args.token.clone(),
            max_clock_uncertainty: args.max_clock_uncertainty,
            wait: args.agents_wait,
            trust_agent_clocks: args.trust_agent_clocks,
        },
        live: args.live,
    }
}

/// Set only by tests: shifts an agent's own wall clock by so many ms (what
/// it trusts when told not to measure its offset).
pub(crate) const TEST_CLOCK_SHIFT_ENV: &str = "RLBENCH_TEST_AGENT_CLOCK_SHIFT_MS";

/// `rlbench agent`'s flags, with its name and segment from a Kubernetes
/// Indexed Job's environment when it was given no name.
pub(crate) fn agent(args: &AgentArgs) -> Result<AgentArgsChecked, Error> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let index = match (&args.name, env("JOB_COMPLETION_INDEX")) {
        (None, Some(i)) => {
            let i: usize = i.parse().map_err(|_| {
                Error::input(format!("JOB_COMPLETION_INDEX={i:?}: expected a number"))
            })?;
            let of: usize = env("RLBENCH_AGENTS")
                .ok_or_else(|| {
                    Error::input(
                        "JOB_COMPLETION_INDEX is set but RLBENCH_AGENTS (the Job's completions) is not",
                    )
                })?
                .parse()
                .map_err(|_| Error::input("RLBENCH_AGENTS: expected the number of agents"))?;
            if i >= of {
                return Err(Error::input(format!(
                    "JOB_COMPLETION_INDEX={i} is not below RLBENCH_AGENTS={of}"
                )));
            }
            Some((i, of))
        }
        _ => None,
    };
    let name = match (&args.name, index) {
        (Some(n), _) => n.clone(),
        (None, Some((i, _))) => format!("index-{i}"),
        (None, None) => format!("{}-{}", host_name(), std::process::id()),
    };
    if name.is_empty()
        || name.len() > 128
        || name.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(Error::input(format!(
            "--name {name:?}: up to 128 characters, no spaces"
        )));
    }
    let shift_ms: i64 = match env(TEST_CLOCK_SHIFT_ENV) {
        Some(v) => v
            .parse()
            .map_err(|_| Error::input(format!("{TEST_CLOCK_SHIFT_ENV}={v:?}: expected ms")))?,
        None => 0,
    };
    Ok(AgentArgsChecked {
        coordinator: crate::scenario::coordinator_url(&args.coordinator)
            .map_err(|e| Error::input(format!("--coordinator (or RLBENCH_COORDINATOR): {e}")))?,
        token: crate::distributed::seal::token_from(args.token.as_deref())?,
        allow_remote_targets: args.allow_remote_targets,
        idle_timeout: args.idle_timeout,
        name,
        index,
        once: args.once,
        clock: ClockSource::OwnWall {
            shift_us: shift_ms * 1_000,
        },
    })
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "agent".to_string())
}

/// `rlbench probe`'s flags: loopback targets only (probing is load).
pub(crate) fn probe(args: &ProbeArgs) -> Result<crate::app::commands::probe::Probe, Error> {
    let targets = args
        .urls
        .iter()
        .map(|u| crate::target::loopback_url(&u.to_string()).map_err(Error::from))
        .collect::<Result<Vec<_>, _>>()?;
    let mut template = Template::new(args.method.clone(), None);
    template.headers = args.headers.iter().cloned().collect::<HeaderMap>();
    template.limited = args.limited_status.clone();
    template.http = args.http.into();
    let tls_spec = args.tls.spec();
    let tls = crate::load::tls::for_targets(&targets, &tls_spec)?;
    let declared = args
        .policy
        .as_deref()
        .map(crate::scenario::inline_policy)
        .transpose()
        .map_err(|e| Error::input(format!("--policy: {e}")))?;
    Ok(crate::app::commands::probe::Probe {
        targets,
        template,
        key_headers: args.key_header.clone(),
        declared,
        declared_text: args.policy.clone(),
        max_requests: args.max_requests,
        max_time: args.max_time,
        timeout: args.timeout,
        write: args
            .write
            .as_deref()
            .map(|w| crate::app::commands::init::Destination::parse(w, args.force))
            .transpose()
            .map_err(|e| Error::input(format!("--write {}", e.message)))?,
        force: args.force,
        columns: None,
        tls_spec,
        tls,
    })
}

/// `rlbench audit`'s flags: each kind of log with what it needs.
pub(crate) fn audit(
    args: &crate::cli::audit::AuditArgs,
) -> Result<crate::app::commands::audit::Audit, Error> {
    use crate::app::commands::audit::Lines;
    use crate::audit::{jsonl, nginx};
    use crate::cli::audit::LogKind;
    let (policy, timing) = crate::scenario::inline_policy(&args.policy)
        .map_err(|e| Error::input(format!("--policy: {}", e.message)))?;
    let kind = match args.kind {
        LogKind::Nginx => "nginx",
        LogKind::Haproxy => "haproxy",
        LogKind::Envoy => "envoy",
        LogKind::Jsonl => "jsonl",
        LogKind::K6 => "k6",
        LogKind::Vegeta => "vegeta",
    };
    if args.log_format.is_some() && args.kind != LogKind::Nginx {
        return Err(Error::input(format!(
            "--log-format is nginx's log_format; --log {kind} does not take it"
        )));
    }
    if args.fields.is_some() && args.kind != LogKind::Jsonl {
        return Err(Error::input(format!(
            "--fields names the fields of --log jsonl; --log {kind} does not take it"
        )));
    }
    let key = |what: &str| {
        args.key
            .clone()
            .ok_or_else(|| Error::input(format!("--log {kind} needs --key: {what}")))
    };
    let lines = match args.kind {
        LogKind::Nginx => {
            let format = args.log_format.as_deref().ok_or_else(|| {
                Error::input(
                    "--log nginx needs --log-format '…': the log_format the logs were written with",
                )
            })?;
            let key = key("the variable the limiter keys on, like '$http_x_api_key'")?;
            Lines::Nginx(
                nginx::Format::new(format, &key).map_err(|e| Error::input(format!("--log-format: {e}")))?,
            )
        }
        LogKind::Haproxy => Lines::Haproxy(match &args.key {
            None => 1,
            Some(k) => k.parse::<usize>().ok().filter(|n| (1..=64).contains(n)).ok_or_else(|| {
                Error::input(format!(
                    "--key {k:?}: HAProxy's key is a captured request header, by its place (1 for the first)"
                ))
            })?,
        }),
        LogKind::Envoy => Lines::Json(jsonl::Fields::envoy(&key(
            "the field of your json_format that logs the key, like x_api_key",
        )?)),
        LogKind::Jsonl => {
            let fields = args.fields.as_deref().ok_or_else(|| {
                Error::input("--log jsonl needs --fields 'start=…,duration_ms=…,status=…,key=…'")
            })?;
            let mut fields = jsonl::Fields::parse(fields)?;
            if let Some(k) = &args.key {
                fields.key = k.clone();
            }
            Lines::Json(fields)
        }
        LogKind::K6 => Lines::K6(args.key.clone().unwrap_or_else(|| "key".to_string())),
        LogKind::Vegeta => Lines::Vegeta(
            crate::audit::vegeta::UrlKey::parse(&key(
                "where in each row's URL the key is: query:NAME, path:N, path:last or url",
            )?)?,
        ),
    };
    let clock_bound = match (args.clock_bound, args.logs.len()) {
        (Some(b), _) => b,
        (None, 1) => Duration::ZERO,
        (None, n) => {
            return Err(Error::input(format!(
                "{n} logs: say how far their clocks may be apart with --clock-bound (0s when one machine wrote them all)"
            )))
        }
    };
    let mut expect = vec![Expectation {
        key: "max_definite_violations",
        figure: Figure::DefiniteViolations,
        bound: Bound::AtMost,
        value: args.max_definite_violations.unwrap_or(0) as f64,
    }];
    if let Some(v) = args.max_false_reject_ratio {
        expect.push(Expectation {
            key: "max_false_reject_ratio",
            figure: Figure::FalseRejectRatio,
            bound: Bound::AtMost,
            value: v,
        });
    }
    Ok(crate::app::commands::audit::Audit {
        logs: args.logs.clone(),
        lines,
        clock_bound_us: i64::try_from(clock_bound.as_micros())
            .unwrap_or(i64::MAX / 4)
            .min(86_400_000_000),
        policy,
        timing,
        limited: args.limited_status.clone(),
        skip_bad_lines: args.skip_bad_lines,
        out: args.out.clone(),
        expect,
        quiet: args.quiet,
    })
}
