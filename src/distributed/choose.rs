//! Which registered agents a run takes, and which segment each sends:
//! agents of a Kubernetes Indexed Job by their index, others in name
//! order; only registrations signed with the run's token and fresh on the
//! coordinator's clock count; busy agents, agents leased to another run
//! and other rlbench versions are passed over, and the ones missing are
//! named.

use super::link::{self, DistributedError};
use super::protocol::{self, Registration, Sealed};
use super::seal::Token;
use std::collections::BTreeMap;

/// An agent the run uses, and its segment.
#[derive(Clone, Debug)]
pub(super) struct Chosen {
    pub name: String,
    pub host: String,
    pub segment: usize,
    /// The run's lease on it, as its key holds it (sealed), and its mark;
    /// empty until it is leased.
    pub lease: String,
    pub lease_nonce: String,
}

/// The most agents looked at in one look: whatever fills the agents'
/// set, a look stays bounded (the most recent beats first).
pub(super) const MOST_LISTED: usize = 256;
/// The most a registration may hold (bytes); a larger one is not read.
const MOST_REGISTRATION: i64 = 64 * 1024;

/// The agents the coordinator lists, as one look found them.
#[derive(Debug, Default)]
pub(super) struct Looked {
    /// Beating recently, with what they registered, signed with the token.
    pub live: Vec<Registration>,
    /// Listed as beating, but not signed with the token, stale, or too
    /// large: someone else's.
    pub refused: Vec<String>,
    /// How many the coordinator lists as beating (only [`MOST_LISTED`] of
    /// them are looked at).
    pub listed: u64,
}

/// The agents whose heartbeat is recent, with what they registered
/// (signed with `token` within the heartbeat's timeout; any other entry is
/// someone else's, and named in `refused`): at most [`MOST_LISTED`], each
/// registration's size asked before it is read.
pub(super) async fn live_agents(
    conn: &mut super::link::Conn,
    url: &str,
    token: &Token,
) -> Result<Looked, DistributedError> {
    let failed = |what: &'static str| move |e| link::failed(url, what, e);
    let now_ms = link::time(conn)
        .await
        .map_err(failed("reading its clock"))?
        / 1_000;
    let since = now_ms - protocol::HEARTBEAT_TIMEOUT_MS;
    let (listed, names): (u64, Vec<String>) = redis::pipe()
        .zcount(protocol::agents(), since, "+inf")
        .zrevrangebyscore_limit(protocol::agents(), "+inf", since, 0, MOST_LISTED as isize)
        .query_async(conn)
        .await
        .map_err(failed("listing agents"))?;
    let mut looked = Looked {
        listed,
        ..Looked::default()
    };
    let held = registrations(conn, &names, token)
        .await
        .map_err(failed("reading agents"))?;
    for (name, held) in names.into_iter().zip(held) {
        match held {
            Held::Signed(r) if fresh(&r, now_ms * 1_000) => looked.live.push(r),
            _ => looked.refused.push(name),
        }
    }
    Ok(looked)
}

/// An agent's registration as the coordinator holds it.
#[derive(Debug)]
pub(super) enum Held {
    /// Signed with the token, by the agent of its name.
    Signed(Registration),
    /// There, but not signed with the token for it, or larger than any
    /// registration: someone without the token wrote it.
    Forged,
    Missing,
}

/// The registrations of `names`, each one's size asked before it is read.
pub(super) async fn registrations(
    conn: &mut super::link::Conn,
    names: &[String],
    token: &Token,
) -> redis::RedisResult<Vec<Held>> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let mut sizes = redis::pipe();
    for name in names {
        sizes
            .cmd("HSTRLEN")
            .arg(protocol::agent(name))
            .arg("registration");
    }
    let sizes: Vec<i64> = sizes.query_async(conn).await?;
    let mut texts = redis::pipe();
    for (name, size) in names.iter().zip(&sizes) {
        if (1..=MOST_REGISTRATION).contains(size) {
            texts.hget(protocol::agent(name), "registration");
        }
    }
    let mut texts: std::vec::IntoIter<Option<String>> =
        if sizes.iter().any(|s| (1..=MOST_REGISTRATION).contains(s)) {
            texts
                .query_async::<Vec<Option<String>>>(conn)
                .await?
                .into_iter()
        } else {
            Vec::new().into_iter()
        };
    Ok(names
        .iter()
        .zip(sizes)
        .map(|(name, size)| match size {
            0 => Held::Missing,
            s if s > MOST_REGISTRATION => Held::Forged,
            _ => match texts.next().flatten() {
                Some(t) => signed(&t, name, token).map_or(Held::Forged, Held::Signed),
                None => Held::Missing,
            },
        })
        .collect())
}

