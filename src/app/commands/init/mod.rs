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
    /// Every URL the probe sent to, in its order.
    pub urls: Vec<String>,
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

/// Where a starter scenario goes, as `init NAME` and `probe --write NAME`
/// take it: `name`, `dir/name` or `dir/name.toml` — the file
/// `dir/name.toml`, the scenario named by its stem (which names the
/// report folder). Checked before anything is sent: the folder exists,
/// and the file does not unless `--force`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Destination {
    pub dir: PathBuf,
    pub name: String,
}

impl Destination {
    pub(crate) fn parse(arg: &str, force: bool) -> Result<Destination, Error> {
        let path = Path::new(arg);
        if arg.ends_with('/') || path.is_dir() {
            return Err(Error::input(format!(
                "{arg:?} is a folder: give the file's name in it ({}/NAME)",
                arg.trim_end_matches('/')
            )));
        }
        let stem = path
            .file_name()
            .and_then(|f| f.to_str())
            .map(|f| f.strip_suffix(".toml").unwrap_or(f))
            .unwrap_or_default();
        check_name(stem).map_err(|e| Error::input(format!("{arg:?}: {}", e.message)))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(Error::input(format!(
                "{arg:?}: no folder {} to write it in",
                dir.display()
            )));
        }
        let to = Destination {
            dir,
            name: stem.to_string(),
        };
        if to.path().exists() && !force {
            return Err(exists(&to.path()));
        }
        Ok(to)
    }

    /// The file: `dir/name.toml`.
    pub(crate) fn path(&self) -> PathBuf {
        self.dir.join(format!("{}.toml", self.name))
    }
}

fn exists(path: &Path) -> Error {
    Error::input(format!(
        "{} exists: pick another name, or --force to overwrite it",
        path.display()
    ))
}

/// A scenario's name: letters, digits, - _ . (it names the report folder).
fn check_name(name: &str) -> Result<(), Error> {
    if name.is_empty()
        || name == "."
        || name == ".."
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(Error::input(format!(
            "{name:?}: a scenario name takes letters, digits, - _ . (it names the report folder)"
        )));
    }
    Ok(())
}

