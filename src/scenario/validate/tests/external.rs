//! `[target] kind = "external"`, its arms, the policy presets and `[checks]`.

use super::super::super::{parse, Mode};
use super::error_of;
use reference_api::{Policy, Rate};
use std::time::Duration;

pub(super) const EXTERNAL: &str = r#"
name = "ext"
duration = "2s"

[target]
kind = "external"
urls = ["http://127.0.0.1:8080", "http://[::1]:8081"]
path = "/limited?x=1"
method = "post"
headers = { "X-Api-Key" = "secret" }
key_header = "Authorization"
key_template = "Bearer {key}"
limited_status = [503, 429]

[policy]
preset = "nginx_limit_req"
rate = "10r/s"
burst = 5
nodelay = true

[load]
rate = 100

[[arms]]
name = "both"

[[arms]]
name = "one"
urls = ["http://localhost:8080"]
"#;

#[test]
fn an_external_target_becomes_urls_and_a_request_template() {
    let s = parse("s.toml", EXTERNAL).unwrap();
    let t = s.external.as_ref().unwrap();
    let urls: Vec<String> = t.urls.iter().map(|u| u.to_string()).collect();
    assert_eq!(
        urls,
        [
            "http://127.0.0.1:8080/limited?x=1",
            "http://[::1]:8081/limited?x=1"
        ]
    );
    assert_eq!(t.template.method, hyper::Method::POST);
    assert_eq!(t.template.headers["x-api-key"], "secret");
    assert_eq!(
        t.template.key_header.as_ref().unwrap().as_str(),
        "authorization"
    );
    assert_eq!(t.template.key_affix, ("Bearer ".to_string(), String::new()));
    assert_eq!(t.template.limited, [503, 429]);
    let (both, one) = (&s.arms[0], &s.arms[1]);
    assert_eq!((both.mode.clone(), both.replicas), (Mode::External, 2));
    assert_eq!(one.replicas, 1);
    assert_eq!(one.urls[0].to_string(), "http://localhost:8080/limited?x=1");
    // Fresh keys each run and arm unless told otherwise.
    assert!(t.fresh_keys);
    let same = parse(
        "s.toml",
        &EXTERNAL.replacen("[target]\n", "[target]\nfresh_keys = false\n", 1),
    )
    .unwrap();
    assert!(!same.external.as_ref().unwrap().fresh_keys);
}

/// An external arm that bounds nothing admitted past the policy gates
/// the definite violations at 0 by default; one that bounds them (a
/// `max_…`, or a `min_…` to be caught) keeps its own; a reference arm
/// gets none.
#[test]
fn an_external_arm_bounding_nothing_gates_definite_violations_at_zero() {
    use crate::gate::{Bound, Figure, DEFAULT_DEFINITE_KEY};
    let defaults = |text: &str| {
        parse("s.toml", text).unwrap().arms[0]
            .expect
            .iter()
            .filter(|e| e.key == DEFAULT_DEFINITE_KEY)
            .map(|e| (e.figure, e.bound, e.value))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        defaults(EXTERNAL),
        [(Figure::DefiniteViolations, Bound::AtMost, 0.0)]
    );
    let with = |expect: &str| {
        EXTERNAL.replacen(
            "name = \"both\"\n",
            &format!("name = \"both\"\n[arms.expect]\n{expect}\n"),
            1,
        )
    };
    // Bounds on other figures alone: still the default.
    assert_eq!(defaults(&with("max_p99_ms = 100")).len(), 1);
    assert_eq!(defaults(&with("max_false_reject_ratio = 0")).len(), 1);
    for own in [
        "max_definite_violations = 3",
        "min_definite_violations = 1",
        "max_over_admission_ratio = 1.5",
        "min_over_admission_ratio = 1.2",
        "max_possible_violations = 10",
        "max_peak_window_ratio = 2",
    ] {
        assert!(defaults(&with(own)).is_empty(), "{own}");
    }
    let reference = parse("s.toml", super::GOOD).unwrap();
    assert!(reference
        .arms
        .iter()
        .all(|a| a.expect.iter().all(|e| e.key != DEFAULT_DEFINITE_KEY)));
}

