//! The binary's contract for bad input and validation: exit codes and
//! one-line errors that name the file, line and column.

use crate::common;

use common::{rlbench, text, write};

#[test]
fn every_shipped_scenario_passes_check() {
    let root = env!("CARGO_MANIFEST_DIR");
    let dir = std::path::Path::new(root).join("scenarios");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "toml") {
            let out = rlbench(&["check", path.to_str().unwrap()], root.as_ref());
            assert!(
                out.status.success(),
                "{}: {}",
                path.display(),
                text(&out.stderr)
            );
            assert!(text(&out.stdout).contains(": ok"), "{}", text(&out.stdout));
            checked += 1;
        }
    }
    assert!(checked >= 1, "no scenarios found in {}", dir.display());
}

#[test]
fn a_misspelled_key_exits_2_naming_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let good = common::small_scenario("1s", "");
    let bad = good.replace("rate = 300", "rte = 300");
    let path = write(dir.path(), "bad.toml", &bad);
    for cmd in ["check", "run"] {
        let out = rlbench(&[cmd, path.to_str().unwrap()], dir.path());
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        let err = text(&out.stderr);
        let line = bad.lines().position(|l| l.starts_with("rte")).unwrap() + 1;
        assert!(
            err.contains(&format!("bad.toml:{line}:1: unknown field `rte`")),
            "{err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(
        !dir.path().join("reports").exists(),
        "bad input writes no report"
    );
}

#[test]
fn check_names_every_error_in_the_file_and_run_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let bad = common::small_scenario("1s", "")
        .replace("duration = \"1s\"", "duration = 10")
        .replace("rate = 300", "rte = 300")
        .replace(
            "mode = \"local\"\nreplicas = 1",
            "mode = \"globl\"\nreplicas = 1",
        );
    let path = write(dir.path(), "bad.toml", &bad);
    let at = |start: &str| bad.lines().position(|l| l.starts_with(start)).unwrap() + 1;
    let out = rlbench(&["check", path.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.trim().lines().collect();
    assert_eq!(lines.len(), 3, "one line per error: {err}");
    for (line, (start, says)) in lines.iter().zip([
        ("duration", "write duration = \"10s\""),
        ("rte", "unknown field `rte`"),
        ("mode = \"globl\"", "unknown mode \"globl\""),
    ]) {
        assert!(
            line.contains(&format!("bad.toml:{}:", at(start))) && line.contains(says),
            "{line}"
        );
    }
    // A run stops at the first: one line.
    let out = rlbench(&["run", path.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr).trim().lines().count(), 1);
}

#[test]
fn impossible_values_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let good = common::small_scenario("1s", "");
    for (from, to, expect) in [
        (
            "replicas = 3",
            "replicas = 0",
            "replicas must be between 1 and 64",
        ),
        ("rate = 300", "rate = -1", "rate must be above 0"),
        (
            "duration = \"1s\"",
            "duration = \"1 parsec\"",
            "expected a duration",
        ),
        ("window = \"1s\"", "window = 1", "invalid type"),
    ] {
        let path = write(dir.path(), "s.toml", &good.replace(from, to));
        let out = rlbench(&["check", path.to_str().unwrap()], dir.path());
        assert_eq!(out.status.code(), Some(2), "{to}");
        let err = text(&out.stderr);
        assert!(err.contains(expect), "{to}: {err}");
        assert!(err.contains("s.toml:"), "{err}");
    }
}

