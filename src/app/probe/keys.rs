//! What a limiter may key on, and how `rlbench probe` tells: every
//! candidate (the client's address, `X-Forwarded-For`, a bearer token,
//! the headers APIs key on, the user's own) gets a value in every request;
//! a phase sends one candidate fresh in each request and every other fixed.
//! When the candidate is the key, every request is a new caller and the
//! limited answers vanish; when it is not, the fixed key is limited as
//! in the baseline (everything fixed).

use crate::load::request::Template;
use hyper::header::{HeaderName, HeaderValue};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

/// One thing a limiter may key on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Candidate {
    /// A request header, its value the key.
    Header(HeaderName),
    /// `Authorization: Bearer KEY`.
    Bearer,
    /// `X-Forwarded-For: ADDRESS` (a proxy's realip, a trusted header).
    ForwardedFor,
    /// The connection's source address (nginx `$binary_remote_addr`,
    /// HAProxy `src`).
    SourceIp,
}

/// The headers APIs commonly key on, tried unless the user sends them.
const HEADERS: &[&str] = &["x-api-key", "x-customer-id", "x-user-id", "x-client-id"];

impl Candidate {
    /// In words, as the probe prints it.
    pub(crate) fn name(&self) -> String {
        match self {
            Candidate::Header(h) => format!("header {}", title(h.as_str())),
            Candidate::Bearer => "Authorization: Bearer".into(),
            Candidate::ForwardedFor => "X-Forwarded-For".into(),
            Candidate::SourceIp => "the client address".into(),
        }
    }

    /// Where a scenario sends the key: a `[target]` line or a `[load]` one.
    pub(crate) fn scenario_line(&self) -> KeyLine {
        match self {
            Candidate::Header(h) => KeyLine::Target(format!(
                "key_header = \"{}\" # the header your limiter keys on (rlbench probe)",
                title(h.as_str())
            )),
            Candidate::Bearer => KeyLine::Load(
                "key = { bearer = true }  # Authorization: Bearer KEY (rlbench probe)".into(),
            ),
            Candidate::ForwardedFor => KeyLine::Load(
                "key = { forwarded_for = true }  # X-Forwarded-For, one address per key (rlbench probe)"
                    .into(),
            ),
            Candidate::SourceIp => KeyLine::Load(
                "key = { source_ip = \"127.0.0.0/16\" }  # each key from an address of its own (rlbench probe)"
                    .into(),
            ),
        }
    }
}

/// A scenario line that says where the key goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum KeyLine {
    Target(String),
    Load(String),
}

/// `x-api-key` as people write it: `X-Api-Key`.
fn title(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// The candidates for a target: the user's own headers first, then the
/// common ones, none the user sends with `-H` (their values are theirs);
/// the client address only on IPv4 loopback (rlbench binds 127.x.y.z).
pub(crate) fn candidates(extra: &[HeaderName], sent: &[HeaderName], v4: bool) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = extra.iter().cloned().map(Candidate::Header).collect();
    for h in HEADERS {
        out.push(Candidate::Header(HeaderName::from_static(h)));
    }
    out.push(Candidate::Bearer);
    out.push(Candidate::ForwardedFor);
    if v4 {
        out.push(Candidate::SourceIp);
    }
    let mut seen = Vec::new();
    out.retain(|c| {
        let header = match c {
            Candidate::Header(h) => Some(h.clone()),
            Candidate::Bearer => Some(hyper::header::AUTHORIZATION),
            Candidate::ForwardedFor => Some(HeaderName::from_static("x-forwarded-for")),
            Candidate::SourceIp => None,
        };
        match header {
            Some(h) if sent.contains(&h) || seen.contains(&h) => false,
            Some(h) => {
                seen.push(h);
                true
            }
            None => true,
        }
    });
    out
}

/// How one phase sends the candidates: `fresh` (if any) with a new value
/// in every request of its `keys`, every other with one value of this
/// phase's (`tag`, unique to the probe and the phase; `phase` numbers
/// addresses).
pub(crate) fn template(
    base: &Template,
    all: &[Candidate],
    fresh: Option<&Candidate>,
    tag: &str,
    phase: u8,
    keys: u32,
) -> Template {
    let mut t = base.clone();
    let names = crate::load::pick::key_names(keys);
    // Fixed addresses: 10.200.PHASE.1 in X-Forwarded-For; the client
    // address of phase 0 is the default 127.0.0.1, every other its own.
    let forwarded = Ipv4Addr::new(10, 200, phase, 1);
    for c in all {
        let is_fresh = fresh == Some(c);
        match c {
            Candidate::Header(h) if is_fresh => {
                t.key_header = Some(h.clone());
                t.key_affix = (format!("{tag}-"), String::new());
            }
            Candidate::Header(h) => {
                insert(&mut t, h.clone(), &format!("{tag}-fixed"));
            }
            Candidate::Bearer if is_fresh => {
                t.key_header = Some(hyper::header::AUTHORIZATION);
                t.key_affix = (format!("Bearer {tag}-"), String::new());
            }
            Candidate::Bearer => {
                insert(
                    &mut t,
                    hyper::header::AUTHORIZATION,
                    &format!("Bearer {tag}-fixed"),
                );
            }
            Candidate::ForwardedFor if is_fresh => {
                t.key_header = Some(HeaderName::from_static("x-forwarded-for"));
                t.wire = Some(Arc::new(
                    names
                        .iter()
                        .enumerate()
                        .map(|(i, k)| (k.clone(), nth(Ipv4Addr::new(10, 100, 0, 1), i).to_string()))
                        .collect(),
                ));
            }
            Candidate::ForwardedFor => {
                insert(
                    &mut t,
                    HeaderName::from_static("x-forwarded-for"),
                    &forwarded.to_string(),
                );
            }
            Candidate::SourceIp => {
                // Fresh: 127.2.0.0/16, one per key; fixed: 127.1.PHASE.1.
                let address = |i: usize| {
                    if is_fresh {
                        nth(Ipv4Addr::new(127, 2, 0, 1), i)
                    } else {
                        Ipv4Addr::new(127, 1, phase, 1)
                    }
                };
                let sources: HashMap<String, IpAddr> = names
                    .iter()
                    .enumerate()
                    .map(|(i, k)| (k.clone(), IpAddr::V4(address(i))))
                    .collect();
                t.sources = Some(Arc::new(sources));
            }
        }
    }
    // A phase with no fresh header still sends its one key somewhere
    // harmless: the key's name is not a candidate's.
    t
}