#[test]
fn nginx_burst_b_admits_b_plus_one_at_once() {
    let s = parse("s.toml", EXTERNAL).unwrap();
    assert_eq!(
        s.policy,
        Policy::Gcra {
            rate: Rate {
                count: 10,
                per_us: 1_000_000
            },
            burst: 6
        }
    );
    // Without burst (nginx's default 0) one request at a time.
    let bare = EXTERNAL.replace("burst = 5\n", "");
    let s = parse("s.toml", &bare).unwrap();
    assert!(matches!(s.policy, Policy::Gcra { burst: 1, .. }));
}

#[test]
fn redis_cell_and_governor_state_their_own_burst_conventions() {
    let with = |preset: &str, params: &str| {
        let text = EXTERNAL.replace(
            "preset = \"nginx_limit_req\"\nrate = \"10r/s\"\nburst = 5\nnodelay = true",
            &format!("preset = \"{preset}\"\n{params}"),
        );
        parse("s.toml", &text).map(|s| s.policy)
    };
    let per_min = Rate {
        count: 30,
        per_us: 60_000_000,
    };
    assert_eq!(
        with("redis_cell", "rate = \"30/1m\"\nburst = 15").unwrap(),
        Policy::Gcra {
            rate: per_min,
            burst: 16
        }
    );
    assert_eq!(
        with("governor", "rate = \"30/1m\"\nburst = 15").unwrap(),
        Policy::Gcra {
            rate: per_min,
            burst: 15
        }
    );
    // governor's Quota::per_minute(30) has a burst of 30.
    assert_eq!(
        with("governor", "rate = \"30/1m\"").unwrap(),
        Policy::Gcra {
            rate: per_min,
            burst: 30
        }
    );
    let e = with("governor", "rate = \"30/1m\"\nburst = 0")
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least 1"), "{e}");
    let e = with("redis_cell", "rate = \"30/1m\"\nnodelay = true")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"nodelay\" is not a parameter of preset redis_cell"),
        "{e}"
    );
    let e = with("envoy", "rate = \"30/1m\"").unwrap_err().to_string();
    assert!(e.contains("unknown preset \"envoy\""), "{e}");
}

#[test]
fn nginx_rates_must_be_per_second() {
    for (rate, ok) in [
        ("10r/s", true),
        ("1r/s", true),
        ("30r/m", false),
        ("10/s", false),
        ("0r/s", false),
    ] {
        let text = EXTERNAL.replace("rate = \"10r/s\"", &format!("rate = \"{rate}\""));
        match parse("s.toml", &text) {
            Ok(_) => assert!(ok, "{rate} should fail"),
            Err(e) => {
                assert!(!ok, "{rate}: {e}");
                assert!(e.to_string().contains("requests per second"), "{e}");
                assert_eq!(e.line, 17, "{e}");
            }
        }
    }
}

#[test]
fn presets_and_algorithms_do_not_mix() {
    let text = EXTERNAL.replace("preset = ", "algorithm = \"gcra\"\npreset = ");
    assert!(error_of(&text).contains("either \"algorithm\" or \"preset\""));
    let text = super::GOOD.replace("window = \"2s\"", "window = \"2s\"\nnodelay = true");
    assert!(error_of(&text).contains("\"nodelay\" belongs to preset"));
}

