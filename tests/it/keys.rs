//! Keys where real limiters find them (`[load] key`), against real nginx
//! started here on free loopback ports, one `limit_req` zone per server,
//! each keyed the way deployments key it: the client address
//! (`$binary_remote_addr`, each key's connections from a loopback address
//! of its own), an API key in a query parameter, a bearer token, a path
//! segment, and `X-Forwarded-For` through the realip module. Each is
//! judged exact; two servers keyed on the address behind round-robin are
//! caught as a fake global limit; and a limiter keyed on the address
//! judged with every key sent from one address shows what a wrong key
//! looks like.

use crate::common::{arm, free_port, run_scenario, text};
use crate::external::Group;
use std::path::Path;

/// The servers, by what their zone keys on.
struct Ports {
    address: u16,
    address_too: u16,
    query: u16,
    bearer: u16,
    path: u16,
    forwarded: u16,
}

fn nginx(prefix: &Path, p: &Ports) -> Group {
    let zone =
        |name: &str, key: &str| format!("limit_req_zone {key} zone={name}:1m rate=10r/s;\n    ");
    let server = |port: u16, zone: &str, location: &str, extra: &str| {
        format!(
            "server {{
        listen 127.0.0.1:{port};
        {extra}
        location {location} {{
            limit_req zone={zone} burst=5 nodelay;
            try_files /limited =404;
        }}
    }}
    "
        )
    };
    let conf = format!(
        "worker_processes 2;
events {{ worker_connections 1024; }}
error_log stderr warn;
http {{
    access_log off;
    limit_req_log_level info;
    map $uri $user {{ ~^/users/(?<u>[^/]+)/transfers$ $u; default \"\"; }}
    {}{}{}{}{}{}
    {}{}{}{}{}{}
}}
",
        zone("a", "$binary_remote_addr"),
        zone("b", "$binary_remote_addr"),
        zone("q", "$arg_api_key"),
        zone("t", "$http_authorization"),
        zone("p", "$user"),
        zone("x", "$binary_remote_addr"),
        server(p.address, "a", "= /limited", ""),
        server(p.address_too, "b", "= /limited", ""),
        server(p.query, "q", "= /limited", ""),
        server(p.bearer, "t", "= /limited", ""),
        server(p.path, "p", "~ ^/users/", ""),
        server(
            p.forwarded,
            "x",
            "= /limited",
            "set_real_ip_from 127.0.0.0/8; real_ip_header X-Forwarded-For;"
        ),
    );
    crate::external::start_nginx(
        prefix,
        &conf,
        &[
            p.address,
            p.address_too,
            p.query,
            p.bearer,
            p.path,
            p.forwarded,
        ],
    )
}

/// A scenario on `urls` (path `/limited` unless the key is the path),
/// 4 customers at 50 requests/s each, keyed as `key` says, judged as
/// nginx's limit_req with 10r/s burst 5 nodelay.
fn scenario(urls: &[String], key: &str, expect: &str) -> String {
    let urls: Vec<String> = urls.iter().map(|u| format!("\"{u}\"")).collect();
    format!(
        r#"name = "keys"
duration = "3s"
seed = 3

[target]
kind = "external"
urls = [{}]
limited_status = [503]

[policy]
preset = "nginx_limit_req"
rate = "10r/s"
burst = 5
nodelay = true

[load]
rate = 200
keys = 4
key = {key}

[[arms]]
name = "api"
[arms.expect]
{expect}
"#,
        urls.join(", ")
    )
}

const EXACT: &str = "max_definite_violations = 0\nmax_false_reject_ratio = 0";

/// Runs `scenario`: its summary and stdout, after checking the exit code.
fn judged(scenario: &str, code: i32) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = run_scenario(dir.path(), scenario, &[], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{stdout}{}",
        text(&out.stderr)
    );
    (crate::common::summary(&dir.path().join("out")), stdout)
}

/// Exact: nginx limited, and nothing it did is proven wrong.
fn exact(scenario: &str, what: &str) {
    let (s, stdout) = judged(scenario, 0);
    let a = arm(&s, "api");
    assert_eq!(
        a["correctness"]["definite_violations"], 0,
        "{what}: {stdout}"
    );
    assert_eq!(a["correctness"]["false_rejects"], 0, "{what}: {stdout}");
    assert_eq!(a["requests"]["errors"], 0, "{what}: {stdout}");
    assert!(
        a["requests"]["rejected"].as_u64().unwrap() > 0,
        "{what}: nginx limited nothing: {stdout}"
    );
}

