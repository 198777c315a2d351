//! Spoofed identities (`[load] principals`, `spoof`) against a real
//! limiter nobody here wrote: HAProxy, started here on free loopback
//! ports, with three frontends that key its stick table where
//! deployments do — the `X-Customer-Id` header, a trusted
//! `X-Forwarded-For`, and the `sub` of a JWT it verifies (`jwt_verify`,
//! 401 when the signature is not its secret's). Four principals forge the
//! header and the address and send their own token: the header and
//! address frontends let each walk far past its limit, proven per
//! principal with witnesses, while judged per key sent they are clean; the
//! JWT frontend holds every principal exactly. Tokens signed with another
//! secret are 401s, never decisions.

use crate::common::{arm, free_port, run_scenario, summary, text};
use crate::external::{spawn_group, wait_listening, Group};
use std::path::Path;
use std::process::Command;

const SECRET: &str = "the-spoofing-tests-shared-secret";

/// HAProxy with a frontend per key: header, forwarded-for, jwt.
fn haproxy(dir: &Path, ports: [u16; 3]) -> Group {
    assert!(
        Command::new("haproxy").arg("-v").output().is_ok(),
        "haproxy is not on PATH: sudo apt-get install haproxy (scripts/test.sh installs it)"
    );
    let frontend = |name: &str, port: u16, table: &str, track: &str, before: &str| {
        format!(
            "frontend {name}
    bind 127.0.0.1:{port}
    stick-table type {table} size 100k expire 10s store http_req_rate(1s)
    {before}
    http-request track-sc0 {track}
    http-request deny deny_status 429 if {{ sc_http_req_rate(0) gt 10 }}
    http-request return status 200 content-type text/plain string \"ok\\n\"
"
        )
    };
    let cfg = format!(
        "global
    maxconn 4096
defaults
    mode http
    timeout connect 1s
    timeout client 10s
    timeout server 10s
{}{}{}",
        frontend(
            "header",
            ports[0],
            "string len 64",
            "req.hdr(X-Customer-Id)",
            ""
        ),
        frontend(
            "forwarded",
            ports[1],
            "ip",
            "req.hdr_ip(X-Forwarded-For,1)",
            ""
        ),
        frontend(
            "jwt",
            ports[2],
            "string len 64",
            "http_auth_bearer,jwt_payload_query('$.sub')",
            &format!(
                "http-request deny deny_status 401 unless {{ http_auth_bearer,jwt_verify(\"HS256\",\"{SECRET}\") -m int 1 }}"
            ),
        ),
    );
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, cfg).unwrap();
    let mut group =
        spawn_group(Command::new("haproxy").args(["-db", "-f", path.to_str().unwrap()]));
    for port in ports {
        wait_listening(port, &mut group.0);
    }
    group
}

/// The scenario: an arm per frontend, principals minting with `secret`.
fn scenario(ports: [u16; 3], secret: &str, exact: &str) -> String {
    format!(
        r#"name = "spoofing-haproxy"
duration = "4s"
seed = 11
[target]
kind = "external"
urls = ["http://127.0.0.1:{jwt}/"]
key_header = "X-Customer-Id"
limited_status = [429]
[policy]
algorithm = "sliding_counter"
limit = 10
window = "1s"
count_rejected = true
[load]
rate = 200
principals = 4
spoof = ["rotate_key", "forwarded_for"]
forged_keys = 50
timeout = "1s"
key = {{ jwt = {{ claim = "sub", secret = "{secret}" }} }}
[[arms]]
name = "header"
urls = ["http://127.0.0.1:{header}/"]
[arms.expect]
min_definite_violations = 1
[[arms]]
name = "forwarded-for"
urls = ["http://127.0.0.1:{forwarded}/"]
[arms.expect]
min_definite_violations = 1
[[arms]]
name = "jwt"
[arms.expect]
{exact}
"#,
        header = ports[0],
        forwarded = ports[1],
        jwt = ports[2],
    )
}

#[test]
fn haproxy_keyed_on_what_callers_forge_is_caught_per_principal_and_on_a_verified_jwt_holds() {
    let dir = tempfile::tempdir().unwrap();
    let ports = [free_port(), free_port(), free_port()];
    let _haproxy = haproxy(dir.path(), ports);
    let exact = "max_definite_violations = 0\nmax_false_reject_ratio = 0\nmax_error_ratio = 0";
    let (out, _) = run_scenario(dir.path(), &scenario(ports, SECRET, exact), &[], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let s = summary(&dir.path().join("out"));
    for name in ["header", "forwarded-for"] {
        let a = arm(&s, name);
        let c = &a["correctness"];
        assert!(
            c["definite_violations"].as_u64().unwrap() > 100,
            "{name}: {stdout}"
        );
        // The proof names a principal, never a forged key.
        let witness = &c["witnesses"][0];
        let key = witness["key"].as_str().unwrap();
        assert!(
            key.starts_with("customer-") && !key.contains('~'),
            "{name}: {witness}"
        );
        // As the limiter was told, it held every key.
        let sent = &a["spoofing"]["per_key_sent"];
        assert_eq!(sent["definite_violations"], 0, "{name}: {stdout}");
        assert!(a["spoofing"]["keys_sent"].as_u64().unwrap() > 100, "{name}");
    }
    let jwt = arm(&s, "jwt");
    assert_eq!(jwt["correctness"]["definite_violations"], 0, "{stdout}");
    assert_eq!(jwt["correctness"]["false_rejects"], 0, "{stdout}");
    assert!(
        jwt["requests"]["rejected"].as_u64().unwrap() > 0,
        "HAProxy limited nothing: {stdout}"
    );
    assert!(
        stdout.contains("spoofing in header: 4 principals"),
        "{stdout}"
    );
    assert!(stdout.contains("each was held to its limit"), "{stdout}");

    // Tokens HAProxy cannot verify are 401s: errors, not decisions, and
    // nothing is judged of them — the setup's failure (exit 3).
    let dir = tempfile::tempdir().unwrap();
    let forged = scenario(
        ports,
        "a secret HAProxy does not know",
        "max_error_ratio = 0",
    );
    let (out, _) = run_scenario(dir.path(), &forged, &[], &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert!(
        stderr.contains("arm jwt: none of its") && stderr.contains("401 ×"),
        "{stderr}"
    );
    assert!(
        stderr.contains("check what the target asks of a request"),
        "{stderr}"
    );
    let s = summary(&dir.path().join("out"));
    let jwt = arm(&s, "jwt");
    assert_eq!(jwt["requests"]["admitted"], 0, "{stdout}");
    assert_eq!(jwt["requests"]["rejected"], 0, "{stdout}");
    assert_eq!(
        jwt["requests"]["errors"], jwt["requests"]["sent"],
        "{stdout}"
    );
}