#[test]
fn external_targets_reject_what_only_the_reference_api_has() {
    for (change, expected) in [
        (
            (
                "[[arms]]\nname = \"both\"",
                "[[arms]]\nname = \"both\"\nmode = \"local\"",
            ),
            "mode configures the reference API",
        ),
        (
            (
                "[[arms]]\nname = \"both\"",
                "[[arms]]\nname = \"both\"\nreplicas = 2",
            ),
            "replicas configures",
        ),
        (
            (
                "[[arms]]\nname = \"both\"",
                "[[arms]]\nname = \"both\"\nratelimit_headers = \"both\"",
            ),
            "ratelimit_headers configures the reference API",
        ),
        (
            ("[load]", "[cluster]\nreplicas = 2\n\n[load]"),
            "[cluster] configures the reference API",
        ),
        (
            (
                "[load]",
                "[[faults]]\nat = \"1s\"\nfor = \"1s\"\naction = \"redis_down\"\n\n[load]",
            ),
            "[[faults]] configures",
        ),
        (
            ("kind = \"external\"", "kind = \"elsewhere\""),
            "unknown target kind \"elsewhere\"",
        ),
        (
            (
                "urls = [\"http://127.0.0.1:8080\", \"http://[::1]:8081\"]",
                "urls = []",
            ),
            "at least one URL",
        ),
        (
            (
                "urls = [\"http://127.0.0.1:8080\", \"http://[::1]:8081\"]",
                "urls = [\"http://10.1.2.3:80\"]",
            ),
            "only sends load to loopback",
        ),
        (
            (
                "urls = [\"http://127.0.0.1:8080\", \"http://[::1]:8081\"]",
                "urls = [\"http://127.0.0.1:8080/x\"]",
            ),
            "has a path of its own",
        ),
        (
            ("path = \"/limited?x=1\"", "path = \"limited\""),
            "expected a path like",
        ),
        (
            ("method = \"post\"", "method = \"P O\""),
            "not an HTTP method",
        ),
        (
            (
                "key_template = \"Bearer {key}\"",
                "key_template = \"Bearer\"",
            ),
            "expected \"{key}\" once",
        ),
        (
            (
                "key_template = \"Bearer {key}\"",
                "key_template = \"{key}{key}\"",
            ),
            "expected \"{key}\" once",
        ),
        (
            ("limited_status = [503, 429]", "limited_status = [200]"),
            "between 300 and 599",
        ),
        (
            ("limited_status = [503, 429]", "limited_status = []"),
            "at least one status",
        ),
        (
            (
                "headers = { \"X-Api-Key\" = \"secret\" }",
                "headers = { \"X Api\" = \"secret\" }",
            ),
            "not a header name",
        ),
    ] {
        let text = EXTERNAL.replacen(change.0, change.1, 1);
        assert_ne!(text, EXTERNAL, "{change:?} changed nothing");
        let e = error_of(&text);
        assert!(e.contains(expected), "{change:?}: {e}");
        assert!(e.starts_with("s.toml:"), "{e}");
    }
    let no_key_header = EXTERNAL.replace("key_header = \"Authorization\"\n", "");
    assert!(error_of(&no_key_header).contains("key_template needs key_header"));
    // No key header: the limiter sees one key, and so must the verifier.
    let no_header = EXTERNAL
        .replace("key_header = \"Authorization\"\n", "")
        .replace("key_template = \"Bearer {key}\"\n", "");
    assert_eq!(parse("s.toml", &no_header).unwrap().load.keys, 1);
    let many = no_header.replace("rate = 100", "rate = 100\nkeys = 5");
    assert!(error_of(&many).contains("give key_header or keys = 1"));
    let one = no_header.replace("rate = 100", "rate = 100\nkeys = 1");
    assert_eq!(parse("s.toml", &one).unwrap().load.keys, 1);
    let no_urls = EXTERNAL.replace(
        "urls = [\"http://127.0.0.1:8080\", \"http://[::1]:8081\"]\n",
        "",
    );
    assert!(error_of(&no_urls).contains("needs \"urls\""));
}

#[test]
fn reference_arms_need_a_mode_and_take_no_urls() {
    let no_mode = super::GOOD.replacen("mode = \"local\"\n", "", 1);
    assert!(error_of(&no_mode).contains("arm \"single\" needs \"mode\""));
    let urls = super::GOOD.replacen(
        "mode = \"local\"\n",
        "mode = \"local\"\nurls = [\"http://127.0.0.1:1\"]\n",
        1,
    );
    assert!(error_of(&urls).contains("urls belong to arms of a [target] kind = \"external\""));
    let reference = super::GOOD.replace("[load]", "[target]\nkind = \"reference\"\n\n[load]");
    assert!(parse("s.toml", &reference).unwrap().external.is_none());
    let stray = super::GOOD.replace(
        "[load]",
        "[target]\nkind = \"reference\"\nurls = []\n\n[load]",
    );
    assert!(error_of(&stray).contains("only kind = \"external\" takes these keys"));
}

