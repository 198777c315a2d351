//! `[load] key = { ... }`: where each request carries its key, as the
//! limiter finds it — a header (`key_header`'s other spelling), the client
//! address (`source_ip`, one loopback address per key), a path segment, a
//! query parameter, an API key in `Authorization: Bearer`, a field of a
//! JSON body, a JWT claim (a token minted per key), or `X-Forwarded-For`.
//! The reference API takes the JWT (its replicas verify it) and
//! `X-Forwarded-For` (its replicas trust it); the rest need an external
//! target.

use super::source::{Result, Source};
use crate::load::request::KeyPlace;
use crate::scenario::raw::{RawJwt, RawKey};
use crate::scenario::spec::{ExternalTarget, JwtAlg, JwtSecret, JwtSpec, KeySpec, FORWARDED_FROM};
use hyper::header::{HeaderName, AUTHORIZATION};
use std::net::Ipv4Addr;
use std::time::Duration;
use toml::Spanned;

const CHOICES: &str = "header, source_ip, path, query, bearer, json_body, jwt or forwarded_for";

/// Puts `[load] key` into the external target's request template (and its
/// `key`), for `keys` keys. One line naming the key's place when it
/// cannot be.
pub(super) fn apply(
    src: &Source,
    raw: &Spanned<RawKey>,
    target: &mut ExternalTarget,
    key_header_given: bool,
    keys: u32,
) -> Result<KeySpec> {
    let k = raw.get_ref();
    let given: Vec<&str> = [
        k.header.as_ref().map(|_| "header"),
        k.source_ip.as_ref().map(|_| "source_ip"),
        k.path.as_ref().map(|_| "path"),
        k.query.as_ref().map(|_| "query"),
        k.bearer.as_ref().map(|_| "bearer"),
        k.json_body.as_ref().map(|_| "json_body"),
        k.jwt.as_ref().map(|_| "jwt"),
        k.forwarded_for.as_ref().map(|_| "forwarded_for"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if given.len() != 1 {
        return Err(src.at(
            raw,
            format!("key: give one of {CHOICES} (given: {})", given.len()),
        ));
    }
    if key_header_given {
        return Err(src.at(
            raw,
            "[load] key and [target] key_header both say where the key goes: give one",
        ));
    }
    let mut spec = KeySpec::InTemplate;
    let t = &mut target.template;
    let folder = std::path::Path::new(src.file)
        .parent()
        .unwrap_or(std::path::Path::new(""));
    if let Some(h) = &k.header {
        t.key_header = Some(header(src, h)?);
    } else if let Some(cidr) = &k.source_ip {
        let (first, count) = addresses(src, cidr, keys)?;
        spec = KeySpec::SourceIp { first, count };
    } else if let Some(p) = &k.path {
        if target.path.is_some() {
            return Err(src.at(p, "key path and [target] path both give the path: give one"));
        }
        let v = p.get_ref();
        match v.split_once("{key}") {
            Some((before, after))
                if before.starts_with('/')
                    && !after.contains("{key}")
                    && format!("{before}k{after}")
                        .parse::<hyper::http::uri::PathAndQuery>()
                        .is_ok_and(|pq| pq.query().is_none()) =>
            {
                t.key_place = KeyPlace::Path {
                    before: before.to_string(),
                    after: after.to_string(),
                };
            }
            _ => {
                return Err(src.at(
                    p,
                    format!("path {v:?}: expected a path with {{key}} once, e.g. \"/users/{{key}}/transfers\""),
                ))
            }
        }
    } else if let Some(q) = &k.query {
        let v = q.get_ref();
        if v.is_empty()
            || !v
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
        {
            return Err(src.at(
                q,
                format!("query {v:?}: expected a parameter name like \"api_key\""),
            ));
        }
        t.key_place = KeyPlace::Query(v.clone());
    } else if let Some(b) = &k.bearer {
        if !b.get_ref() {
            return Err(src.at(
                b,
                format!("bearer = false sends no key: give one of {CHOICES}"),
            ));
        }
        t.key_header = Some(AUTHORIZATION);
        t.key_affix = ("Bearer ".into(), String::new());
    } else if let Some(f) = &k.json_body {
        if f.get_ref().is_empty() {
            return Err(src.at(f, "json_body: name the field, e.g. \"username\""));
        }
        if let Some(body) = &t.body {
            if serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&body.bytes)
                .is_err()
            {
                return Err(src.at(f, "json_body needs [target] body to be a JSON object"));
            }
        }
        t.key_place = KeyPlace::JsonBody(f.get_ref().clone());
    } else if let Some(j) = &k.jwt {
        spec = KeySpec::Jwt(jwt(src, j, folder)?);
        t.key_header = Some(AUTHORIZATION);
        t.key_affix = ("Bearer ".into(), String::new());
    } else if let Some(x) = &k.forwarded_for {
        if !x.get_ref() {
            return Err(src.at(
                x,
                format!("forwarded_for = false sends no key: give one of {CHOICES}"),
            ));
        }
        addresses_fit(src, raw, keys, FORWARDED_FROM, 1 << 24)?;
        spec = KeySpec::ForwardedFor;
        t.key_header = Some(HeaderName::from_static("x-forwarded-for"));
    }
    Ok(spec)
}

fn header(src: &Source, h: &Spanned<String>) -> Result<HeaderName> {
    crate::target::header_name(h.get_ref())
        .ok_or_else(|| src.at(h, format!("{:?} is not a header name", h.get_ref())))
}

/// `[load] key` for the reference API, which keys on its header, a JWT
/// it verifies (its replicas get the load's HS256 secret) or a trusted
/// X-Forwarded-For; the other places need an external target.
pub(super) fn for_reference(src: &Source, raw: &Spanned<RawKey>, keys: u32) -> Result<KeySpec> {
    let template = crate::load::request::Template::new(hyper::Method::POST, None);
    let mut placeholder = ExternalTarget::around(template);
    let spec = apply(src, raw, &mut placeholder, false, keys)?;
    match &spec {
        KeySpec::ForwardedFor => Ok(spec),
        KeySpec::Jwt(j) if matches!(j.secret, JwtSecret::Shared(_)) => Ok(spec),
        _ => Err(src.at(
            raw,
            "the reference API keys on [cluster] key_header, a JWT it verifies (key = { jwt = \
             { secret = \"…\" } }, HS256) or X-Forwarded-For (key = { forwarded_for = true }); \
             the other key places need kind = \"external\"",
        )),
    }
}

/// A loopback IPv4 block with room for `keys` addresses: its first usable
/// address (the block's own is skipped) and how many.
fn addresses(src: &Source, cidr: &Spanned<String>, keys: u32) -> Result<(Ipv4Addr, u32)> {
    let v = cidr.get_ref();
    let bad = || {
        src.at(
            cidr,
            format!("source_ip {v:?}: expected a loopback IPv4 block like \"127.0.0.0/16\""),
        )
    };
    let (ip, bits) = v.split_once('/').ok_or_else(bad)?;
    let ip: Ipv4Addr = ip.parse().map_err(|_| bad())?;
    let bits: u32 = bits.parse().map_err(|_| bad())?;
    if !ip.is_loopback() || !(8..=31).contains(&bits) {
        return Err(bad());
    }
    let size = 1u32 << (32 - bits);
    let base = u32::from(ip) & !(size - 1);
    let first = Ipv4Addr::from(base + 1);
    addresses_fit(src, cidr, keys, first, size - 2)?;
    Ok((first, keys))
}

fn addresses_fit<T>(
    src: &Source,
    at: &Spanned<T>,
    keys: u32,
    first: Ipv4Addr,
    room: u32,
) -> Result<()> {
    if keys > room {
        return Err(src.at(
            at,
            format!("{keys} keys need {keys} addresses from {first}; there is room for {room}"),
        ));
    }
    Ok(())
}

fn jwt(src: &Source, raw: &Spanned<RawJwt>, folder: &std::path::Path) -> Result<JwtSpec> {
    let j = raw.get_ref();
    let claim = match &j.claim {
        Some(c) if !c.get_ref().is_empty() => c.get_ref().clone(),
        Some(c) => return Err(src.at(c, "jwt claim: name it, e.g. \"sub\"")),
        None => "sub".to_string(),
    };
    let alg = match j.alg.as_ref().map(|a| (a, a.get_ref().as_str())) {
        None | Some((_, "HS256")) => JwtAlg::Hs256,
        Some((_, "RS256")) => JwtAlg::Rs256,
        Some((a, other)) => {
            return Err(src.at(a, format!("jwt alg {other:?}: expected HS256 or RS256")))
        }
    };
    let secret = match (alg, &j.secret, &j.key) {
        (JwtAlg::Hs256, Some(s), None) if s.get_ref().len() >= 16 => {
            JwtSecret::Shared(s.get_ref().clone())
        }
        (JwtAlg::Hs256, Some(s), None) => {
            return Err(src.at(s, "jwt secret: at least 16 characters"))
        }
        (JwtAlg::Rs256, None, Some(k)) => JwtSecret::PrivateKey(folder.join(k.get_ref())),
        (JwtAlg::Hs256, _, _) => {
            return Err(src.at(raw, "jwt with alg HS256 needs secret (and no key)"))
        }
        (JwtAlg::Rs256, _, _) => {
            return Err(src.at(
                raw,
                "jwt with alg RS256 needs key, a PEM private key file (and no secret)",
            ))
        }
    };
    let expires_in = match &j.expires_in {
        Some(e) => src.duration(e)?,
        None => Duration::from_secs(3600),
    };
    Ok(JwtSpec {
        claim,
        alg,
        secret,
        expires_in,
    })
}
