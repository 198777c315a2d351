//! `[target]`: which endpoints the load goes to. `kind = "reference"` (the
//! default) is rlbench's own reference API; `kind = "external"` is any HTTP
//! endpoints on this machine (others only with `allow_remote = true`), with the request (method, path, headers, how
//! the key is sent) and what "limited" looks like stated here;
//! `kind = "envoy_rls"` is an Envoy rate-limit service (gRPC), asked
//! `ShouldRateLimit` with the key in a descriptor of `domain`.

use super::source::{Result, Source};
use crate::load::request::{Template, DEFAULT_LIMITED};
use crate::scenario::raw::RawTarget;
use crate::scenario::spec::ExternalTarget;
use hyper::header::HeaderMap;
use hyper::{Method, Uri};
use toml::Spanned;

const KEYS: &str = "kind, urls, path, method, headers, key_header, key_template, \
                    limited_status, one_clock, wall_clock, allow_remote, ca, cert, key, insecure, \
                    body, body_file, content_type, http, keep_alive";

/// `None` for the reference API.
pub(super) fn target(src: &Source, raw: &Spanned<RawTarget>) -> Result<Option<ExternalTarget>> {
    let t = raw.get_ref();
    match t.kind.get_ref().as_str() {
        "external" => {
            let rls_only = [&t.domain, &t.descriptor];
            if let Some(v) = rls_only.into_iter().flatten().next() {
                return Err(src.at(v, "domain and descriptor belong to kind = \"envoy_rls\""));
            }
        }
        "envoy_rls" => return rls(src, raw).map(Some),
        "reference" => {
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
            return Ok(None);
        }
        other => {
            return Err(src.at(
                &t.kind,
                format!("unknown target kind {other:?}, expected reference, external or envoy_rls"),
            ))
        }
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
    let mut headers = HeaderMap::new();
    if let Some(h) = &t.headers {
        for (name, value) in h.get_ref() {
            let n = crate::target::header_name(name)
                .ok_or_else(|| src.at(value, format!("{name:?} is not a header name")))?;
            let v = crate::target::header_value(value.get_ref()).ok_or_else(|| {
                src.at(
                    value,
                    format!("{:?} is not a header value", value.get_ref()),
                )
            })?;
            headers.append(n, v);
        }
    }
    let key_header = match &t.key_header {
        Some(h) => Some(
            crate::target::header_name(h.get_ref())
                .ok_or_else(|| src.at(h, format!("{:?} is not a header name", h.get_ref())))?,
        ),
        None => None,
    };
    let key_affix = match &t.key_template {
        None => Default::default(),
        Some(k) if key_header.is_none() => {
            return Err(src.at(k, "key_template needs key_header (the header it fills)"))
        }
        Some(k) => {
            let v = k.get_ref();
            match v.split_once("{key}") {
                Some((before, after)) if !after.contains("{key}") => {
                    (before.to_string(), after.to_string())
                }
                _ => {
                    return Err(src.at(
                        k,
                        format!(
                        "key_template {v:?}: expected \"{{key}}\" once, e.g. \"Bearer {{key}}\""
                    ),
                    ))
                }
            }
        }
    };
    let limited = match &t.limited_status {
        None => DEFAULT_LIMITED.to_vec(),
        Some(list) if list.get_ref().is_empty() => {
            return Err(src.at(list, "limited_status needs at least one status"))
        }
        Some(list) => list
            .get_ref()
            .iter()
            .map(|c| {
                src.count(
                    c,
                    "a limited status (2xx means admitted)",
                    *crate::target::LIMITED_STATUSES.start() as i64,
                    *crate::target::LIMITED_STATUSES.end() as i64,
                )
                .map(|c| c as u16)
            })
            .collect::<Result<Vec<u16>>>()?,
    };
    let wall_clock_here = wall_clock(src, t)?;
    let tls = tls(src, t)?;
    let body = body(src, t)?;
    Ok(Some(ExternalTarget {
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
            http: http(src, t)?,
            keep_alive: keep_alive(src, t)?,
            beside: Vec::new(),
        },
        one_clock: t.one_clock.as_ref().is_some_and(|v| *v.get_ref()),
        allow_remote,
    }))
}