/// Whether a registration's last beat is within the heartbeat's timeout
/// of `now_us` (the coordinator's clock).
pub(super) fn fresh(r: &Registration, now_us: i64) -> bool {
    (now_us - r.beat_us).abs() <= protocol::HEARTBEAT_TIMEOUT_MS * 1_000
}

/// A registration of `name` signed with `token` (its beat the time it
/// was signed at).
fn signed(text: &str, name: &str, token: &Token) -> Option<Registration> {
    let sealed: Sealed = serde_json::from_str(text).ok()?;
    if !sealed.verified(token, &protocol::agent(name))
        || sealed.from != name
        || sealed.kind != "registration"
    {
        return None;
    }
    let r: Registration = serde_json::from_str(&sealed.body).ok()?;
    (r.name == name && r.beat_us == sealed.at_us).then_some(r)
}

/// A registration of `name` signed with `token`, fresh at `now_us`.
#[cfg(test)]
fn verified(text: &str, name: &str, token: &Token, now_us: i64) -> Option<Registration> {
    signed(text, name, token).filter(|r| fresh(r, now_us))
}

/// Who is missing for a run to start (the controller waits for them, then
/// names them).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Missing {
    /// Agents of an Indexed Job: these indices of `of` have not registered.
    #[error(
        "no agent with index {} of {of} registered (JOB_COMPLETION_INDEX with RLBENCH_AGENTS={of})",
        joined(.missing)
    )]
    Indices { missing: Vec<usize>, of: usize },
    /// Agents by name: these registered, `more` are wanted, and those of
    /// another rlbench were passed over (each `name (rlbench version)`).
    #[error(
        "{} registered ({}); start {more} more with: rlbench agent --coordinator URL{}",
        .registered.len(),
        names_or_none(.registered),
        passed_over(.other_versions)
    )]
    Agents {
        registered: Vec<String>,
        more: usize,
        other_versions: Vec<String>,
    },
}

/// The names registered, or `none`.
fn names_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        joined(names)
    }
}

/// `; not taken, another rlbench: …` naming those passed over, or nothing.
fn passed_over(other_versions: &[String]) -> String {
    if other_versions.is_empty() {
        String::new()
    } else {
        format!("; not taken, another rlbench: {}", joined(other_versions))
    }
}

