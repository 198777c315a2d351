//! `[target] kind = "envoy_rls"`: an Envoy rate-limit service, asked
//! `ShouldRateLimit` over gRPC with the key in a descriptor of `domain`.

use super::connection::{tls, urls, wall_clock};
use crate::load::request::Template;
use crate::scenario::raw::RawTarget;
use crate::scenario::spec::ExternalTarget;
use crate::scenario::validate::source::{Result, Source};
use hyper::Method;
use toml::Spanned;

/// `kind = "envoy_rls"`: `urls` of the service (gRPC over HTTP/2, `https://`
/// with the TLS keys), `domain` (required) and `descriptor` (the entry
/// whose value is the key, default `customer_id`). Every answer is the
/// service's: OK admits, OVER_LIMIT limits.
pub(super) fn rls(src: &Source, raw: &Spanned<RawTarget>) -> Result<ExternalTarget> {
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
        fresh_keys: t.fresh_keys.as_ref().map_or(true, |v| *v.get_ref()),
        allow_remote,
    })
}
