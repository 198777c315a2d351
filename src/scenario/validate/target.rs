//! `[target]`: which endpoints the load goes to. `kind = "reference"` (the
//! default) is rlbench's own reference API; `kind = "external"` is any HTTP
//! endpoints on this machine (others only with `allow_remote = true`), with the request (method, path, headers, how
//! the key is sent) and what "limited" looks like stated here;
//! `kind = "envoy_rls"` is an Envoy rate-limit service (gRPC), asked
//! `ShouldRateLimit` with the key in a descriptor of `domain`.

mod connection;
mod request;
mod rls;

pub(crate) use connection::urls;

use super::source::{Result, Source};
use crate::load::request::Template;
use crate::scenario::raw::RawTarget;
use crate::scenario::spec::ExternalTarget;
use connection::{tls, wall_clock};
use hyper::Method;
use toml::Spanned;

const KEYS: &str = "kind, urls, path, method, headers, key_header, key_template, \
                    limited_status, one_clock, wall_clock, allow_remote, ca, cert, key, insecure, \
                    body, body_file, content_type, http, keep_alive";

/// `None` for the reference API.
pub(super) fn target(src: &Source, raw: &Spanned<RawTarget>) -> Result<Option<ExternalTarget>> {
    let t = raw.get_ref();
    match t.kind.get_ref().as_str() {
        "external" => external(src, raw).map(Some),
        "envoy_rls" => rls::rls(src, raw).map(Some),
        "reference" => reference(src, t).map(|()| None),
        other => Err(src.at(
            &t.kind,
            format!("unknown target kind {other:?}, expected reference, external or envoy_rls"),
        )),
    }
}

/// `kind = "reference"`: rlbench's own reference API, which takes none of
/// the other kinds' keys.
fn reference(src: &Source, t: &RawTarget) -> Result<()> {
    let stray = [
        t.urls.as_ref().map(|v| v.span()),
        t.path.as_ref().map(|v| v.span()),
        t.method.as_ref().map(|v| v.span()),
        t.headers.as_ref().map(|v| v.span()),
        t.key_header.as_ref().map(|v| v.span()),
        t.key_template.as_ref().map(|v| v.span()),
        t.limited_status.as_ref().map(|v| v.span()),
        t.allow_remote.as_ref().map(|v| v.span()),
        t.ca.as_ref().map(|v| v.span()),
        t.cert.as_ref().map(|v| v.span()),
        t.key.as_ref().map(|v| v.span()),
        t.insecure.as_ref().map(|v| v.span()),
        t.body.as_ref().map(|v| v.span()),
        t.body_file.as_ref().map(|v| v.span()),
        t.content_type.as_ref().map(|v| v.span()),
        t.http.as_ref().map(|v| v.span()),
        t.keep_alive.as_ref().map(|v| v.span()),
        t.domain.as_ref().map(|v| v.span()),
        t.descriptor.as_ref().map(|v| v.span()),
    ];
    if let Some(span) = stray.into_iter().flatten().next() {
        return Err(src.error(
            Some(span),
            "only kind = \"external\" takes these keys (the reference API's are in [cluster])",
        ));
    }
    Ok(())
}

/// `kind = "external"`: HTTP endpoints, with the request they are sent
/// and what "limited" looks like.
fn external(src: &Source, raw: &Spanned<RawTarget>) -> Result<ExternalTarget> {
    let t = raw.get_ref();
    let rls_only = [&t.domain, &t.descriptor];
    if let Some(v) = rls_only.into_iter().flatten().next() {
        return Err(src.at(v, "domain and descriptor belong to kind = \"envoy_rls\""));
    }
    let path = t.path.as_ref().map(|p| {
        let v = p.get_ref();
        if v.starts_with('/') && v.parse::<hyper::http::uri::PathAndQuery>().is_ok() {
            Ok(v.as_str())
        } else {
            Err(src.at(
                p,
                format!("path {v:?}: expected a path like \"/api/limited\""),
            ))
        }
    });
    let path = path.transpose()?;
    let allow_remote = t.allow_remote.as_ref().is_some_and(|v| *v.get_ref());
    let urls = match &t.urls {
        Some(list) => urls(src, list, path, allow_remote)?,
        None => {
            return Err(src.error(
                Some(raw.span()),
                format!("an external target needs \"urls\" (its keys: {KEYS})"),
            ))
        }
    };
    let method = match &t.method {
        Some(m) => crate::target::method(m.get_ref())
            .ok_or_else(|| src.at(m, format!("{:?} is not an HTTP method", m.get_ref())))?,
        None => Method::GET,
    };
    let headers = request::headers(src, t)?;
    let (key_header, key_affix) = request::key_header(src, t)?;
    let limited = request::limited(src, t)?;
    let wall_clock_here = wall_clock(src, t)?;
    let tls = tls(src, t)?;
    let body = request::body(src, t)?;
    Ok(ExternalTarget {
        tls,
        urls,
        wall_clock_here,
        path: path.map(str::to_string),
        template: Template {
            method,
            headers,
            key_header,
            key_affix,
            key_place: Default::default(),
            body,
            wire: None,
            sources: None,
            limited,
            http: request::http(src, t)?,
            keep_alive: request::keep_alive(src, t)?,
            beside: Vec::new(),
            // Set per run and arm (`plan`).
            key_tag: None,
        },
        one_clock: t.one_clock.as_ref().is_some_and(|v| *v.get_ref()),
        fresh_keys: t.fresh_keys.as_ref().map_or(true, |v| *v.get_ref()),
        allow_remote,
    })
}
