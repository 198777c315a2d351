//! The command line's flags turned into the commands' checked inputs
//! (low-level args → high-level ones). clap reads every value (cli/values.rs);
//! what is left here is what spans flags: open or closed loop, keys that
//! need a key header, the gate's defaults, the inline policy.

use crate::app::commands::attack::Attack;
use crate::app::commands::run::Request;
use crate::cli::attack::AttackArgs;
use crate::cli::probe::ProbeArgs;
use crate::cli::run::{AgentArgs, RunArgs};
use crate::distributed::agent::AgentArgs as AgentArgsChecked;
use crate::distributed::link::ClockSource;
use crate::error::Error;
use crate::gate::{Bound, Expectation, Figure};
use crate::load::request::Template;
use crate::load::schedule::Shape;
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

/// `rlbench attack`'s flags.
pub(crate) fn attack(args: &AttackArgs) -> Result<Attack, Error> {
    let policy = args
        .policy
        .as_deref()
        .map(crate::scenario::inline_policy)
        .transpose()?;
    let shape = match (args.rate, args.concurrency) {
        (Some(rate), None) => Shape::Constant { rate },
        (None, Some(concurrency)) => Shape::Closed {
            concurrency,
            think: Duration::ZERO,
        },
        // clap requires exactly one of the two.
        _ => {
            return Err(Error::input(
                "give either --rate (open loop) or --concurrency (closed loop)",
            ))
        }
    };
    let mut headers = HeaderMap::new();
    for (name, value) in &args.headers {
        headers.append(name.clone(), value.clone());
    }
    if let Some(u) = args
        .urls
        .iter()
        .find(|u| !args.allow_remote_targets && !crate::target::is_loopback(u))
    {
        let host = u.host().unwrap_or_default().to_string();
        return Err(crate::target::UrlError::NotLoopback(u.to_string(), host).into());
    }
    let body = match (&args.body, &args.body_file) {
        (Some(text), _) => Some(text.as_bytes().to_vec()),
        (None, Some(path)) => Some(
            crate::files::read(path, 1024 * 1024)
                .map_err(|e| Error::input(format!("--body-file {}: {e}", path.display())))?,
        ),
        (None, None) => None,
    };
    let body = match (body, &args.content_type) {
        (Some(bytes), content_type) => {
            let content_type = match content_type {
                Some(c) if crate::target::header_value(c).is_some() => c.clone(),
                Some(c) => {
                    return Err(Error::input(format!(
                        "--content-type {c:?}: not a header value"
                    )))
                }
                None => crate::load::request::content_type_of(&bytes).to_string(),
            };
            Some(crate::load::request::Body {
                bytes,
                content_type,
            })
        }
        (None, Some(_)) => return Err(Error::input("--content-type needs --body or --body-file")),
        (None, None) => None,
    };
    let template = Template {
        method: args.method.clone(),
        headers,
        key_header: args.key_header.clone(),
        key_affix: Default::default(),
        key_place: Default::default(),
        body,
        wire: None,
        sources: None,
        limited: args.limited_status.clone(),
        http: args.http.into(),
        keep_alive: !args.disable_keepalive,
        beside: Vec::new(),
    };
    let (mut template, key) = match &args.key_in {
        Some(text) => crate::scenario::inline_key(text, template, args.keys)
            .map_err(|e| Error::input(format!("--key-in {}", e.message)))?,
        None => (template, Default::default()),
    };
    crate::plan::identities::apply(&mut template, &key, args.keys)?;
    if template.sources.is_some() && args.concurrency.is_some() {
        return Err(Error::input(
            "--key-in source_ip needs an open loop (--rate), not --concurrency",
        ));
    }
    if args.disable_keepalive && template.http != crate::load::request::Http::H1 {
        return Err(Error::input(
            "--disable-keepalive opens a connection per request over HTTP/1.1; HTTP/2 shares \
             one by design: give --http 1.1",
        ));
    }
    if args.keys > 1 && !template.sends_key() {
        // The target would see one key; the verifier must not see several.
        return Err(Error::input(
            "--keys needs --key-header or --key-in: without one every request is the same key \
             to the limiter",
        ));
    }
    let tls = crate::load::tls::TlsSpec {
        ca: args.cacert.clone(),
        cert: args.cert.clone(),
        key: args.key.clone(),
        insecure: args.insecure,
    };
    Ok(Attack {
        tls: crate::load::tls::for_targets(&args.urls, &tls).map_err(Error::input)?,
        targets: args.urls.clone(),
        template,
        shape,
        duration: args.duration,
        keys: args.keys,
        fanout: args.fanout,
        timeout: args.timeout,
        max_in_flight: usize::try_from(args.max_in_flight).unwrap_or(usize::MAX),
        retry: args.retry.map(|max| crate::load::retry::Retry {
            max,
            ..Default::default()
        }),
        expect: attack_expect(args, policy.is_some()),
        policy: policy.as_ref().map(|(p, _)| p.clone()),
        timing: policy.map(|(_, t)| t).unwrap_or_default(),
        out: args.out.clone(),
        quiet: args.quiet,
    })
}

/// The attack's gate: the `--max-…` flags as an arm's expectations; with
/// `--policy`, no definite violation by default (a judged attack that
/// proves the limiter wrong is a failure, as in `run`).
fn attack_expect(args: &AttackArgs, judged: bool) -> Vec<Expectation> {
    let mut out = Vec::new();
    let definite = args.max_definite_violations.or(judged.then_some(0));
    if let Some(n) = definite {
        out.push(Expectation {
            key: "max_definite_violations",
            figure: Figure::DefiniteViolations,
            bound: Bound::AtMost,
            value: n as f64,
        });
    }
    if let Some(v) = args.max_false_reject_ratio {
        out.push(Expectation {
            key: "max_false_reject_ratio",
            figure: Figure::FalseRejectRatio,
            bound: Bound::AtMost,
            value: v,
        });
    }
    if let Some(v) = args.max_error_ratio {
        out.push(Expectation {
            key: "max_error_ratio",
            figure: Figure::ErrorRatio,
            bound: Bound::AtMost,
            value: v,
        });
    }
    out
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
        max_requests: args.max_requests,
        max_time: args.max_time,
        timeout: args.timeout,
        write: args.write.clone(),
        force: args.force,
        columns: None,
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
            let mut fields = jsonl::Fields::parse(fields).map_err(Error::input)?;
            if let Some(k) = &args.key {
                fields.key = k.clone();
            }
            Lines::Json(fields)
        }
        LogKind::K6 => Lines::K6(args.key.clone().unwrap_or_else(|| "key".to_string())),
        LogKind::Vegeta => Lines::Vegeta(
            crate::audit::vegeta::UrlKey::parse(&key(
                "where in each row's URL the key is: query:NAME, path:N, path:last or url",
            )?)
            .map_err(Error::input)?,
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