#[test]
fn checks_set_the_retry_after_probes() {
    let s = parse("s.toml", EXTERNAL).unwrap();
    assert_eq!(s.checks.retry_after_probes, 2);
    assert_eq!(s.checks.retry_after_max_wait, Duration::from_secs(5));
    let text = EXTERNAL.replace(
        "[load]",
        "[checks]\nretry_after_probes = 0\nretry_after_max_wait = \"30s\"\n\n[load]",
    );
    let s = parse("s.toml", &text).unwrap();
    assert_eq!(s.checks.retry_after_probes, 0);
    assert_eq!(s.checks.retry_after_max_wait, Duration::from_secs(30));
    let bad = EXTERNAL.replace("[load]", "[checks]\nretry_after_probes = 101\n\n[load]");
    assert!(error_of(&bad).contains("retry_after_probes must be between 0 and 100"));
}

#[test]
fn https_targets_take_their_authority_and_client_certificate_beside_the_scenario() {
    let text = EXTERNAL
        .replace(
            r#"urls = ["http://127.0.0.1:8080", "http://[::1]:8081"]"#,
            r#"urls = ["https://127.0.0.1:8443", "http://[::1]:8081"]
ca = "certs/ca.pem"
cert = "/etc/client.pem"
key = "client.key""#,
        )
        .replace(
            "urls = [\"http://localhost:8080\"]",
            "urls = [\"https://localhost\"]",
        );
    let s = parse("scenarios/s.toml", &text).unwrap();
    let t = s.external.as_ref().unwrap();
    assert_eq!(t.urls[0].to_string(), "https://127.0.0.1:8443/limited?x=1");
    assert_eq!(
        s.arms[1].urls[0].to_string(),
        "https://localhost/limited?x=1"
    );
    let tls = &t.tls;
    assert_eq!(
        tls.ca.as_deref(),
        Some(std::path::Path::new("scenarios/certs/ca.pem"))
    );
    assert_eq!(
        tls.cert.as_deref(),
        Some(std::path::Path::new("/etc/client.pem"))
    );
    assert_eq!(
        tls.key.as_deref(),
        Some(std::path::Path::new("scenarios/client.key"))
    );
    assert!(!tls.insecure);
    for (change, expected) in [
        (("key = \"client.key\"", ""), "cert needs key"),
        (("cert = \"/etc/client.pem\"", ""), "key needs cert"),
        (
            ("ca = \"certs/ca.pem\"", "ca = \"\""),
            "ca: expected the path of a PEM file",
        ),
        (
            ("ca = \"certs/ca.pem\"", "ca = \"ca.pem\"\ninsecure = true"),
            "ca and insecure = true contradict",
        ),
        (
            ("https://127.0.0.1:8443", "ftp://127.0.0.1:8443"),
            "only http:// and https://",
        ),
    ] {
        let e = error_of(&text.replace(change.0, change.1));
        assert!(e.contains(expected), "{change:?}: {e}");
    }
    // The reference API is plain HTTP: these keys are not its.
    let reference = "name = \"r\"\nduration = \"1s\"\n\
                     [policy]\nalgorithm = \"sliding_log\"\nlimit = 1\nwindow = \"1s\"\n[load]\nrate = 1\n[target]\nkind = \"reference\"\n\
                     insecure = true\n[[arms]]\nname = \"a\"\nmode = \"local\"\n";
    let e = error_of(reference);
    assert!(
        e.contains("only kind = \"external\" takes these keys"),
        "{e}"
    );
}

