//! What a limiter may key on, and how `rlbench probe` tells: every
//! candidate (the client's address, `X-Forwarded-For`, a bearer token,
//! the headers and query parameters APIs key on, the path, the user's own
//! headers) gets a value in every request;
//! a phase sends one candidate fresh in each request and every other fixed.
//! When the candidate is the key, every request is a new caller and the
//! limited answers vanish; when it is not, the fixed key is limited as
//! in the baseline (everything fixed).

use crate::load::request::{KeyPlace, Template};
use hyper::header::{HeaderName, HeaderValue};
use hyper::Uri;
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
    /// A query parameter of this name (nginx `$arg_api_key`).
    Query(String),
    /// The URL's path, its last segment the key (nginx `$uri`, a route
    /// `/users/{id}`): `before` + key + `after`.
    Path { before: String, after: String },
}

/// The headers APIs commonly key on, tried unless the user sends them.
const HEADERS: &[&str] = &[
    "x-api-key",
    "x-customer-id",
    "x-user-id",
    "x-client-id",
    // Varnish's vsthrottle examples, and multi-tenant APIs.
    "x-key",
    "x-tenant-id",
    // An address set by a proxy in front (nginx's `$http_x_real_ip`).
    "x-real-ip",
];

/// The query parameters APIs commonly take a key in, tried unless the
/// URL has them.
const QUERIES: &[&str] = &["api_key", "apikey"];

