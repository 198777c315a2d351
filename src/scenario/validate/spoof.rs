//! `[load] principals`, `spoof` and `forged_keys`: true callers that send
//! under forged identities, and `[[arms]] key_from`, where an arm's
//! reference API finds the key while they do.

use super::source::{Result, Source};
use crate::scenario::raw::{RawArm, RawLoad};
use crate::scenario::spec::{JwtSecret, KeyFrom, KeySpec, Spoof, MAX_FORGED};
use toml::Spanned;

const SPOOFS: &str = "\"rotate_key\", \"forwarded_for\" or a list of them";

/// Forged identities per principal when `forged_keys` is not given.
const DEFAULT_FORGED: u32 = 100;

/// The spoofing `[load]` asks for (`None`: none), with the principals'
/// count, which replaces `keys`.
pub(super) fn spoof(src: &Source, load: &Spanned<RawLoad>) -> Result<Option<(Spoof, u32)>> {
    let l = load.get_ref();
    let (principals, spoof) = match (&l.principals, &l.spoof) {
        (None, None) => {
            if let Some(f) = &l.forged_keys {
                return Err(src.at(f, "forged_keys needs principals and spoof"));
            }
            return Ok(None);
        }
        (Some(p), None) => {
            return Err(src.at(
                p,
                format!("principals needs spoof: how they forge their identity ({SPOOFS})"),
            ))
        }
        (None, Some(s)) => {
            return Err(src.at(
                s,
                "spoof needs principals: how many true callers send under forged identities",
            ))
        }
        (Some(p), Some(s)) => (p, s),
    };
    if let Some(k) = &l.keys {
        return Err(src.at(
            k,
            "keys and principals both count the callers: give principals (each sends under \
             forged_keys identities)",
        ));
    }
    let principals = src.count(principals, "principals", 1, 100_000)? as u32;
    let forged_keys = match &l.forged_keys {
        Some(f) => src.count(f, "forged_keys", 2, 100_000)? as u32,
        None => DEFAULT_FORGED,
    };
    if u64::from(principals) * u64::from(forged_keys) > u64::from(MAX_FORGED) {
        let at = l
            .forged_keys
            .as_ref()
            .map_or(principals_span(l), |f| f.span());
        return Err(src.error(
            Some(at),
            format!(
                "principals × forged_keys = {} identities; at most {MAX_FORGED}",
                u64::from(principals) * u64::from(forged_keys)
            ),
        ));
    }
    let names: Vec<&str> = match spoof.get_ref() {
        toml::Value::String(one) => vec![one.as_str()],
        toml::Value::Array(list) if !list.is_empty() => list
            .iter()
            .map(|v| v.as_str())
            .collect::<Option<_>>()
            .ok_or_else(|| src.at(spoof, format!("spoof: expected {SPOOFS}")))?,
        _ => return Err(src.at(spoof, format!("spoof: expected {SPOOFS}"))),
    };
    let mut out = Spoof {
        forged_keys,
        rotate_key: false,
        forwarded_for: false,
    };
    for name in names {
        match name {
            "rotate_key" => out.rotate_key = true,
            "forwarded_for" => out.forwarded_for = true,
            other => {
                return Err(src.at(spoof, format!("unknown spoof {other:?}, expected {SPOOFS}")))
            }
        }
    }
    Ok(Some((out, principals)))
}

fn principals_span(l: &RawLoad) -> std::ops::Range<usize> {
    l.principals.as_ref().map_or(0..0, |p| p.span())
}

/// What the load's key may be under spoofing: the key header's own (a
/// forged key goes there) or a JWT (each principal's, sent beside it).
pub(super) fn load_key(src: &Source, at: &Spanned<impl Sized>, key: &KeySpec) -> Result<()> {
    match key {
        KeySpec::InTemplate | KeySpec::Jwt(_) => Ok(()),
        _ => Err(src.at(
            at,
            "with principals, [load] key is the key header (where a forged key goes) or a \
             jwt (each principal's own token, sent beside it); X-Forwarded-For is spoofed \
             with spoof = \"forwarded_for\"",
        )),
    }
}

/// `[[arms]] key_from` of a reference API arm.
pub(super) fn key_from(
    src: &Source,
    a: &RawArm,
    spoofing: bool,
    load_key: &KeySpec,
) -> Result<Option<KeyFrom>> {
    let Some(v) = &a.key_from else {
        return Ok(None);
    };
    if !spoofing {
        return Err(src.at(
            v,
            "key_from chooses where the reference API finds the key while [load] principals \
             spoof theirs; without them, [load] key says where it is",
        ));
    }
    match v.get_ref().as_str() {
        "header" => Ok(Some(KeyFrom::Header)),
        "forwarded_for" => Ok(Some(KeyFrom::ForwardedFor)),
        "jwt" => match load_key {
            KeySpec::Jwt(j) if matches!(j.secret, JwtSecret::Shared(_)) => Ok(Some(KeyFrom::Jwt)),
            _ => Err(src.at(
                v,
                "key_from = \"jwt\" needs [load] key = { jwt = { secret = \"…\" } } (HS256): \
                 the tokens the principals send and the replicas verify",
            )),
        },
        other => Err(src.at(
            v,
            format!("unknown key_from {other:?}, expected header, jwt or forwarded_for"),
        )),
    }
}
