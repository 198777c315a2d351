//! `rlbench attack`'s flags: the loop (open or closed), the request and
//! where its key goes, the inline policy, TLS and the gate.

use crate::app::commands::attack::Attack;
use crate::cli::attack::AttackArgs;
use crate::error::Error;
use crate::gate::{Bound, Expectation, Figure};
use crate::load::request::{Body, Template};
use crate::load::schedule::Shape;
use hyper::header::HeaderMap;
use std::time::Duration;

/// `rlbench attack`'s flags.
pub(crate) fn attack(args: &AttackArgs) -> Result<Attack, Error> {
    let policy = args
        .policy
        .as_deref()
        .map(crate::scenario::inline_policy)
        .transpose()?;
    let shape = shape(args)?;
    if let Some(u) = args
        .urls
        .iter()
        .find(|u| !args.allow_remote_targets && !crate::target::is_loopback(u))
    {
        let host = u.host().unwrap_or_default().to_string();
        return Err(crate::target::UrlError::NotLoopback(u.to_string(), host).into());
    }
    let template = request(args)?;
    let tls = args.tls.spec();
    Ok(Attack {
        tls: crate::load::tls::for_targets(&args.urls, &tls)?,
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

/// `--rate` (an open loop) or `--concurrency` (a closed one).
fn shape(args: &AttackArgs) -> Result<Shape, Error> {
    Ok(match (args.rate, args.concurrency) {
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
    })
}

/// The request each key sends: method, headers, body, the key's place
/// (`--key-header`, `--key-in`) and HTTP version, checked against the loop
/// and the keys.
fn request(args: &AttackArgs) -> Result<Template, Error> {
    let mut headers = HeaderMap::new();
    for (name, value) in &args.headers {
        headers.append(name.clone(), value.clone());
    }
    let body = body(args)?;
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
        // Fresh keys for each attack: nothing the limiter remembers.
        key_tag: (!args.same_keys).then(|| {
            crate::load::request::key_tag(
                &format!(
                    "{}-{:?}",
                    std::process::id(),
                    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)
                ),
                "attack",
            )
        }),
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
    Ok(template)
}

/// `--body` or `--body-file`, with its `--content-type`.
fn body(args: &AttackArgs) -> Result<Option<Body>, Error> {
    let body = match (&args.body, &args.body_file) {
        (Some(text), _) => Some(text.as_bytes().to_vec()),
        (None, Some(path)) => Some(
            crate::files::read(path, 1024 * 1024)
                .map_err(|e| Error::input(format!("--body-file {}: {e}", path.display())))?,
        ),
        (None, None) => None,
    };
    Ok(match (body, &args.content_type) {
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
            Some(Body {
                bytes,
                content_type,
            })
        }
        (None, Some(_)) => return Err(Error::input("--content-type needs --body or --body-file")),
        (None, None) => None,
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
