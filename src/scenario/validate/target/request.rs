//! What an HTTP target is sent: its headers, where the key header goes,
//! the statuses that mean limited, the body, HTTP version and keep-alive.

use crate::load::request::DEFAULT_LIMITED;
use crate::scenario::raw::RawTarget;
use crate::scenario::validate::source::{Result, Source};
use hyper::header::{HeaderMap, HeaderName};

/// `headers`: every one sent with each request.
pub(super) fn headers(src: &Source, t: &RawTarget) -> Result<HeaderMap> {
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
    Ok(headers)
}

/// `key_header`, and `key_template`: what goes around the key in it.
pub(super) fn key_header(
    src: &Source,
    t: &RawTarget,
) -> Result<(Option<HeaderName>, (String, String))> {
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
    Ok((key_header, key_affix))
}

/// `limited_status`: the statuses that mean limited.
pub(super) fn limited(src: &Source, t: &RawTarget) -> Result<Vec<u16>> {
    Ok(match &t.limited_status {
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
    })
}

/// `keep_alive = false`: each request on a connection of its own, over
/// HTTP/1.1 (HTTP/2's streams share one by design).
pub(super) fn keep_alive(src: &Source, t: &RawTarget) -> Result<bool> {
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

/// `http = "1.1" | "2" | "auto"` (default 1.1).
pub(super) fn http(src: &Source, t: &RawTarget) -> Result<crate::load::request::Http> {
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
pub(super) fn body(src: &Source, t: &RawTarget) -> Result<Option<crate::load::request::Body>> {
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