impl Candidate {
    /// In words, as the probe prints it.
    pub(crate) fn name(&self) -> String {
        match self {
            Candidate::Header(h) => format!("header {}", title(h.as_str())),
            Candidate::Bearer => "Authorization: Bearer".into(),
            Candidate::ForwardedFor => "X-Forwarded-For".into(),
            Candidate::SourceIp => "the client address".into(),
            Candidate::Query(name) => format!("the query parameter {name}"),
            Candidate::Path { before, after } => format!("the path {before}{{key}}{after}"),
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
            Candidate::Query(name) => KeyLine::Load(format!(
                "key = {{ query = \"{name}\" }}  # the query parameter your limiter keys on (rlbench probe)"
            )),
            Candidate::Path { before, after } => KeyLine::Load(format!(
                "key = {{ path = \"{before}{{key}}{after}\" }}  # the path your limiter keys on (rlbench probe)"
            )),
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
/// the common query parameters the URLs do not have; the path's last
/// segment when every URL has the same path with one; the client address
/// only on IPv4 loopback (rlbench binds 127.x.y.z).
pub(crate) fn candidates(
    extra: &[HeaderName],
    sent: &[HeaderName],
    urls: &[Uri],
    v4: bool,
) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = extra.iter().cloned().map(Candidate::Header).collect();
    for h in HEADERS {
        out.push(Candidate::Header(HeaderName::from_static(h)));
    }
    out.push(Candidate::Bearer);
    out.push(Candidate::ForwardedFor);
    for q in QUERIES {
        let has = |u: &Uri| {
            u.query()
                .is_some_and(|query| query.split('&').any(|kv| kv.split('=').next() == Some(q)))
        };
        if !urls.iter().any(has) {
            out.push(Candidate::Query(q.to_string()));
        }
    }
    if let Some(path) = same_path(urls) {
        if let Some((before, last)) = path.rsplit_once('/') {
            if !last.is_empty() {
                out.push(Candidate::Path {
                    before: format!("{before}/"),
                    after: String::new(),
                });
            }
        }
    }
    if v4 {
        out.push(Candidate::SourceIp);
    }
    let mut seen = Vec::new();
    out.retain(|c| {
        let header = match c {
            Candidate::Header(h) => Some(h.clone()),
            Candidate::Bearer => Some(hyper::header::AUTHORIZATION),
            Candidate::ForwardedFor => Some(HeaderName::from_static("x-forwarded-for")),
            Candidate::SourceIp | Candidate::Query(_) | Candidate::Path { .. } => None,
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

/// The path every URL has, if they agree.
fn same_path(urls: &[Uri]) -> Option<&str> {
    let first = urls.first()?.path();
    urls.iter().all(|u| u.path() == first).then_some(first)
}

/// The URLs a phase sends to: `base`, with every query candidate but
/// `fresh` given this phase's fixed value (`tag`) — the key a limiter on
/// that parameter sees, as the fixed headers are for header candidates.
pub(crate) fn targets(
    base: &[Uri],
    all: &[Candidate],
    fresh: Option<&Candidate>,
    tag: &str,
) -> Vec<Uri> {
    let fixed: Vec<String> = all
        .iter()
        .filter(|c| fresh != Some(*c))
        .filter_map(|c| match c {
            Candidate::Query(name) => Some(format!("{name}={tag}-fixed")),
            _ => None,
        })
        .collect();
    if fixed.is_empty() {
        return base.to_vec();
    }
    base.iter()
        .map(|u| {
            let query = match u.query() {
                Some(q) => format!("{q}&{}", fixed.join("&")),
                None => fixed.join("&"),
            };
            let mut parts = u.clone().into_parts();
            let path_and_query = format!("{}?{query}", u.path());
            match path_and_query.parse() {
                Ok(pq) => {
                    parts.path_and_query = Some(pq);
                    Uri::from_parts(parts).unwrap_or_else(|_| u.clone())
                }
                Err(_) => u.clone(),
            }
        })
        .collect()
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
            Candidate::Query(name) if is_fresh => {
                t.key_place = KeyPlace::Query(name.clone());
                t.wire = Some(fresh_values(&names, tag));
            }
            Candidate::Path { before, after } if is_fresh => {
                t.key_place = KeyPlace::Path {
                    before: before.clone(),
                    after: after.clone(),
                };
                t.wire = Some(fresh_values(&names, tag));
            }
            // Fixed: in the URL (`targets`), or the URL's own path.
            Candidate::Query(_) | Candidate::Path { .. } => {}
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

/// Each key's value this phase: `TAG-N`, new to the limiter.
fn fresh_values(names: &[String], tag: &str) -> Arc<HashMap<String, String>> {
    Arc::new(
        names
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), format!("{tag}-{i}")))
            .collect(),
    )
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
        let c = candidates(std::slice::from_ref(&mine), &sent, &[], true);
        assert_eq!(c[0], Candidate::Header(mine));
        assert!(!c.contains(&Candidate::Bearer));
        assert!(c.contains(&Candidate::SourceIp));
        assert!(!candidates(&[], &[], &[], false).contains(&Candidate::SourceIp));
        // A header given twice is tried once.
        let twice = candidates(&[HeaderName::from_static("x-api-key")], &[], &[], true);
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
        let all = candidates(&[], &[], &[], true);
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
    fn query_parameters_and_the_path_are_candidates_fixed_in_the_url_or_fresh_in_their_place() {
        let urls: Vec<Uri> = vec!["http://127.0.0.1:8080/api/limited?x=1".parse().unwrap()];
        let all = candidates(&[], &[], &urls, true);
        let api_key = Candidate::Query("api_key".into());
        let path = Candidate::Path {
            before: "/api/".into(),
            after: String::new(),
        };
        assert!(all.contains(&api_key) && all.contains(&path), "{all:?}");
        assert_eq!(path.name(), "the path /api/{key}");
        // A parameter the URL has is the user's: not tried.
        let with: Vec<Uri> = vec!["http://127.0.0.1:8080/a?apikey=mine".parse().unwrap()];
        let mine = candidates(&[], &[], &with, true);
        assert!(
            !mine.contains(&Candidate::Query("apikey".into())),
            "{mine:?}"
        );
        // No last segment, or URLs that disagree: no path candidate.
        let root: Vec<Uri> = vec!["http://127.0.0.1:8080/".parse().unwrap()];
        assert!(!candidates(&[], &[], &root, true)
            .iter()
            .any(|c| matches!(c, Candidate::Path { .. })));
        // Fixed: every parameter this phase's value, in the URL.
        let fixed = targets(&urls, &all, Some(&Candidate::Bearer), "p-7");
        assert_eq!(
            fixed[0].to_string(),
            "http://127.0.0.1:8080/api/limited?x=1&api_key=p-7-fixed&apikey=p-7-fixed"
        );
        // Fresh: left out of the URL, sent in its place with a value per key.
        let fresh = targets(&urls, &all, Some(&api_key), "p-8");
        assert_eq!(
            fresh[0].to_string(),
            "http://127.0.0.1:8080/api/limited?x=1&apikey=p-8-fixed"
        );
        let base = Template::new(Method::GET, None);
        let t = template(&base, &all, Some(&api_key), "p-8", 8, 20);
        assert_eq!(t.key_place, KeyPlace::Query("api_key".into()));
        let wire = t.wire.unwrap();
        assert_eq!(wire.len(), 20);
        assert!(wire.values().all(|v| v.starts_with("p-8-")));
        let t = template(&base, &all, Some(&path), "p-9", 9, 5);
        assert_eq!(
            t.key_place,
            KeyPlace::Path {
                before: "/api/".into(),
                after: String::new()
            }
        );
        assert!(matches!(
            path.scenario_line(),
            KeyLine::Load(l) if l.starts_with("key = { path = \"/api/{key}\" }")
        ));
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
