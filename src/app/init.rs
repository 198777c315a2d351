//! `rlbench init [NAME] [--target URL [--key-header NAME]] [--policy KEYS]`: writes a commented
//! starter scenario (like `k6 new`) — the reference API's arms by default,
//! an external target with `--target` — that passes `rlbench check`.

use crate::error::Error;
use std::path::{Path, PathBuf};

/// What `init` was asked for.
#[derive(Debug)]
pub(crate) struct Init<'a> {
    pub name: &'a str,
    pub target: Option<&'a str>,
    pub policy: Option<&'a str>,
    /// The header an external target's limiter keys on.
    pub key_header: Option<&'a str>,
    pub force: bool,
    /// The folder the file is written in.
    pub dir: &'a Path,
}

/// The header the reference API keys on, and an external target's by default.
const KEY_HEADER: &str = "X-Customer-Id";

const DEFAULT_POLICY: &str = "algorithm = \"sliding_log\"\nlimit = 10\nwindow = \"2s\"\n";

/// Writes `<name>.toml` and returns its path.
pub(crate) fn init(args: &Init) -> Result<PathBuf, Error> {
    if args.name.is_empty()
        || !args
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(Error::input(format!(
            "{:?}: a scenario name takes letters, digits, - _ . (it names the report folder)",
            args.name
        )));
    }
    let policy = match args.policy {
        Some(text) => policy_lines(text)?,
        None => DEFAULT_POLICY.to_string(),
    };
    let text = match args.target {
        Some(url) => {
            crate::target::loopback_url(url)?;
            external(
                args.name,
                url,
                args.key_header.unwrap_or(KEY_HEADER),
                &policy,
            )
        }
        None => reference(args.name, &policy),
    };
    // What we write must be what `check` accepts.
    crate::scenario::parse(&format!("{}.toml", args.name), &text)
        .map_err(|e| Error::input(format!("the starter scenario does not check: {e}")))?;
    let path = args.dir.join(format!("{}.toml", args.name));
    if path.exists() && !args.force {
        return Err(Error::input(format!(
            "{} exists: pick another name, or --force to overwrite it",
            path.display()
        )));
    }
    std::fs::write(&path, text)
        .map_err(|e| Error::environment(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

/// `--policy` (a `[policy]` table on one line) as the table's lines,
/// checked as a policy first.
fn policy_lines(text: &str) -> Result<String, Error> {
    crate::scenario::inline_policy(text).map_err(|e| Error::input(e.to_string()))?;
    let table: toml::Table = toml::from_str(&format!("p = {{ {text} }}"))
        .map_err(|e| Error::input(format!("--policy: {e}")))?;
    let Some(toml::Value::Table(keys)) = table.get("p") else {
        return Err(Error::input("--policy: expected key = value pairs"));
    };
    keys.iter()
        .map(|(k, v)| {
            let value = match v {
                // A JSON string is a TOML basic string.
                toml::Value::String(s) => serde_json::to_string(s).unwrap_or_default(),
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                _ => {
                    return Err(Error::input(format!(
                        "--policy: {k}: expected a plain value"
                    )))
                }
            };
            Ok(format!("{k} = {value}\n"))
        })
        .collect()
}

fn reference(name: &str, policy: &str) -> String {
    format!(
        r#"# {name}: a starter scenario. `rlbench check {name}.toml` validates it,
# `rlbench run {name}.toml` runs every arm and writes the report
# (reports/{name}/latest/report.html). docs/scenarios.md lists every key.
name = "{name}"
duration = "10s"             # each arm's load, after its replicas are up
seed = 1                     # which customer each request is for

[policy]                     # what the limiter promises, per customer
{policy}
[cluster]
replicas = 3                 # replica processes per arm (arms may override)

[load]
rate = 200                   # requests per second, open loop, over all customers
keys = 10                    # customers
timeout = "2s"

# One replica with the limiter in memory: correct.
[[arms]]
name = "single"
mode = "local"
replicas = 1
[arms.expect]
max_definite_violations = 0  # the gate that never flakes

# Three replicas, each counting alone: the fake global limit.
[[arms]]
name = "local"
mode = "local"
[arms.expect]
min_definite_violations = 1  # this arm is here to show the breakage

# Three replicas sharing Redis through one atomic Lua script: exact again.
# Needs redis-server on PATH (rlbench starts its own) or a [redis] url.
[[arms]]
name = "shared"
mode = "redis_lua"
clock = "redis"              # every decision reads Redis' clock
[arms.expect]
max_definite_violations = 0
"#
    )
}

fn external(name: &str, url: &str, key_header: &str, policy: &str) -> String {
    format!(
        r#"# {name}: a starter scenario against your own limiter at {url}.
# `rlbench check {name}.toml` validates it, `rlbench run {name}.toml` sends
# the load (to this machine only) and judges every answer against [policy].
name = "{name}"
duration = "10s"

[target]
kind = "external"
# More URLs: requests fan out across them (fanout = "round_robin").
urls = ["{url}"]
method = "GET"
key_header = "{key_header}" # the header your limiter keys on
limited_status = [429]       # what your limiter answers when it limits

[policy]                     # what your limiter promises, per key
{policy}
[load]
rate = 200                   # requests per second, open loop
keys = 5
timeout = "2s"

[[arms]]
name = "api"
[arms.expect]
max_definite_violations = 0  # never admit beyond the policy
max_false_reject_ratio = 0   # never refuse what the policy allows
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args<'a>(dir: &'a Path, target: Option<&'a str>, policy: Option<&'a str>) -> Init<'a> {
        Init {
            name: "mine",
            target,
            policy,
            key_header: None,
            force: false,
            dir,
        }
    }

    #[test]
    fn both_starters_pass_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = init(&args(dir.path(), None, None)).unwrap();
        let s = crate::scenario::read(&path).unwrap();
        assert_eq!(s.arms.len(), 3);
        let other = tempfile::tempdir().unwrap();
        let policy = r#"algorithm = "token_bucket", capacity = 5, refill = "10/1s""#;
        let path = init(&args(
            other.path(),
            Some("http://127.0.0.1:8080/api"),
            Some(policy),
        ))
        .unwrap();
        let s = crate::scenario::read(&path).unwrap();
        assert!(s.external.is_some());
        assert_eq!(s.policy.algorithm(), "token_bucket");
        assert!(s.arms[0].key_header.eq_ignore_ascii_case("X-Customer-Id"));
        // The header the limiter keys on, when it is another.
        let third = tempfile::tempdir().unwrap();
        let path = init(&Init {
            key_header: Some("X-Customer"),
            ..args(third.path(), Some("http://127.0.0.1:8080/api"), None)
        })
        .unwrap();
        let s = crate::scenario::read(&path).unwrap();
        assert!(s.arms[0].key_header.eq_ignore_ascii_case("X-Customer"));
    }

    #[test]
    fn bad_input_is_refused_and_nothing_is_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let remote = init(&args(dir.path(), Some("http://example.com/"), None)).unwrap_err();
        assert_eq!(remote.exit, crate::error::Exit::BadInput);
        let policy = init(&args(dir.path(), None, Some("algorithm = \"nope\""))).unwrap_err();
        assert!(
            policy.message.contains("unknown algorithm"),
            "{}",
            policy.message
        );
        init(&args(dir.path(), None, None)).unwrap();
        let again = init(&args(dir.path(), None, None)).unwrap_err();
        assert!(again.message.contains("exists"), "{}", again.message);
        let bad_name = Init {
            name: "a b",
            ..args(dir.path(), None, None)
        };
        assert_eq!(
            init(&bad_name).unwrap_err().exit,
            crate::error::Exit::BadInput
        );
    }
}
