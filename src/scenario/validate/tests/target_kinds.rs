//! `[target] kind = "envoy_rls"` and `keep_alive`: what a target is
//! asked besides an HTTP request's own keys.

use super::super::super::{parse, Mode};
use super::error_of;
use super::external::EXTERNAL;

/// `[target] kind = "envoy_rls"`: a rate-limit service asked over gRPC,
/// its key the descriptor's value; what only HTTP targets take is refused
/// in one line at its place.
#[test]
fn a_rate_limit_service_target_takes_a_domain_and_a_descriptor() {
    use crate::load::request::{Http, KeyPlace};
    let rls = r#"
name = "rls"
duration = "2s"

[target]
kind = "envoy_rls"
urls = ["http://127.0.0.1:8081"]
domain = "edge"

[policy]
algorithm = "fixed_window"
limit = 10
window = "1s"

[load]
rate = 100

[[arms]]
name = "one"
"#;
    let s = parse("s.toml", rls).unwrap();
    let t = &s.external.as_ref().unwrap().template;
    assert_eq!(
        t.key_place,
        KeyPlace::Rls {
            domain: "edge".into(),
            descriptor: "customer_id".into()
        }
    );
    assert_eq!(t.http, Http::H2);
    assert!(t.sends_key());
    assert_eq!(s.arms[0].mode, Mode::External);
    let s = parse(
        "s.toml",
        &rls.replace(
            "domain = \"edge\"",
            "domain = \"edge\"\ndescriptor = \"user\"",
        ),
    )
    .unwrap();
    assert!(matches!(
        &s.external.as_ref().unwrap().template.key_place,
        KeyPlace::Rls { descriptor, .. } if descriptor == "user"
    ));
    let cases = [
        (rls.replace("domain = \"edge\"\n", ""), "needs \"domain\""),
        (
            rls.replace("domain = \"edge\"", "domain = \"\""),
            "domain \"\": expected a name",
        ),
        (
            rls.replace("urls = [\"http://127.0.0.1:8081\"]\n", ""),
            "needs \"urls\"",
        ),
        (
            rls.replace("domain = \"edge\"", "domain = \"edge\"\npath = \"/x\""),
            "path describes an HTTP request",
        ),
        (
            rls.replace("domain = \"edge\"", "domain = \"edge\"\nhttp = \"1.1\""),
            "http describes an HTTP request",
        ),
        (
            rls.replace(
                "domain = \"edge\"",
                "domain = \"edge\"\nkey_header = \"X-Id\"",
            ),
            "key_header describes an HTTP request",
        ),
        (
            rls.replace("rate = 100", "rate = 100\nkey = { query = \"k\" }"),
            "a rate-limit service gets the key as its descriptor's value",
        ),
        (
            rls.replace("kind = \"envoy_rls\"", "kind = \"external\""),
            "domain and descriptor belong to kind = \"envoy_rls\"",
        ),
        (
            rls.replace("kind = \"envoy_rls\"", "kind = \"grpc\""),
            "expected reference, external or envoy_rls",
        ),
    ];
    for (text, expected) in cases {
        let e = error_of(&text);
        assert!(e.contains(expected), "{expected}\n  got: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

/// `keep_alive = false`: a connection per request, over HTTP/1.1 only.
#[test]
fn keep_alive_off_is_http1_only() {
    let with =
        |extra: &str| EXTERNAL.replace("method = \"post\"", &format!("method = \"post\"\n{extra}"));
    let s = parse("s.toml", &with("keep_alive = false")).unwrap();
    assert!(!s.external.as_ref().unwrap().template.keep_alive);
    let s = parse("s.toml", EXTERNAL).unwrap();
    assert!(s.external.as_ref().unwrap().template.keep_alive);
    let e = error_of(&with("keep_alive = false\nhttp = \"2\""));
    assert!(
        e.contains("keep_alive = false opens a connection per request over HTTP/1.1"),
        "{e}"
    );
    assert!(e.starts_with("s.toml:"), "{e}");
}
