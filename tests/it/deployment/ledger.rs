//! What the deployment checks share: the files under check, the failures
//! found in them (one line each), and the readers of a command line, a URL
//! and a YAML value.

use serde_norway::Value;
use std::collections::BTreeMap;
use std::fmt::Display;
use std::path::PathBuf;

/// Where the image holds the repository's paths (deploy/Dockerfile's
/// WORKDIR): the commands' relative paths start there.
pub(super) const IMAGE_ROOT: &str = "/rlbench";
/// The controller's run folders, in the image.
pub(super) const REPORTS: &str = "/rlbench/reports";
/// The replicas' mode when RLBENCH_MODE is not set: the one the files'
/// comments promise, under which their scenarios pass.
pub(super) const DEFAULT_MODE: &str = "redis_lua";

/// The deployment files under check — the repository, or a copy with a
/// mistake in it — and what was found wrong with them.
pub(super) struct Ledger {
    pub(super) root: PathBuf,
    pub(super) failures: Vec<String>,
}

impl Ledger {
    pub(super) fn fail(&mut self, at: &str, what: impl Display) {
        self.failures.push(format!("{at}: {what}"));
    }

    /// A file of the files under check, by its path in the repository.
    pub(super) fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The value after `name` in a command line, or `None` (a failure).
    pub(super) fn flag(&mut self, args: &[String], name: &str, at: &str) -> Option<String> {
        let value = args
            .iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1));
        if value.is_none() {
            self.fail(at, format!("no {name} VALUE in {args:?}"));
        }
        value.cloned()
    }
}

/// `url`'s host and port when its scheme is one of `schemes` (`default`
/// when it names no port).
pub(super) fn host_port(url: &str, schemes: &[&str], default: u16) -> Option<(String, u16)> {
    let u = url::Url::parse(url).ok()?;
    if !schemes.contains(&u.scheme()) {
        return None;
    }
    Some((u.host_str()?.to_string(), u.port().unwrap_or(default)))
}

/// A scalar as text (a string, a number, a bool); `None` for the rest.
pub(super) fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A sequence's scalars as text: a command line.
pub(super) fn texts(v: &Value) -> Vec<String> {
    v.as_sequence()
        .map_or_else(Vec::new, |s| s.iter().filter_map(text).collect())
}

/// A sequence's items, none when it is not one.
pub(super) fn items(v: &Value) -> &[Value] {
    v.as_sequence().map_or(&[], |s| s.as_slice())
}

/// The names a mapping's keys or a sequence's items give (compose's
/// depends_on, either way it is written).
pub(super) fn names(v: &Value) -> Vec<String> {
    match v {
        Value::Mapping(m) => m.keys().filter_map(text).collect(),
        _ => texts(v),
    }
}

/// A mapping's scalar values by their keys' text.
pub(super) fn scalars(v: &Value) -> BTreeMap<String, Option<String>> {
    v.as_mapping().map_or_else(BTreeMap::new, |m| {
        m.iter()
            .filter_map(|(k, v)| Some((text(k)?, text(v))))
            .collect()
    })
}