/// `items`, separated by commas.
fn joined<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(T::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Which agents take which segment, or who is missing: agents of an
/// Indexed Job by their index (all of `0..n` needed), others in name
/// order; busy agents and other rlbench versions are not taken.
pub(super) fn choose(live: &[Registration], n: usize) -> Result<Vec<Chosen>, Missing> {
    let version = env!("CARGO_PKG_VERSION");
    let ours = |r: &Registration| r.version == version && r.protocol == super::seal::VERSION;
    let free: Vec<&Registration> = live.iter().filter(|r| !r.busy && ours(r)).collect();
    let other_versions: Vec<String> = live
        .iter()
        .filter(|r| !ours(r))
        .map(|r| format!("{} (rlbench {})", r.name, r.version))
        .collect();
    let indexed: Vec<&&Registration> = free.iter().filter(|r| r.index.is_some()).collect();
    let chosen: Vec<Chosen> = if !indexed.is_empty() {
        let mut by_index: BTreeMap<usize, &Registration> = BTreeMap::new();
        for r in &indexed {
            if let Some((i, of)) = r.index {
                if of == n && i < n {
                    by_index.entry(i).or_insert(r);
                }
            }
        }
        let missing: Vec<usize> = (0..n).filter(|i| !by_index.contains_key(i)).collect();
        if !missing.is_empty() {
            return Err(Missing::Indices { missing, of: n });
        }
        by_index
            .into_iter()
            .map(|(segment, r)| Chosen {
                name: r.name.clone(),
                host: r.host.clone(),
                segment,
                lease: String::new(),
                lease_nonce: String::new(),
            })
            .collect()
    } else {
        let mut names: Vec<&Registration> = free.clone();
        names.sort_by(|a, b| a.name.cmp(&b.name));
        if names.len() < n {
            return Err(Missing::Agents {
                registered: names.iter().map(|r| r.name.clone()).collect(),
                more: n - names.len(),
                other_versions,
            });
        }
        names
            .into_iter()
            .take(n)
            .enumerate()
            .map(|(segment, r)| Chosen {
                name: r.name.clone(),
                host: r.host.clone(),
                segment,
                lease: String::new(),
                lease_nonce: String::new(),
            })
            .collect()
    };
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::seal::Header;

    fn agent(name: &str, index: Option<(usize, usize)>) -> Registration {
        Registration {
            name: name.into(),
            index,
            host: "h".into(),
            pid: 1,
            version: env!("CARGO_PKG_VERSION").into(),
            protocol: crate::distributed::seal::VERSION,
            nonce: "n".into(),
            beat_us: 0,
            busy: false,
        }
    }

    /// A registration counts only signed with the run's token, for its
    /// own name, and fresh.
    #[test]
    fn only_fresh_registrations_signed_with_the_token_count() {
        let token = Token::new("0123456789abcdef").unwrap();
        let now = 1_800_000_000_000_000;
        let sealed = |r: &Registration, token: &Token, from: &str| {
            let body = serde_json::to_string(r).unwrap();
            serde_json::to_string(&Sealed::new(
                token,
                &Header {
                    run: "",
                    arm: "",
                    from,
                    to: "",
                    place: &protocol::agent(from),
                    seq: 1,
                    at_us: r.beat_us,
                    kind: "registration",
                    prev: "",
                },
                body,
            ))
            .unwrap()
        };
        let mut r = agent("a", None);
        r.beat_us = now - 1_000_000;
        assert!(verified(&sealed(&r, &token, "a"), "a", &token, now).is_some());
        let other = Token::new("0123456789abcdeX").unwrap();
        assert!(verified(&sealed(&r, &other, "a"), "a", &token, now).is_none());
        assert!(verified(&sealed(&r, &token, "a"), "0forged", &token, now).is_none());
        assert!(verified(&sealed(&r, &token, "b"), "b", &token, now).is_none());
        r.beat_us = now - 10_000_000;
        assert!(
            verified(&sealed(&r, &token, "a"), "a", &token, now).is_none(),
            "a replay of an old registration"
        );
        assert!(verified("{\"registration\":1}", "a", &token, now).is_none());
    }

    #[test]
    fn unplaced_agents_are_taken_in_name_order() {
        let live = [agent("c", None), agent("a", None), agent("b", None)];
        let chosen = choose(&live, 2).unwrap();
        let names: Vec<(&str, usize)> = chosen
            .iter()
            .map(|c| (c.name.as_str(), c.segment))
            .collect();
        assert_eq!(names, [("a", 0), ("b", 1)]);
        let e = choose(&live, 4).unwrap_err().to_string();
        assert!(e.starts_with("3 registered (a, b, c); start 1 more"), "{e}");
        let mut busy = agent("d", None);
        busy.busy = true;
        let mut old = agent("e", None);
        old.version = "0.0.1".into();
        let e = choose(&[busy, old], 1).unwrap_err().to_string();
        assert!(
            e.contains("0 registered (none)") && e.contains("e (rlbench 0.0.1)"),
            "{e}"
        );
    }

    #[test]
    fn indexed_agents_take_their_index_and_name_the_missing_ones() {
        let live = [
            agent("index-2", Some((2, 3))),
            agent("index-0", Some((0, 3))),
        ];
        let e = choose(&live, 3).unwrap_err().to_string();
        assert!(e.contains("no agent with index 1 of 3"), "{e}");
        let mut all = live.to_vec();
        all.push(agent("index-1", Some((1, 3))));
        let chosen = choose(&all, 3).unwrap();
        let got: Vec<(&str, usize)> = chosen
            .iter()
            .map(|c| (c.name.as_str(), c.segment))
            .collect();
        assert_eq!(got, [("index-0", 0), ("index-1", 1), ("index-2", 2)]);
    }
}