/// Writes `<name>.toml` and returns its path.
pub(crate) fn init(args: &Init) -> Result<PathBuf, Error> {
    check_name(args.name)?;
    let declared = match (args.policy, args.preset) {
        (Some(text), _) => Some(policy_lines(text)?),
        (None, Some(preset)) => Some(preset.policy().to_string()),
        (None, None) => None,
    };
    // What we write must be what `check` accepts — a template once its
    // policy is declared.
    let (text, checked) = match (args.target, &args.found) {
        (Some(url), Some(found)) => {
            for u in &found.urls {
                crate::target::loopback_url(u)?;
            }
            let text = probed(args.name, url, found);
            (text.clone(), text)
        }
        (Some(url), None) => {
            crate::target::loopback_url(url)?;
            let limited = args.preset.map_or(429, Preset::limited_status);
            let header = args.key_header.unwrap_or(KEY_HEADER);
            let with = |policy: Option<&str>| external(args.name, url, header, policy, limited);
            let policy = declared.as_deref();
            (with(policy), with(Some(policy.unwrap_or(DEFAULT_POLICY))))
        }
        (None, _) => {
            let text = reference(args.name, declared.as_deref().unwrap_or(DEFAULT_POLICY));
            (text.clone(), text)
        }
    };
    crate::scenario::parse(&format!("{}.toml", args.name), &checked)
        .map_err(|e| Error::input(format!("the starter scenario does not check: {e}")))?;
    let path = args.dir.join(format!("{}.toml", args.name));
    if path.exists() && !args.force {
        return Err(exists(&path));
    }
    std::fs::write(&path, text)
        .map_err(|e| Error::environment(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

/// `--policy` (a `[policy]` table on one line) as the table's lines,
/// checked as a policy first.
pub(crate) fn policy_lines(text: &str) -> Result<String, Error> {
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

/// The starter for a limiter of the user's own: `policy` declared, or
/// (`None`) a template whose `[policy]` is commented out — never a guess
/// that could fail a correct limiter; `run` refuses it until declared.
fn external(name: &str, url: &str, key_header: &str, policy: Option<&str>, limited: u16) -> String {
    let policy = match policy {
        Some(lines) => {
            format!("[policy]                     # what your limiter promises, per key\n{lines}")
        }
        None => format!(
            "# [policy]: what your limiter promises, per key. Declare it:\n\
             # `rlbench probe {url}` finds it, and\n\
             # `rlbench init {name} --target {url} --force` writes it here.\n\
             # `rlbench run` refuses this file until then. For example:\n\
             {}",
            std::iter::once("[policy]")
                .chain(DEFAULT_POLICY.lines())
                .map(|l| format!("# {l}\n"))
                .collect::<String>()
        ),
    };
    format!(
        r#"# {name}: a starter scenario against your own limiter at {url}.
# `rlbench check {name}.toml` validates it, `rlbench run {name}.toml` sends
# the load (to this machine only) and judges every answer against [policy].
name = "{name}"
duration = "10s"

[target]
kind = "external"
# More URLs: requests fan out across them ([load] fanout, round robin).
urls = ["{url}"]
method = "GET"
key_header = "{key_header}" # the header your limiter keys on
limited_status = [{limited}]       # what your limiter answers when it limits

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
urls = [{urls}]
method = "{method}"
{headers}{target_key}limited_status = [{limited}]       # what your limiter answers when it limits

[policy]
{policy}
[load]
rate = {rate}                   # requests per second, open loop, {rate_note}
keys = {keys}
timeout = "2s"
{fanout}{load_key}
[[arms]]
name = "api"
[arms.expect]
max_definite_violations = 0  # never admit beyond the policy
max_false_reject_ratio = 0   # never refuse what the policy allows
"#,
        duration = f.duration_s,
        urls = f
            .urls
            .iter()
            .map(|u| serde_json::to_string(u).unwrap_or_default())
            .collect::<Vec<_>>()
            .join(", "),
        fanout = if f.urls.len() > 1 {
            "fanout = \"round_robin\"        # as the probe sent them: every URL in turn\n"
        } else {
            ""
        },
        policy = f.policy,
        rate = f.rate,
        keys = f.keys,
        rate_note = f.rate_note,
        method = f.method,
    )
}

/// `init NAME --target URL` (probing, the default) is `probe URL --write
/// NAME`, a `--key-header` tried first: its flags.
pub(super) fn as_probe(
    name: &str,
    target: &str,
    key_header: Option<&hyper::header::HeaderName>,
    force: bool,
) -> Result<crate::cli::probe::ProbeArgs, Error> {
    use clap::{Args, FromArgMatches};
    let mut argv = vec!["probe", target, "--write", name];
    if let Some(h) = key_header {
        argv.extend(["--key-header", h.as_str()]);
    }
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
    let p = path.display();
    let template = init_args.target.is_some()
        && init_args.policy.is_none()
        && init_args.preset.is_none()
        && init_args.found.is_none();
    let next = if template {
        format!(
            "next: declare the [policy] in {p} (`rlbench probe {}` finds it), then rlbench run {p}",
            init_args.target.unwrap_or_default()
        )
    } else {
        format!("next: rlbench check {p} && rlbench run {p}")
    };
    super::ending::write_out(out, &format!("wrote {p}\n{next}\n"))?;
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
            ..args(
                third.path(),
                Some("http://127.0.0.1:8080/api"),
                Some(policy),
            )
        })
        .unwrap();
        let s = crate::scenario::read(&path).unwrap();
        assert!(s.arms[0].key_header.eq_ignore_ascii_case("X-Customer"));
    }

    /// Without a policy (`--no-probe`), the starter is a template: its
    /// `[policy]` commented out, and refused in one line until declared —
    /// never a guess that fails a correct limiter. Declared, it checks.
    #[test]
    fn a_template_leaves_the_policy_to_be_declared_and_is_refused_until_then() {
        let dir = tempfile::tempdir().unwrap();
        let url = "http://127.0.0.1:8080/api";
        let path = init(&args(dir.path(), Some(url), None)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("# [policy]"), "{text}");
        assert!(!text.lines().any(|l| l.starts_with("[policy]")), "{text}");
        assert!(text.contains(&format!("`rlbench probe {url}`")), "{text}");
        let e = crate::scenario::read(&path).unwrap_err();
        assert!(
            e.message.starts_with("no [policy]: declare the policy"),
            "{e}"
        );
        assert!(!e.to_string().contains('\n'), "{e}");
        // Its example uncommented as it stands, it checks.
        let example: String = std::iter::once("[policy]")
            .chain(DEFAULT_POLICY.lines())
            .map(|l| format!("{l}\n"))
            .collect();
        let commented: String = example.lines().map(|l| format!("# {l}\n")).collect();
        assert!(text.contains(&commented), "{text}");
        let declared = text.replace(&commented, &example);
        crate::scenario::parse("mine.toml", &declared).unwrap();
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

    #[test]
    fn a_destination_is_a_name_or_a_path_checked_before_anything_is_sent() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let to = Destination::parse(&format!("{d}/varnish"), false).unwrap();
        assert_eq!(
            (to.dir.as_path(), to.name.as_str()),
            (dir.path(), "varnish")
        );
        let to = Destination::parse(&format!("{d}/varnish.toml"), false).unwrap();
        assert_eq!(to.path(), dir.path().join("varnish.toml"));
        let here = Destination::parse("mine", false).unwrap();
        assert_eq!(here.path(), Path::new("./mine.toml"));
        // A folder that is not there, a name the report folder cannot
        // take, a file already there: one line each, bad input.
        for (arg, says) in [
            (format!("{d}/nope/varnish"), "no folder"),
            (format!("{d}/a b"), "a scenario name takes"),
            (format!("{d}/"), "is a folder"),
            (d.to_string(), "is a folder"),
            (format!("{d}/.toml"), "a scenario name takes"),
        ] {
            let e = Destination::parse(&arg, false).unwrap_err();
            assert_eq!(e.exit, crate::error::Exit::BadInput, "{arg}");
            assert!(e.message.contains(says), "{arg}: {}", e.message);
            assert!(!e.message.contains('\n'), "{}", e.message);
        }
        std::fs::write(dir.path().join("taken.toml"), "mine").unwrap();
        let e = Destination::parse(&format!("{d}/taken"), false).unwrap_err();
        assert!(e.message.contains("exists"), "{}", e.message);
        assert!(Destination::parse(&format!("{d}/taken"), true).is_ok());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("taken.toml")).unwrap(),
            "mine"
        );
    }

    #[test]
    fn a_probed_starter_keeps_every_url_in_the_probes_order() {
        let dir = tempfile::tempdir().unwrap();
        let urls = vec![
            "http://127.0.0.1:8080/api".to_string(),
            "http://127.0.0.2:8081/api".to_string(),
        ];
        let found = Found {
            urls: urls.clone(),
            policy: "algorithm = \"sliding_log\"\nlimit = 10\nwindow = \"2s\"\n".into(),
            key: None,
            limited: vec![429],
            rate: 40,
            keys: 1,
            duration_s: 10,
            rate_note: "note",
            method: "GET".into(),
            headers: Vec::new(),
        };
        let path = init(&Init {
            found: Some(found),
            ..args(dir.path(), Some(&urls[0]), None)
        })
        .unwrap();
        let s = crate::scenario::read(&path).unwrap();
        let t = s.external.unwrap();
        let got: Vec<String> = t.urls.iter().map(ToString::to_string).collect();
        assert_eq!(got, urls);
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .contains("fanout = \"round_robin\""));
    }
}