/// `[load] key = { ... }` on an external target: each place, and what
/// is refused, in one line at the key.
#[test]
fn load_key_says_where_the_limiter_finds_the_key() {
    use crate::load::request::KeyPlace;
    use crate::scenario::spec::{JwtAlg, JwtSecret, KeySpec};
    let base = EXTERNAL
        .replace("key_header = \"Authorization\"\n", "")
        .replace("key_template = \"Bearer {key}\"\n", "")
        .replace("path = \"/limited?x=1\"\n", "");
    let with = |key: &str| base.replace("[load]\n", &format!("[load]\nkey = {key}\n"));
    let parsed = |key: &str| parse("scenarios/s.toml", &with(key)).unwrap();

    let s = parsed(r#"{ source_ip = "127.0.0.0/16" }"#);
    let t = s.external.as_ref().unwrap();
    assert_eq!(
        s.load.key,
        KeySpec::SourceIp {
            first: "127.0.0.1".parse().unwrap(),
            count: 10
        }
    );
    assert!(t.template.key_header.is_none());
    assert_eq!(s.load.keys, 10, "addresses tell the keys apart");

    let s = parsed(r#"{ path = "/users/{key}/transfers" }"#);
    assert_eq!(
        s.external.as_ref().unwrap().template.key_place,
        KeyPlace::Path {
            before: "/users/".into(),
            after: "/transfers".into()
        }
    );
    let s = parsed(r#"{ query = "api_key" }"#);
    assert_eq!(
        s.external.as_ref().unwrap().template.key_place,
        KeyPlace::Query("api_key".into())
    );
    let s = parsed("{ bearer = true }");
    let t = &s.external.as_ref().unwrap().template;
    assert_eq!(t.key_header.as_ref().unwrap().as_str(), "authorization");
    assert_eq!(t.key_affix.0, "Bearer ");
    let s = parsed(r#"{ header = "X-Api-Key" }"#);
    assert_eq!(
        s.external
            .as_ref()
            .unwrap()
            .template
            .key_header
            .as_ref()
            .unwrap()
            .as_str(),
        "x-api-key"
    );
    let s = parsed("{ forwarded_for = true }");
    assert_eq!(s.load.key, KeySpec::ForwardedFor);
    let s = parsed(r#"{ jwt = { claim = "uid", secret = "sixteen chars at least" } }"#);
    match &s.load.key {
        KeySpec::Jwt(j) => {
            assert_eq!((j.claim.as_str(), j.alg), ("uid", JwtAlg::Hs256));
            assert_eq!(j.secret, JwtSecret::Shared("sixteen chars at least".into()));
        }
        other => panic!("{other:?}"),
    }
    let s = parsed(r#"{ jwt = { alg = "RS256", key = "private.pem" } }"#);
    match &s.load.key {
        KeySpec::Jwt(j) => assert_eq!(
            j.secret,
            JwtSecret::PrivateKey("scenarios/private.pem".into())
        ),
        other => panic!("{other:?}"),
    }
    let login = with(r#"{ json_body = "username" }"#).replace(
        "limited_status",
        "body = '{\"password\": \"wrong\"}'\nlimited_status",
    );
    let s = parse("s.toml", &login).unwrap();
    let t = &s.external.as_ref().unwrap().template;
    assert_eq!(t.key_place, KeyPlace::JsonBody("username".into()));
    assert_eq!(t.body.as_ref().unwrap().content_type, "application/json");

    for (key, expected) in [
        (
            r#"{ source_ip = "10.0.0.0/8" }"#,
            "expected a loopback IPv4 block",
        ),
        (r#"{ source_ip = "127.0.0.0/30" }"#, "room for 2"),
        (r#"{ path = "/users/transfers" }"#, "with {key} once"),
        (r#"{ query = "a b" }"#, "expected a parameter name"),
        ("{ bearer = false }", "sends no key"),
        (r#"{ header = "X-A", query = "k" }"#, "give one of"),
        ("{ }", "give one of"),
        (
            r#"{ jwt = { secret = "short" } }"#,
            "at least 16 characters",
        ),
        (
            r#"{ jwt = { alg = "RS256", secret = "sixteen chars at least" } }"#,
            "needs key",
        ),
        (r#"{ jwt = { alg = "none" } }"#, "expected HS256 or RS256"),
        (r#"{ cookie = "sid" }"#, "unknown field"),
    ] {
        let e = error_of(&with(key));
        assert!(e.contains(expected), "{key}: {e}");
    }
    // One place for the key: not [target] key_header as well.
    let both = EXTERNAL.replace("[load]\n", "[load]\nkey = { bearer = true }\n");
    assert!(error_of(&both).contains("give one"), "{}", error_of(&both));
    let not_json = with(r#"{ json_body = "username" }"#)
        .replace("limited_status", "body = \"user=x\"\nlimited_status");
    assert!(error_of(&not_json).contains("JSON object"));
}
