//! `rlbench init [NAME] [--target URL [--key-header NAME]] [--policy KEYS]`: writes a commented
//! starter scenario (like `k6 new`) — the reference API's arms by default,
//! an external target with `--target` — that passes `rlbench check`.

mod destination;
mod preset;
mod text;

pub(crate) use destination::Destination;
use destination::{check_name, exists};
pub(crate) use preset::Preset;
use text::{external, probed, reference, DEFAULT_POLICY};
pub(crate) use text::{Found, ManyKeysArm};

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

/// The header the reference API keys on, and an external target's by default.
const KEY_HEADER: &str = "X-Customer-Id";

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

/// `init --target https://…`'s TLS flags, passed on to the probe.
pub(crate) struct Tls<'a> {
    pub cacert: Option<&'a std::path::Path>,
    pub insecure: bool,
}

/// `init NAME --target URL` (probing, the default) is `probe URL --write
/// NAME`, a `--key-header` tried first: its flags.
pub(super) fn as_probe(
    name: &str,
    target: &str,
    key_header: Option<&hyper::header::HeaderName>,
    tls: Tls<'_>,
    force: bool,
) -> Result<crate::cli::probe::ProbeArgs, Error> {
    use clap::{Args, FromArgMatches};
    let mut argv = vec!["probe", target, "--write", name];
    if let Some(h) = key_header {
        argv.extend(["--key-header", h.as_str()]);
    }
    let ca = tls.cacert.map(|c| c.to_string_lossy().into_owned());
    if let Some(ca) = &ca {
        argv.extend(["--cacert", ca]);
    }
    if tls.insecure {
        argv.push("--insecure");
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
            catches: String::new(),
            fresh_connections: false,
            burst: 0,
            burst_spread: String::new(),
            bursts_comment: String::new(),
            many: None,
            method: "GET".into(),
            headers: Vec::new(),
            connection: String::new(),
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