/// `kind = "envoy_rls"`: `urls` of the service (gRPC over HTTP/2, `https://`
/// with the TLS keys), `domain` (required) and `descriptor` (the entry
/// whose value is the key, default `customer_id`). Every answer is the
/// service's: OK admits, OVER_LIMIT limits.
fn rls(src: &Source, raw: &Spanned<RawTarget>) -> Result<ExternalTarget> {
    let t = raw.get_ref();
    let http_only = [
        t.path.as_ref().map(|v| (v.span(), "path")),
        t.method.as_ref().map(|v| (v.span(), "method")),
        t.headers.as_ref().map(|v| (v.span(), "headers")),
        t.key_header.as_ref().map(|v| (v.span(), "key_header")),
        t.key_template.as_ref().map(|v| (v.span(), "key_template")),
        t.limited_status
            .as_ref()
            .map(|v| (v.span(), "limited_status")),
        t.body.as_ref().map(|v| (v.span(), "body")),
        t.body_file.as_ref().map(|v| (v.span(), "body_file")),
        t.content_type.as_ref().map(|v| (v.span(), "content_type")),
        t.http.as_ref().map(|v| (v.span(), "http")),
        t.keep_alive.as_ref().map(|v| (v.span(), "keep_alive")),
    ];
    if let Some((span, key)) = http_only.into_iter().flatten().next() {
        return Err(src.error(
            Some(span),
            format!(
                "{key} describes an HTTP request; a rate-limit service is asked ShouldRateLimit \
                 over gRPC (its keys: urls, domain, descriptor, one_clock, wall_clock, \
                 allow_remote, ca, cert, key, insecure)"
            ),
        ));
    }
    let name = |v: &Spanned<String>, what: &str| -> Result<String> {
        let s = v.get_ref();
        if s.is_empty() || s.len() > 256 || s.chars().any(char::is_control) {
            return Err(src.at(v, format!("{what} {s:?}: expected a name like \"rlbench\"")));
        }
        Ok(s.clone())
    };
    let domain =
        match &t.domain {
            Some(d) => name(d, "domain")?,
            None => return Err(src.error(
                Some(raw.span()),
                "kind = \"envoy_rls\" needs \"domain\": the rate-limit domain its limits are in",
            )),
        };
    let descriptor = match &t.descriptor {
        Some(d) => name(d, "descriptor")?,
        None => "customer_id".to_string(),
    };
    let allow_remote = t.allow_remote.as_ref().is_some_and(|v| *v.get_ref());
    let urls = match &t.urls {
        Some(list) => urls(src, list, None, allow_remote)?,
        None => {
            return Err(src.error(
                Some(raw.span()),
                "kind = \"envoy_rls\" needs \"urls\": the service's addresses, e.g. \
                 [\"http://127.0.0.1:8081\"]",
            ))
        }
    };
    let mut template = Template::new(Method::POST, None);
    template.key_place = crate::load::request::KeyPlace::Rls { domain, descriptor };
    template.http = crate::load::request::Http::H2;
    Ok(ExternalTarget {
        tls: tls(src, t)?,
        urls,
        wall_clock_here: wall_clock(src, t)?,
        path: None,
        template,
        one_clock: t.one_clock.as_ref().is_some_and(|v| *v.get_ref()),
        allow_remote,
    })
}

/// `keep_alive = false`: each request on a connection of its own, over
/// HTTP/1.1 (HTTP/2's streams share one by design).
fn keep_alive(src: &Source, t: &RawTarget) -> Result<bool> {
    match &t.keep_alive {
        Some(k) if !k.get_ref() => {
            if http(src, t)? != crate::load::request::Http::H1 {
                return Err(src.at(
                    k,
                    "keep_alive = false opens a connection per request over HTTP/1.1; \
                     HTTP/2 shares one by design: give http = \"1.1\"",
                ));
            }
            Ok(false)
        }
        _ => Ok(true),
    }
}

/// `wall_clock`: whether the limiter reads this machine's wall clock.
fn wall_clock(src: &Source, t: &RawTarget) -> Result<bool> {
    Ok(match &t.wall_clock {
        None => false,
        Some(w) => match w.get_ref().as_str() {
            "this_machine" => true,
            "other" => false,
            other => {
                return Err(src.at(
                    w,
                    format!(
                        "unknown wall_clock {other:?}, expected this_machine (the limiter, or \
                         the store it reads the time from, runs on this machine) or other"
                    ),
                ))
            }
        },
    })
}

