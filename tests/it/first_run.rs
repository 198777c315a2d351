//! A new user's first run against a limiter of their own (issue 26): the
//! limiter keys on another header than the starter scenario sends, and
//! rlbench says so; told the header, the same limiter passes.

use crate::common::{rlbench, text};
use crate::real_limiters::{start, Limiter};

/// The first run of a new user (issue 26): `init --target` against a
/// limiter of their own that keys on `X-Customer` while the starter sends
/// `X-Customer-Id`. Every request lands in one bucket, so every key gets
/// false rejects; the terminal, the page and `explain` name the likely
/// cause. With `init --key-header X-Customer` the same limiter passes, and
/// nothing is said about keys.
#[test]
fn a_limiter_keyed_on_another_header_is_named_on_the_first_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = start(
        Limiter::LimitsOn("moving-window", "5 per 2 second", "X-Customer"),
        d,
    );
    let url = format!("http://127.0.0.1:{}/limited", server.port);
    let policy = r#"algorithm = "sliding_log", limit = 5, window = "2s""#;
    let first_run = |name: &str, extra: &[&str]| {
        let mut args = vec!["init", name, "--target", &url, "--policy", policy];
        args.extend_from_slice(extra);
        let init = rlbench(&args, d);
        assert!(init.status.success(), "{}", text(&init.stderr));
        // The starter as written: 10 s, so that rejects come after the
        // limiter's unknown history settled (a window and the timeout).
        let file = format!("{name}.toml");
        rlbench(&["run", &file], d)
    };
    let out = first_run("mine", &[]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}{}", text(&out.stderr));
    let line = said
        .lines()
        .find(|l| l.starts_with("keys of api: "))
        .unwrap_or_else(|| panic!("no word on the keys: {said}"));
    assert!(
        line.contains("does your limiter key on x-customer-id, the header rlbench sends"),
        "{line}"
    );
    let html = std::fs::read_to_string(d.join("reports/mine/latest/report.html")).unwrap();
    assert!(html.contains("id=\"keys-api\""), "the page says it too");
    let explained = rlbench(&["explain", "reports/mine/latest"], d);
    assert!(
        text(&explained.stdout).contains("first, the keys: "),
        "{}",
        text(&explained.stdout)
    );

    // Told which header, the same limiter passes and keys are not named.
    let out = first_run("mine2", &["--key-header", "X-Customer"]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{}", text(&out.stderr));
    assert!(!said.contains("keys of api"), "{said}");
}

/// The issue's first mistake: nginx keyed on `X-Customer-Id`, the attack
/// sending `X-Customer`. nginx does not account requests whose key is
/// empty, so nothing is limited and the policy is "proven" broken; the
/// terminal names the setup as the likely cause. Told the right header,
/// nothing is said.
#[test]
fn a_limiter_that_limited_nothing_points_at_the_setup() {
    let prefix = tempfile::tempdir().unwrap();
    let port = crate::common::free_port();
    let conf = format!(
        "worker_processes 1;
events {{ worker_connections 256; }}
error_log stderr warn;
http {{
    access_log off;
    limit_req_zone $http_x_customer_id zone=z:1m rate=10r/s;
    server {{
        listen 127.0.0.1:{port};
        location = /limited {{ limit_req zone=z burst=5 nodelay; root html; }}
    }}
}}
"
    );
    let _nginx = crate::external::start_nginx(prefix.path(), &conf, &[port]);
    let url = format!("http://127.0.0.1:{port}/limited");
    let nginx_policy = r#"preset = "nginx_limit_req", rate = "10r/s", burst = 5, nodelay = true"#;
    let attack = |header: &str, policy: &str| {
        let dir = tempfile::tempdir().unwrap();
        rlbench(
            &[
                "attack",
                &url,
                "--rate",
                "100",
                "-d",
                "2s",
                "--keys",
                "3",
                "--key-header",
                header,
                "--limited-status",
                "503",
                "--policy",
                policy,
            ],
            dir.path(),
        )
    };
    let wrong = attack("X-Customer", nginx_policy);
    let said = text(&wrong.stdout);
    assert_eq!(
        wrong.status.code(),
        Some(1),
        "{said}{}",
        text(&wrong.stderr)
    );
    let line = said
        .lines()
        .find(|l| l.starts_with("setup of attack: "))
        .unwrap_or_else(|| panic!("no word on the setup: {said}"));
    assert!(
        line.contains("the limiter limited none of the") && line.contains("x-customer"),
        "{line}"
    );
    let right = attack("X-Customer-Id", nginx_policy);
    let said = text(&right.stdout);
    assert_eq!(
        right.status.code(),
        Some(0),
        "{said}{}",
        text(&right.stderr)
    );
    assert!(!said.contains("setup of attack"), "{said}");

    // The issue's second mistake: the policy guessed. The limiter is
    // correct and its answers are "proven" wrong against the guess; the
    // setup line says which policy they fit instead (a bucket, nginx's
    // own kind) and how to find the limiter's.
    let guessed = attack(
        "X-Customer-Id",
        r#"algorithm = "sliding_log", limit = 10, window = "1s""#,
    );
    let said = text(&guessed.stdout);
    assert_eq!(guessed.status.code(), Some(1), "{said}");
    let line = said
        .lines()
        .find(|l| l.starts_with("setup of attack: "))
        .unwrap_or_else(|| panic!("no word on the setup: {said}"));
    assert!(
        line.contains("its answers fit token_bucket")
            && line.contains("does not keep the declared sliding_log: 10 per 1s")
            && line.contains("rlbench probe URL"),
        "{line}"
    );
}