#[test]
fn bad_command_lines_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "s.toml", &common::small_scenario("1s", ""));
    let p = path.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["run", p, "--duration", "soon"], "--duration"),
        (&["run", p, "--arm", "nope"], "no such arm"),
        (&["run", "/no/such/file.toml"], "cannot read the scenario"),
        (&["frobnicate"], "unrecognized subcommand"),
    ];
    for (args, expect) in cases {
        let out = rlbench(args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(expect),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn an_unwritable_run_folder_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "s.toml", &common::small_scenario("1s", ""));
    std::fs::write(dir.path().join("blocker"), "a file, not a folder").unwrap();
    let out = rlbench(
        &["run", path.to_str().unwrap(), "--out", "blocker/run"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("cannot create the run folder blocker/run"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn a_closed_stdout_ends_quietly_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    // `head -c0` exits at once, so rlbench writes into a closed pipe.
    let script = format!(
        "{} check {} 2>err | head -c0; sleep 0.2; cat err",
        common::bin().display(),
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios/race.toml")
            .display()
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = text(&out.stdout);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
}

/// docs/own-limiter.md's scenarios ("Verify your own limiter") are
/// complete and valid, and say what the shipped files say.
#[test]
fn the_documented_external_scenarios_are_valid() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/own-limiter.md")).unwrap();
    let mut checked = Vec::new();
    for block in doc.split("```toml\n").skip(1) {
        let toml = block.split("```").next().unwrap();
        // Whole scenarios only; a snippet of one table is not one.
        if !toml.lines().any(|l| l.starts_with("name = ")) {
            continue;
        }
        let s = rlbench::testing::outline_text("docs/own-limiter.md", toml)
            .unwrap_or_else(|e| panic!("{e}\n{toml}"));
        let shipped =
            rlbench::testing::outline_file(&root.join(format!("scenarios/{}.toml", s.name)))
                .unwrap();
        assert_eq!(s, shipped, "{}", s.name);
        checked.push(s.name);
    }
    assert_eq!(checked, ["nginx", "external-api"]);
}

#[test]
fn completions_and_the_manual_come_from_the_command_line_itself() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let out = common::rlbench(&["completions", shell], dir.path());
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = common::text(&out.stdout);
        for word in ["run", "explain", "attack", "compare"] {
            assert!(script.contains(word), "{shell} completes {word}");
        }
    }
    let bad = common::rlbench(&["completions", "tcsh"], dir.path());
    assert_eq!(bad.status.code(), Some(2));
    let man = common::rlbench(&["man"], dir.path());
    assert_eq!(man.status.code(), Some(0));
    let page = common::text(&man.stdout);
    assert!(
        page.starts_with(".ie") && page.contains(".TH rlbench 1"),
        "{page}"
    );
    assert!(page.contains("explain"), "the subcommands are listed");
}

#[test]
fn init_writes_a_starter_that_passes_check_and_says_what_next() {
    let dir = tempfile::tempdir().unwrap();
    let out = rlbench(&["init", "mine"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("wrote ./mine.toml"), "{said}");
    assert!(
        said.contains("next: rlbench check ./mine.toml && rlbench run ./mine.toml"),
        "{said}"
    );
    let check = rlbench(&["check", "mine.toml"], dir.path());
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stderr));
    assert!(text(&check.stdout).contains("arms: single, local, shared"));
    // Against your own limiter, with your policy.
    let out = rlbench(
        &[
            "init",
            "api",
            "--target",
            "http://127.0.0.1:8080/api/transfers",
            "--policy",
            r#"algorithm = "fixed_window", limit = 5, window = "1m""#,
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let check = rlbench(&["check", "api.toml"], dir.path());
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stderr));
    assert!(
        text(&check.stdout).contains("fixed_window: 5 per 60s"),
        "{}",
        text(&check.stdout)
    );
    // Never over an existing file; never a remote target.
    let again = rlbench(&["init", "mine"], dir.path());
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("exists"));
    let remote = rlbench(
        &["init", "x", "--target", "http://example.com/"],
        dir.path(),
    );
    assert_eq!(remote.status.code(), Some(2), "{}", text(&remote.stderr));
}