/// `http = "1.1" | "2" | "auto"` (default 1.1).
fn http(src: &Source, t: &RawTarget) -> Result<crate::load::request::Http> {
    use crate::load::request::Http;
    Ok(match t.http.as_ref().map(|h| (h, h.get_ref().as_str())) {
        None | Some((_, "1.1")) => Http::H1,
        Some((_, "2")) => Http::H2,
        Some((_, "auto")) => Http::Auto,
        Some((h, other)) => {
            return Err(src.at(
                h,
                format!("http {other:?}: expected \"1.1\", \"2\" or \"auto\""),
            ))
        }
    })
}

/// `body` or `body_file` (relative to the scenario's folder, read now,
/// at most 1 MiB) with its `content_type` (default: JSON when it parses
/// as JSON, else text).
fn body(src: &Source, t: &RawTarget) -> Result<Option<crate::load::request::Body>> {
    let bytes = match (&t.body, &t.body_file) {
        (Some(b), None) => b.get_ref().as_bytes().to_vec(),
        (None, Some(f)) => {
            let folder = std::path::Path::new(src.file)
                .parent()
                .unwrap_or(std::path::Path::new(""));
            let path = folder.join(f.get_ref());
            crate::files::read(&path, 1024 * 1024)
                .map_err(|e| src.at(f, format!("body_file {}: {e}", path.display())))?
        }
        (Some(b), Some(_)) => return Err(src.at(b, "body and body_file: give one")),
        (None, None) => {
            if let Some(c) = &t.content_type {
                return Err(src.at(c, "content_type needs body or body_file"));
            }
            return Ok(None);
        }
    };
    let content_type = match &t.content_type {
        Some(c) => crate::target::header_value(c.get_ref())
            .map(|_| c.get_ref().clone())
            .ok_or_else(|| src.at(c, format!("{:?} is not a header value", c.get_ref())))?,
        None => crate::load::request::content_type_of(&bytes).to_string(),
    };
    Ok(Some(crate::load::request::Body {
        bytes,
        content_type,
    }))
}

/// `ca`, `cert`, `key` and `insecure`, the paths relative to the
/// scenario file's folder (the files are read when the load is set up).
fn tls(src: &Source, t: &RawTarget) -> Result<crate::load::tls::TlsSpec> {
    let folder = std::path::Path::new(src.file)
        .parent()
        .unwrap_or(std::path::Path::new(""));
    let path = |v: &Option<Spanned<String>>, what: &str| -> Result<Option<std::path::PathBuf>> {
        match v {
            None => Ok(None),
            Some(p) if p.get_ref().trim().is_empty() => {
                Err(src.at(p, format!("{what}: expected the path of a PEM file")))
            }
            Some(p) => Ok(Some(folder.join(p.get_ref()))),
        }
    };
    let spec = crate::load::tls::TlsSpec {
        ca: path(&t.ca, "ca")?,
        cert: path(&t.cert, "cert")?,
        key: path(&t.key, "key")?,
        insecure: t.insecure.as_ref().is_some_and(|v| *v.get_ref()),
    };
    match (&t.cert, &t.key) {
        (Some(c), None) => return Err(src.at(c, "cert needs key (the client certificate's key)")),
        (None, Some(k)) => return Err(src.at(k, "key needs cert (the client certificate)")),
        _ => {}
    }
    if let (Some(ca), true) = (&t.ca, spec.insecure) {
        return Err(src.at(
            ca,
            "ca and insecure = true contradict each other: insecure checks no certificate",
        ));
    }
    Ok(spec)
}

/// `http://` URLs, loopback ones unless `remote`, with `path` (when
/// given) in place of theirs.
pub(super) fn urls(
    src: &Source,
    list: &Spanned<Vec<Spanned<String>>>,
    path: Option<&str>,
    remote: bool,
) -> Result<Vec<Uri>> {
    if list.get_ref().is_empty() {
        return Err(src.at(list, "urls needs at least one URL"));
    }
    list.get_ref()
        .iter()
        .map(|u| {
            let uri = crate::target::target_url(u.get_ref(), remote)
                .map_err(|e| src.at(u, e.to_string()))?;
            match path {
                None => Ok(uri),
                Some(p) => {
                    if uri.path() != "/" {
                        return Err(src.at(
                            u,
                            format!(
                                "{:?} has a path of its own and [target] gives path {p:?}: give one",
                                u.get_ref()
                            ),
                        ));
                    }
                    let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
                    let scheme = uri.scheme_str().unwrap_or("http");
                    format!("{scheme}://{authority}{p}")
                        .parse()
                        .map_err(|e| src.at(u, format!("{:?} with path {p:?}: {e}", u.get_ref())))
                }
            }
        })
        .collect()
}