#[test]
fn nginx_keyed_where_deployments_key_it_is_judged_exact_and_its_pair_caught() {
    let prefix = tempfile::tempdir().unwrap();
    let p = Ports {
        address: free_port(),
        address_too: free_port(),
        query: free_port(),
        bearer: free_port(),
        path: free_port(),
        forwarded: free_port(),
    };
    let _nginx = nginx(prefix.path(), &p);
    let limited = |port: u16| format!("http://127.0.0.1:{port}/limited");
    let by_address = r#"{ source_ip = "127.0.0.0/16" }"#;

    // The client address, as nginx's most common configuration keys:
    // exact twice in a row, and two servers behind round-robin caught.
    for round in ["first", "second"] {
        exact(&scenario(&[limited(p.address)], by_address, EXACT), round);
    }
    let pair = scenario(
        &[limited(p.address), limited(p.address_too)],
        by_address,
        EXACT,
    );
    let (s, stdout) = judged(&pair, 1);
    let c = &arm(&s, "api")["correctness"];
    assert!(c["definite_violations"].as_u64().unwrap() > 0, "{stdout}");
    assert!(
        c["over_admission_ratio"].as_f64().unwrap() > 1.5,
        "{stdout}"
    );

    exact(
        &scenario(&[limited(p.query)], r#"{ query = "api_key" }"#, EXACT),
        "query",
    );
    exact(
        &scenario(&[limited(p.bearer)], "{ bearer = true }", EXACT),
        "bearer",
    );
    exact(
        &scenario(
            &[format!("http://127.0.0.1:{}", p.path)],
            r#"{ path = "/users/{key}/transfers" }"#,
            EXACT,
        ),
        "path",
    );
    exact(
        &scenario(&[limited(p.forwarded)], "{ forwarded_for = true }", EXACT),
        "forwarded_for",
    );

    // The same from the command line.
    let dir = tempfile::tempdir().unwrap();
    let out = crate::common::rlbench(
        &[
            "attack",
            &limited(p.address),
            "--rate",
            "200",
            "-d",
            "3s",
            "--keys",
            "4",
            "--key-in",
            r#"source_ip = "127.0.0.0/16""#,
            "--limited-status",
            "503",
            "--policy",
            r#"preset = "nginx_limit_req", rate = "10r/s", burst = 5, nodelay = true"#,
            "--out",
            "out",
            "-q",
        ],
        dir.path(),
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let s = crate::common::summary(&dir.path().join("out"));
    let a = arm(&s, "attack");
    assert_eq!(a["correctness"]["false_rejects"], 0, "{stdout}");
    assert!(a["requests"]["rejected"].as_u64().unwrap() > 0, "{stdout}");
    for (args, expected) in [
        (vec!["--key-in", "cookie = \"sid\""], "unknown field"),
        (vec!["--content-type", "text/plain"], "needs --body"),
        (vec!["--key-in", "bearer = true", "--concurrency", "2"], ""),
    ] {
        let mut all = vec!["attack", "http://127.0.0.1:1/", "-d", "1s"];
        if !args.contains(&"--concurrency") {
            all.extend(["--rate", "10"]);
        }
        all.extend(args.iter().copied());
        let out = crate::common::rlbench(&all, dir.path());
        let stderr = text(&out.stderr);
        if expected.is_empty() {
            // Accepted: only the unreachable target stops it (exit 3).
            assert_eq!(out.status.code(), Some(3), "{args:?}: {stderr}");
        } else {
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert!(stderr.contains(expected), "{args:?}: {stderr}");
        }
    }

    // The address-keyed limiter judged with every key's requests sent
    // from one address (the key in a header it ignores): it limits them
    // as one caller, so the per-key rejects are proven false.
    let wrong = scenario(
        &[limited(p.address_too)],
        r#"{ header = "X-Customer-Id" }"#,
        "",
    );
    let (s, stdout) = judged(&wrong, 0);
    assert!(
        arm(&s, "api")["correctness"]["false_rejects"]
            .as_u64()
            .unwrap()
            > 0,
        "{stdout}"
    );
}

/// The reference API keyed on a JWT it verifies (its replicas get the
/// secret the load mints with) and on a trusted X-Forwarded-For: one
/// replica exact, three counting alone caught, as with its header.
#[test]
fn the_reference_api_keyed_on_a_verified_jwt_or_forwarded_for_is_judged_like_its_header() {
    let scenario = |key: &str| {
        format!(
            r#"name = "keyed"
duration = "3s"
seed = 5
[policy]
algorithm = "sliding_log"
limit = 10
window = "1s"
[load]
rate = 200
keys = 4
key = {key}
[[arms]]
name = "single"
mode = "local"
replicas = 1
[arms.expect]
max_definite_violations = 0
max_false_reject_ratio = 0
max_error_ratio = 0
[[arms]]
name = "three"
mode = "local"
replicas = 3
"#
        )
    };
    for key in [
        r#"{ jwt = { claim = "sub", secret = "the run's minting secret" } }"#,
        "{ forwarded_for = true }",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (out, _) = run_scenario(dir.path(), &scenario(key), &[], &[]);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{key}: {stdout}{}",
            text(&out.stderr)
        );
        let s = crate::common::summary(&dir.path().join("out"));
        let single = arm(&s, "single");
        assert!(
            single["requests"]["rejected"].as_u64().unwrap() > 0,
            "{key}: {stdout}"
        );
        let three = &arm(&s, "three")["correctness"];
        assert!(
            three["definite_violations"].as_u64().unwrap() > 0,
            "{key}: {stdout}"
        );
        // The minting secret is not in the run folder.
        let copy = std::fs::read_to_string(dir.path().join("out/scenario.toml")).unwrap();
        assert!(!copy.contains("the run's minting secret"), "{copy}");
    }
    // The other places are an external target's only.
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = run_scenario(dir.path(), &scenario(r#"{ query = "k" }"#), &[], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("the other key places need"),
        "{}",
        text(&out.stderr)
    );
}