fn insert(t: &mut Template, name: HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        t.headers.insert(name, v);
    }
}

fn nth(first: Ipv4Addr, i: usize) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(first).wrapping_add(i as u32))
}

/// The candidates that moved the limited answers: limited in the
/// baseline (a share of at least `base`), and in their own phase at most
/// a quarter of that.
pub(crate) fn moved(base: f64, phases: &[(Candidate, f64)]) -> Vec<Candidate> {
    if base < 0.2 {
        return Vec::new();
    }
    phases
        .iter()
        .filter(|(_, share)| *share <= base / 4.0)
        .map(|(c, _)| c.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::Method;

    #[test]
    fn the_users_headers_are_never_overwritten_and_theirs_come_first() {
        let mine = HeaderName::from_static("x-tenant");
        let sent = [hyper::header::AUTHORIZATION];
        let c = candidates(std::slice::from_ref(&mine), &sent, true);
        assert_eq!(c[0], Candidate::Header(mine));
        assert!(!c.contains(&Candidate::Bearer));
        assert!(c.contains(&Candidate::SourceIp));
        assert!(!candidates(&[], &[], false).contains(&Candidate::SourceIp));
        // A header given twice is tried once.
        let twice = candidates(&[HeaderName::from_static("x-api-key")], &[], true);
        assert_eq!(
            twice
                .iter()
                .filter(|c| **c == Candidate::Header(HeaderName::from_static("x-api-key")))
                .count(),
            1
        );
    }

    #[test]
    fn a_phase_sends_one_candidate_fresh_and_every_other_fixed() {
        let base = Template::new(Method::GET, None);
        let all = candidates(&[], &[], true);
        let t = template(&base, &all, Some(&Candidate::Bearer), "p-ab-3", 3, 100);
        assert_eq!(t.key_header, Some(hyper::header::AUTHORIZATION));
        assert_eq!(t.key_affix.0, "Bearer p-ab-3-");
        assert_eq!(t.headers["x-api-key"], "p-ab-3-fixed");
        assert_eq!(t.headers["x-forwarded-for"], "10.200.3.1");
        let sources = t.sources.unwrap();
        assert_eq!(sources.len(), 100);
        assert!(sources.values().all(|a| *a == Ipv4Addr::new(127, 1, 3, 1)));
        // Fresh addresses: one per key.
        let t = template(&base, &all, Some(&Candidate::SourceIp), "p", 4, 50);
        let mut addresses: Vec<_> = t.sources.unwrap().values().copied().collect();
        addresses.sort();
        addresses.dedup();
        assert_eq!(addresses.len(), 50);
        assert_eq!(t.headers["authorization"], "Bearer p-fixed");
        // Fresh X-Forwarded-For: an address per key in its place.
        let t = template(&base, &all, Some(&Candidate::ForwardedFor), "p", 5, 10);
        assert_eq!(t.wire.unwrap().len(), 10);
        assert!(!t.headers.contains_key("x-forwarded-for"));
    }

    #[test]
    fn a_candidate_moved_the_limits_when_its_phase_lost_them() {
        let a = Candidate::Header(HeaderName::from_static("x-api-key"));
        let phases = vec![(a.clone(), 0.0), (Candidate::Bearer, 0.6)];
        assert_eq!(moved(0.6, &phases), vec![a.clone()]);
        // The boundary: a quarter of the baseline still counts.
        assert_eq!(moved(0.6, &[(a.clone(), 0.15)]), vec![a.clone()]);
        assert!(moved(0.6, &[(a.clone(), 0.16)]).is_empty());
        // A baseline barely limited tells nothing.
        assert!(moved(0.1, &[(a, 0.0)]).is_empty());
    }

    #[test]
    fn names_read_as_people_write_them() {
        assert_eq!(
            Candidate::Header(HeaderName::from_static("x-api-key")).name(),
            "header X-Api-Key"
        );
        assert!(matches!(
            Candidate::SourceIp.scenario_line(),
            KeyLine::Load(l) if l.starts_with("key = { source_ip")
        ));
    }
}