/// A target off this machine is refused with the line and the opt-in
/// named, and accepted with `[target] allow_remote = true`; only `check`
/// runs, so no request is sent anywhere.
#[test]
fn remote_targets_need_the_opt_in() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let shipped = std::fs::read_to_string(root.join("scenarios/external-api.toml")).unwrap();
    let remote = shipped.replace(
        r#"urls = ["http://127.0.0.1:18090", "http://127.0.0.1:18091", "http://127.0.0.1:18092"]"#,
        r#"urls = ["http://192.0.2.1:8080", "http://192.0.2.2:8080"]"#,
    );
    assert_ne!(remote, shipped, "the shipped file's urls line changed");
    let path = write(dir.path(), "remote.toml", &remote);
    let out = rlbench(&["check", path.to_str().unwrap()], dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let line = 1 + remote
        .lines()
        .position(|l| l.starts_with("urls = "))
        .unwrap();
    assert!(err.contains(&format!("remote.toml:{line}:")), "{err}");
    assert!(err.contains("only sends load to loopback targets"), "{err}");
    assert!(err.contains("allow_remote = true"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    let allowed = remote.replace(
        "kind = \"external\"\n",
        "kind = \"external\"\nallow_remote = true\n",
    );
    let path = write(dir.path(), "allowed.toml", &allowed);
    let out = rlbench(&["check", path.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // The reference API has no targets to allow.
    let reference = common::small_scenario("1s", "").replace(
        "[policy]",
        "[target]\nkind = \"reference\"\nallow_remote = true\n\n[policy]",
    );
    let path = write(dir.path(), "reference.toml", &reference);
    let out = rlbench(&["check", path.to_str().unwrap()], dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("only kind = \"external\" takes these keys"),
        "{err}"
    );

    // attack: refused without the flag; with it the URL is taken, and the
    // run stops at the next bad flag, before any request.
    let out = rlbench(
        &["attack", "http://192.0.2.1/", "--rate", "10", "-d", "1s"],
        dir.path(),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--allow-remote-targets"), "{err}");
    let out = rlbench(
        &[
            "attack",
            "http://192.0.2.1/",
            "--allow-remote-targets",
            "--rate",
            "10",
            "-d",
            "1s",
            "--keys",
            "5",
        ],
        dir.path(),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--keys needs --key-header"), "{err}");
}

/// The verdict table in colour only where colour is wanted: `--color
/// always` (or CLICOLOR_FORCE, which stands in for a terminal here)
/// styles ok and FAIL; output that is not a terminal, `NO_COLOR` (even
/// with CLICOLOR_FORCE) and `--color never` have no escape codes; the
/// text is the same.
#[test]
fn colour_only_where_it_is_wanted() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-v1");
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    common::copy_dir(&fixture, &run);
    let report = |env: &[(&str, &str)], extra: &[&str]| {
        let out = std::process::Command::new(common::bin())
            .args(["report", run.to_str().unwrap()])
            .args(extra)
            .env_remove("CLICOLOR_FORCE")
            .env_remove("NO_COLOR")
            .envs(env.iter().copied())
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let plain = report(&[], &[]);
    assert!(plain.contains(" ok "), "{plain}");
    assert!(
        plain.contains("\ngate: passed — every expectation met"),
        "{plain}"
    );
    assert!(!plain.contains('\u{1b}'), "piped: {plain:?}");
    let coloured = report(&[], &["--color", "always"]);
    assert!(coloured.contains("\u{1b}[32mok "), "{coloured:?}");
    assert_eq!(anstream::adapter::strip_str(&coloured).to_string(), plain);
    assert_eq!(report(&[("CLICOLOR_FORCE", "1")], &[]), coloured);
    for (env, extra) in [
        (&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")][..], &[][..]),
        (&[("CLICOLOR_FORCE", "1")][..], &["--color", "never"][..]),
    ] {
        let none = report(env, extra);
        assert!(!none.contains('\u{1b}'), "{env:?} {extra:?}: {none:?}");
        assert_eq!(none, plain);
    }
}

/// `--format json` prints one JSON document on stdout (the text goes to
/// stderr) for check, doctor, explain, compare and run (attack's is in
/// attack.rs); each parses, and says what the text says.
#[test]
fn format_json_prints_one_document_on_stdout() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let json = |args: &[&str], cwd: &std::path::Path, code: i32| {
        let out = rlbench(args, cwd);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", text(&out.stdout)));
        (doc, text(&out.stderr))
    };
    let (check, said) = json(
        &["check", "scenarios/three-replicas.toml", "--format", "json"],
        root,
        0,
    );
    assert_eq!(check["ok"], true, "{check}");
    assert_eq!(check["arms"][1], "local", "{check}");
    assert!(said.contains(": ok — "), "the text on stderr: {said}");
    let (doctor, _) = json(
        &[
            "doctor",
            "scenarios/three-replicas.toml",
            "--format",
            "json",
        ],
        root,
        0,
    );
    assert_eq!(doctor["passed"], true, "{doctor}");
    let findings = doctor["findings"].as_array().unwrap();
    assert!(findings
        .iter()
        .any(|f| f["what"] == "redis-server" && f["level"] == "ok"));

    let dir = tempfile::tempdir().unwrap();
    let fixture = root.join("tests/fixtures/report-v1");
    let run = dir.path().join("run");
    common::copy_dir(&fixture, &run);
    let run_s = run.to_str().unwrap();
    let (explained, _) = json(
        &["explain", run_s, "--arm", "local", "--format", "json"],
        dir.path(),
        0,
    );
    let arm = &explained["arms"][0];
    assert_eq!(arm["arm"], "local", "{explained}");
    assert!(
        arm["definite_violations"].as_u64().unwrap() > 0,
        "{explained}"
    );
    assert!(
        !arm["witnesses"].as_array().unwrap().is_empty(),
        "{explained}"
    );
    let (compared, _) = json(
        &["compare", run_s, run_s, "--format", "json"],
        dir.path(),
        0,
    );
    let rows = compared["rows"].as_array().unwrap();
    assert!(
        rows.iter()
            .any(|r| r["figure"] == "definite_violations" && r["change"] == 0.0),
        "{compared}"
    );
    assert_eq!(compared["regressions"], serde_json::json!([]));

    let (out, _) = common::run_scenario(
        dir.path(),
        &common::small_scenario("1s", ""),
        &[],
        &["--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["schema"], "rlbench.summary/v1");
    let kept: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary, kept, "stdout is the folder's summary.json");
    assert!(text(&out.stderr).contains("report: "), "the text on stderr");
}
