//! `rlbench init [NAME] [--target URL [--key-header NAME]] [--policy KEYS]`: writes a commented
//! starter scenario (like `k6 new`) — the reference API's arms by default,
//! an external target with `--target` — that passes `rlbench check`.

mod preset;

pub(crate) use preset::Preset;

use crate::error::Error;
use std::path::{Path, PathBuf};

/// What `init` was asked for.
#[derive(Debug)]
pub(crate) struct Init<'a> {
    pub name: &'a str,
    pub target: Option<&'a str>,
    pub policy: Option<&'a str>,
    /// A known limiter's policy and limited status (`--preset`).
    pub preset: Option<Preset>,
    /// The header an external target's limiter keys on.
    pub key_header: Option<&'a str>,
    pub force: bool,
    /// The folder the file is written in.
    pub dir: &'a Path,
    /// What `rlbench probe` found, written in place of the defaults.
    pub found: Option<Found>,
}

/// What `rlbench probe` found of a limiter, for its starter scenario.
#[derive(Debug)]
pub(crate) struct Found {
    /// The `[policy]` lines, commented.
    pub policy: String,
    /// Where the key goes (`None`: every caller shares one bucket).
    pub key: Option<crate::app::commands::probe::keys::KeyLine>,
    pub limited: Vec<u16>,
    /// Requests per second over all keys, and the keys.
    pub rate: u64,
    pub keys: u32,
    pub duration_s: u64,
    /// What the rate is, for its comment.
    pub rate_note: &'static str,
    pub method: String,
    /// The headers the probe was given (`-H`), sent on every request.
    pub headers: Vec<(String, String)>,
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
    let policy = match (args.policy, args.preset) {
        (Some(text), _) => policy_lines(text)?,
        (None, Some(preset)) => preset.policy().to_string(),
        (None, None) => DEFAULT_POLICY.to_string(),
    };
    let text = match (args.target, &args.found) {
        (Some(url), Some(found)) => {
            crate::target::loopback_url(url)?;
            probed(args.name, url, found)
        }
        (Some(url), None) => {
            crate::target::loopback_url(url)?;
            let limited = args.preset.map_or(429, Preset::limited_status);
            external(
                args.name,
                url,
                args.key_header.unwrap_or(KEY_HEADER),
                &policy,
                limited,
            )
        }
        (None, _) => reference(args.name, &policy),
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

fn external(name: &str, url: &str, key_header: &str, policy: &str, limited: u16) -> String {
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
limited_status = [{limited}]       # what your limiter answers when it limits

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

/// The starter for a limiter `rlbench probe` looked at.
fn probed(name: &str, url: &str, f: &Found) -> String {
    use crate::app::commands::probe::keys::KeyLine;
    let (target_key, load_key) = match &f.key {
        Some(KeyLine::Target(l)) => (format!("{l}\n"), String::new()),
        Some(KeyLine::Load(l)) => (String::new(), format!("{l}\n")),
        None => (
            String::new(),
            "# every caller shares one bucket (rlbench probe moved no limit by key)\n".into(),
        ),
    };
    let limited = f
        .limited
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let headers = if f.headers.is_empty() {
        String::new()
    } else {
        let pairs: Vec<String> = f
            .headers
            .iter()
            .map(|(k, v)| {
                // A JSON string is a TOML basic string (the same escapes).
                let quoted = |x: &String| serde_json::to_string(x).unwrap_or_default();
                format!("{} = {}", quoted(k), quoted(v))
            })
            .collect();
        format!("headers = {{ {} }}\n", pairs.join(", "))
    };
    format!(
        r#"# {name}: a starter scenario against your own limiter at {url},
# its key and policy found by `rlbench probe`. `rlbench run {name}.toml`
# sends the load (to this machine only) and judges every answer.
name = "{name}"
duration = "{duration}s"

[target]
kind = "external"
urls = ["{url}"]
method = "{method}"
{headers}{target_key}limited_status = [{limited}]       # what your limiter answers when it limits

[policy]
{policy}
[load]
rate = {rate}                   # requests per second, open loop, {rate_note}
keys = {keys}
timeout = "2s"
{load_key}
[[arms]]
name = "api"
[arms.expect]
max_definite_violations = 0  # never admit beyond the policy
max_false_reject_ratio = 0   # never refuse what the policy allows
"#,
        duration = f.duration_s,
        policy = f.policy,
        rate = f.rate,
        keys = f.keys,
        rate_note = f.rate_note,
        method = f.method,
    )
}

/// `init --target URL --probe` is `probe URL --write NAME`: its flags.
pub(super) fn as_probe(
    name: &str,
    target: &str,
    force: bool,
) -> Result<crate::cli::probe::ProbeArgs, Error> {
    use clap::{Args, FromArgMatches};
    let mut argv = vec!["probe", target, "--write", name];
    if force {
        argv.push("--force");
    }
    crate::cli::probe::ProbeArgs::augment_args(clap::Command::new("probe"))
        .try_get_matches_from(argv)
        .and_then(|m| crate::cli::probe::ProbeArgs::from_arg_matches(&m))
        .map_err(|e| {
            let first = e.to_string();
            let first = first.lines().next().unwrap_or_default();
            Error::input(format!("--target: {}", first.trim_start_matches("error: ")))
        })
}

/// `rlbench init NAME`: a starter scenario written.
pub(super) fn execute(
    init_args: &Init<'_>,
    out: &mut dyn std::io::Write,
) -> Result<super::ending::Ending, Error> {
    let path = init(init_args)?;
    super::ending::write_out(
        out,
        &format!(
            "wrote {p}\nnext: rlbench check {p} && rlbench run {p}\n",
            p = path.display()
        ),
    )?;
    Ok(super::ending::Ending::passed())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args<'a>(dir: &'a Path, target: Option<&'a str>, policy: Option<&'a str>) -> Init<'a> {
        Init {
            name: "mine",
            target,
            policy,
            preset: None,
            key_header: None,
            force: false,
            dir,
            found: None,
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
    fn every_preset_writes_a_starter_in_its_limiters_terms_that_checks() {
        for preset in Preset::ALL {
            let dir = tempfile::tempdir().unwrap();
            let path = init(&Init {
                preset: Some(preset),
                ..args(dir.path(), Some("http://127.0.0.1:8080/limited"), None)
            })
            .unwrap();
            let s = crate::scenario::read(&path).unwrap();
            let t = s.external.as_ref().unwrap();
            assert_eq!(t.template.limited, [preset.limited_status()], "{preset:?}");
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.contains(preset.policy()), "{preset:?}");
        }
        // nginx's: a GCRA of 10/s that takes burst + 1 at once, on 503s.
        let dir = tempfile::tempdir().unwrap();
        let path = init(&Init {
            preset: Some(Preset::Nginx),
            ..args(dir.path(), Some("http://127.0.0.1:8080/limited"), None)
        })
        .unwrap();
        let s = crate::scenario::read(&path).unwrap();
        assert_eq!(
            s.policy,
            reference_api::Policy::Gcra {
                rate: reference_api::Rate {
                    count: 10,
                    per_us: 1_000_000
                },
                burst: 6
            }
        );
        assert_eq!(s.external.unwrap().template.limited, [503]);
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
