//! `rlbench probe` against real limiters on loopback: nginx `limit_req`
//! with and without a burst, HAProxy counting rejects, PyPI `limits`,
//! rate-limiter-flexible, express-rate-limit and our own replicas. Each must come out with
//! the key it keys on and the policy it keeps, and the starter scenario
//! the probe writes must pass twice back to back (a first hour without
//! false alarms). Three replicas counting apart, given the one policy
//! they claim, must be told that it does not explain them.

use crate::common::{free_port, rlbench, text};
use crate::external::start_nginx;
use crate::real_limiters::{start, Limiter};
use crate::served::serve_replicas;
use std::path::Path;
use std::process::Output;

/// `rlbench probe` with `args` in `dir`, its standard output.
pub(crate) fn probe(dir: &Path, args: &[&str]) -> (Output, String) {
    let mut all = vec!["probe"];
    all.extend_from_slice(args);
    let out = rlbench(&all, dir);
    let stdout = text(&out.stdout);
    (out, stdout)
}

/// The `best:` line of a probe's output.
fn best(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.starts_with("best: "))
        .unwrap_or_else(|| panic!("no best line:\n{stdout}"))
}

/// The `key:` line of a probe's output.
fn key(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.starts_with("key: "))
        .unwrap_or_else(|| panic!("no key line:\n{stdout}"))
}

/// Probes `url` writing `name.toml`, checks the key and the best policy
/// (`key_has`, `best_is`), then runs the starter twice: both must pass.
fn found_and_starter_passes_twice(
    url: &str,
    extra: &[&str],
    key_has: &str,
    best_is: &str,
) -> String {
    found_and_starter_passes_twice_as(url, extra, key_has, &[best_is])
}

/// [`found_and_starter_passes_twice`] where the best policy may be any of
/// `best_is`: the truth, or a size above it the trace does not tell from
/// it (the probe proposes the loosest fit; never one below the truth).
fn found_and_starter_passes_twice_as(
    url: &str,
    extra: &[&str],
    key_has: &str,
    best_is: &[&str],
) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![url, "--write", "starter"];
    args.extend_from_slice(extra);
    let (out, stdout) = probe(dir.path(), &args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(key(&stdout).contains(key_has), "{stdout}");
    assert!(
        best_is
            .iter()
            .any(|b| best(&stdout) == format!("best: --policy '{b}'")),
        "not one of {best_is:?}:\n{stdout}"
    );
    assert!(stdout.contains("wrote starter.toml"), "{stdout}");
    let starter = std::fs::read_to_string(dir.path().join("starter.toml")).unwrap();
    assert!(starter.contains("# rlbench probe found it"), "{starter}");
    for round in 1..=2 {
        // 5 s of the starter's load (it writes 10): CI's time budget.
        let run = rlbench(&["run", "starter.toml", "--duration", "5s"], dir.path());
        assert_eq!(
            run.status.code(),
            Some(0),
            "run {round} of the starter:\n{starter}\n{}\n{}",
            text(&run.stdout),
            text(&run.stderr)
        );
        assert!(
            text(&run.stdout).contains("gate: passed"),
            "{}",
            text(&run.stdout)
        );
    }
    stdout
}

fn nginx_conf(port: u16) -> String {
    format!(
        r#"
worker_processes 1;
events {{ worker_connections 1024; }}
error_log stderr warn;
http {{
    access_log off;
    limit_req_zone $http_x_customer_id zone=burst:1m rate=10r/s;
    limit_req_zone $binary_remote_addr zone=ip:1m rate=5r/s;
    limit_req_zone $arg_api_key zone=query:1m rate=10r/s;
    limit_req_zone $uri zone=path:1m rate=10r/s;
    server {{
        listen 127.0.0.1:{port};
        location = /limited {{ limit_req zone=burst burst=5 nodelay; root html; }}
        location = /ip {{ limit_req zone=ip; limit_req_status 429; alias html/limited; }}
        location = /query {{ limit_req zone=query burst=5 nodelay; alias html/limited; }}
        location /api/ {{ limit_req zone=path burst=5 nodelay; root html; try_files /limited =404; }}
    }}
}}
"#
    )
}

/// nginx `rate=10r/s burst=5 nodelay` keyed on X-Customer-Id, answering
/// 503: a token bucket of 6 refilled 10 a second, written as nginx writes it.
#[test]
fn nginx_with_a_burst_is_found_and_its_starter_passes_twice() {
    let prefix = tempfile::tempdir().unwrap();
    let port = free_port();
    let _nginx = start_nginx(prefix.path(), &nginx_conf(port), &[port]);
    found_and_starter_passes_twice(
        &format!("http://127.0.0.1:{port}/limited"),
        &[],
        "header X-Customer-Id (it alone moved the limits)",
        r#"algorithm = "token_bucket", capacity = 6, refill = "10/1s""#,
    );
}

/// The `governor` crate (GCRA) keyed on X-Customer-Id,
/// `Quota::per_second(10).allow_burst(5)`: a token bucket of 5 refilled 10
/// a second, said in governor's own terms too.
#[test]
fn governor_is_found_and_its_starter_passes_twice() {
    let (port, _server) = crate::governor::start();
    let stdout = found_and_starter_passes_twice(
        &format!("http://127.0.0.1:{port}/limited"),
        &[],
        "header X-Customer-Id (it alone moved the limits)",
        &format!(
            r#"algorithm = "token_bucket", capacity = {}, refill = "{}/1s""#,
            crate::governor::BURST,
            crate::governor::PER_SECOND
        ),
    );
    assert!(
        stdout.contains("governor: Quota::per_second(10).allow_burst(5)"),
        "{stdout}"
    );
}

/// A bucket in Stripe's style, 10 refilled 5 at a time at each whole
/// second (of Redis' clock): a token bucket in whole chunks, its phase
/// unknown to the probe. A chunk landing inside a burst hides whether the
/// bucket holds 10, 11 or 12 (seen once in CI, after the fill round): the
/// probe may propose the looser, never less than 10.
#[test]
fn a_bucket_refilled_in_chunks_is_found_and_its_starter_passes_twice() {
    let (_rt, _redis, redis_url) = crate::chunked_bucket::redis();
    let logs = tempfile::tempdir().unwrap();
    let server = start(Limiter::Stripe(redis_url), logs.path());
    found_and_starter_passes_twice_as(
        &format!("http://127.0.0.1:{}/limited", server.port),
        &[],
        "header X-Customer-Id",
        &[
            r#"algorithm = "token_bucket", capacity = 10, refill = "5/1s", refill_every = "1s""#,
            r#"algorithm = "token_bucket", capacity = 11, refill = "5/1s", refill_every = "1s""#,
            r#"algorithm = "token_bucket", capacity = 12, refill = "5/1s", refill_every = "1s""#,
        ],
    );
}

/// Two bucket servers sharing their buckets on one Redis (each reading
/// its own clock: one limiter on two processes), probed through both
/// URLs: the starter keeps both, round robin as the probe sent them, and
/// the shared limiter passes it.
#[test]
fn a_probe_of_two_urls_writes_a_starter_with_both() {
    let (_rt, _redis, redis_url) = crate::chunked_bucket::redis();
    let logs = tempfile::tempdir().unwrap();
    let servers = [
        start(Limiter::StripeAppClock(redis_url, 0), logs.path()),
        start(Limiter::StripeAppClock(redis_url, 0), logs.path()),
    ];
    let urls: Vec<String> = servers
        .iter()
        .map(|s| format!("http://127.0.0.1:{}/limited", s.port))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let (out, stdout) = probe(dir.path(), &[&urls[0], &urls[1], "--write", "pair"]);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let starter = std::fs::read_to_string(dir.path().join("pair.toml")).unwrap();
    assert!(
        starter.contains(&format!("urls = [\"{}\", \"{}\"]", urls[0], urls[1])),
        "{starter}"
    );
    assert!(starter.contains("fanout = \"round_robin\""), "{starter}");
    let run = rlbench(&["run", "pair.toml", "--duration", "5s"], dir.path());
    assert_eq!(
        run.status.code(),
        Some(0),
        "{starter}\n{}",
        text(&run.stdout)
    );
}

/// nginx keyed on a query parameter (`$arg_api_key`) and on the path
/// (`$uri`, every `/api/…` its own caller): each found by the candidate
/// fresh in its place (the parameter's value, the path's last segment),
/// and the starter says where the key goes. Keys only: the policy of the
/// same nginx is found in the tests above.
#[test]
fn nginx_keyed_on_a_query_parameter_or_the_path_is_found() {
    let prefix = tempfile::tempdir().unwrap();
    let port = free_port();
    let _nginx = start_nginx(prefix.path(), &nginx_conf(port), &[port]);
    for (path, key_is, line) in [
        (
            "/query",
            "the query parameter api_key (it alone moved the limits)",
            "key = { query = \"api_key\" }",
        ),
        (
            "/api/transfers",
            "the path /api/{key} (it alone moved the limits)",
            "key = { path = \"/api/{key}\" }",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("http://127.0.0.1:{port}{path}");
        let (out, stdout) = probe(
            dir.path(),
            &[
                &url,
                "--limited-status",
                "503",
                "--max-time",
                "30s",
                "--write",
                "starter",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{stdout}");
        assert_eq!(key(&stdout), format!("key: {key_is}"), "{stdout}");
        let starter = std::fs::read_to_string(dir.path().join("starter.toml")).unwrap();
        assert!(starter.contains(line), "{starter}");
    }
}

/// nginx `rate=5r/s` without a burst keyed on the client address: a bucket
/// of one, and the key only a source address of its own moves. Asked
/// through `init sub/edge --target URL`, which probes by default and
/// writes the starter in `sub/`, named `edge`; the starter passes.
#[test]
fn nginx_without_a_burst_keyed_on_the_address_is_found_by_init_probe() {
    let prefix = tempfile::tempdir().unwrap();
    let port = free_port();
    let _nginx = start_nginx(prefix.path(), &nginx_conf(port), &[port]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let url = format!("http://127.0.0.1:{port}/ip");
    let out = rlbench(&["init", "sub/edge", "--target", &url], dir.path());
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("wrote sub/edge.toml"), "{stdout}");
    let run = rlbench(&["run", "sub/edge.toml", "--duration", "5s"], dir.path());
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stdout));
    let starter = std::fs::read_to_string(dir.path().join("sub/edge.toml")).unwrap();
    assert!(starter.contains("name = \"edge\""), "{starter}");
    assert!(starter.contains("source_ip"), "{starter}");
    assert!(key(&stdout).contains("the client address"), "{stdout}");
    // A bucket of one at 5 a second — or up to 5 % faster, which the
    // probe's steady phases (to 5 %) may not tell from it: the proposal
    // is the looser, never one slower than nginx. A sliding log of 1 per
    // 200 ms is the same limiter written as a window (one admit per
    // 200 ms), and replays as well.
    let best = best(&stdout);
    let bucket = best
        .strip_prefix(r#"best: --policy 'algorithm = "token_bucket", capacity = 1, refill = ""#)
        .and_then(|r| r.strip_suffix(r#""'"#));
    let log = best
        .strip_prefix(r#"best: --policy 'algorithm = "sliding_log", limit = 1, window = ""#)
        .and_then(|r| r.strip_suffix(r#""'"#));
    let per_second = match (bucket, log) {
        (Some(refill), _) => match refill.split_once('/') {
            Some((n, "1s")) => n.parse::<f64>().unwrap(),
            Some((n, "1m")) => n.parse::<f64>().unwrap() / 60.0,
            _ => panic!("refill {refill}: {stdout}"),
        },
        (None, Some(window)) => match window.strip_suffix("ms") {
            Some(ms) => 1_000.0 / ms.parse::<f64>().unwrap(),
            None => panic!("window {window}: {stdout}"),
        },
        (None, None) => panic!("not a bucket of one: {stdout}"),
    };
    assert!((5.0..=5.25).contains(&per_second), "{stdout}");
    let refill = bucket.unwrap_or_default();
    if refill == "5/1s" {
        assert!(stdout.contains("nginx: rate=5r/s burst=0"), "{stdout}");
    }
}

/// HAProxy's stick table counts the requests it denies too: only a policy
/// counting rejects explains it, 10 per second.
#[test]
fn haproxy_counting_rejects_is_found_and_its_starter_passes_twice() {
    let logs = tempfile::tempdir().unwrap();
    let server = start(Limiter::Haproxy, logs.path());
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}/limited", server.port);
    let (out, stdout) = probe(dir.path(), &[&url, "--write", "starter"]);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(key(&stdout).contains("X-Customer-Id"), "{stdout}");
    let best = best(&stdout);
    assert!(
        best.contains("limit = 10, window = \"1s\"") && best.contains("count_rejected = true"),
        "{stdout}"
    );
    for round in 1..=2 {
        // 5 s of the starter's load (it writes 10): CI's time budget.
        let run = rlbench(&["run", "starter.toml", "--duration", "5s"], dir.path());
        assert_eq!(
            run.status.code(),
            Some(0),
            "run {round}: {}",
            text(&run.stdout)
        );
    }
    // The same starter against a pair of HAProxy processes counting
    // apart, round robin: its load (1.5 times the limit per key) catches
    // them, where one a little under the limit never did.
    let other = start(Limiter::Haproxy, logs.path());
    let starter = std::fs::read_to_string(dir.path().join("starter.toml")).unwrap();
    let pair = starter.replace(
        &format!("urls = [\"{url}\"]"),
        &format!(
            "urls = [\"{url}\", \"http://127.0.0.1:{}/limited\"]",
            other.port
        ),
    );
    assert_ne!(pair, starter, "{starter}");
    std::fs::write(dir.path().join("pair.toml"), &pair).unwrap();
    let run = rlbench(&["run", "pair.toml", "--duration", "5s"], dir.path());
    let said = text(&run.stdout);
    assert_eq!(run.status.code(), Some(1), "{pair}\n{said}");
    assert!(said.contains("gate: FAILED — "), "{said}");
    assert!(said.contains("admits proven past the policy"), "{said}");
}

/// PyPI `limits`' fixed window is anchored at the key's first hit: the
/// probe must not settle for a tighter window that only its short trace
/// allows (its starter would then fail on a correct limiter).
#[test]
fn limits_fixed_window_is_found_and_its_starter_passes_twice() {
    let logs = tempfile::tempdir().unwrap();
    let server = start(Limiter::Limits("fixed-window"), logs.path());
    found_and_starter_passes_twice(
        &format!("http://127.0.0.1:{}/limited", server.port),
        &[],
        "header X-Customer-Id",
        r#"algorithm = "fixed_window", limit = 10, window = "1s""#,
    );
}

/// express-rate-limit's memory store: a fixed window anchored at the
/// key's first hit, in an express app.
#[test]
fn express_rate_limit_is_found_and_its_starter_passes_twice() {
    let logs = tempfile::tempdir().unwrap();
    let server = start(Limiter::Express, logs.path());
    found_and_starter_passes_twice(
        &format!("http://127.0.0.1:{}/limited", server.port),
        &[],
        "header X-Customer-Id",
        r#"algorithm = "fixed_window", limit = 10, window = "1s""#,
    );
}

/// `limits`' moving window is a sliding log; its sliding window counter a
/// sliding counter; rate-limiter-flexible's memory limiter a fixed window.
/// A sliding counter of 11 (or 6 per 500 ms) is no false alarm on one of
/// 10, and no refusal of the limiter's proves it wrong (the estimate may
/// reach two windows' admits): when its replay is the likelier, the probe
/// proposes it, the looser — never one below the truth.
#[test]
fn limits_moving_window_sliding_counter_and_rate_limiter_flexible_are_found() {
    let logs = tempfile::tempdir().unwrap();
    for (limiter, policies) in [
        (
            Limiter::Limits("moving-window"),
            &[r#"algorithm = "sliding_log", limit = 10, window = "1s""#][..],
        ),
        (
            Limiter::Limits("sliding-window-counter"),
            &[
                r#"algorithm = "sliding_counter", limit = 10, window = "1s""#,
                r#"algorithm = "sliding_counter", limit = 11, window = "1s""#,
                // 12 a second: faster than the truth, never slower, and
                // its replay sometimes the likelier (11 admits off to 18).
                r#"algorithm = "sliding_counter", limit = 6, window = "500ms""#,
            ][..],
        ),
        (
            Limiter::Flexible,
            &[r#"algorithm = "fixed_window", limit = 10, window = "1s""#][..],
        ),
    ] {
        let server = start(limiter, logs.path());
        let dir = tempfile::tempdir().unwrap();
        let url = format!("http://127.0.0.1:{}/limited", server.port);
        let (out, stdout) = probe(dir.path(), &[&url]);
        assert_eq!(out.status.code(), Some(0), "{stdout}");
        assert!(key(&stdout).contains("X-Customer-Id"), "{stdout}");
        assert!(
            policies
                .iter()
                .any(|p| best(&stdout) == format!("best: --policy '{p}'")),
            "not one of {policies:?}:\n{stdout}"
        );
    }
}

/// Our own replica (a sliding log of 5 per second on POST /api/transfers)
/// is found and its starter passes twice; three replicas counting apart,
/// given the one policy they claim, do not explain it: the probe says so,
/// names the counting apart, and exits 1.
#[test]
fn our_replicas_are_found_and_three_counting_apart_do_not_explain_the_claim() {
    let dir = tempfile::tempdir().unwrap();
    let (_one, urls) = serve_replicas(dir.path(), 1, "sliding_log", "1s");
    found_and_starter_passes_twice(
        &urls[0],
        &["-m", "POST"],
        "header X-Customer-Id",
        r#"algorithm = "sliding_log", limit = 5, window = "1s""#,
    );
    let three_dir = tempfile::tempdir().unwrap();
    let (_three, urls) = serve_replicas(three_dir.path(), 3, "sliding_log", "1s");
    let mut args: Vec<&str> = urls.iter().map(String::as_str).collect();
    args.extend([
        "-m",
        "POST",
        "--max-time",
        "30s",
        "--policy",
        r#"algorithm = "sliding_log", limit = 5, window = "1s""#,
    ]);
    let (out, stdout) = probe(dir.path(), &args);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("your policy (sliding_log: 5 per 1s) does not explain the decisions"),
        "{stdout}"
    );
    assert!(
        stdout.contains("several limiters counting apart"),
        "{stdout}"
    );
    assert!(
        text(&out.stderr).contains("the policy you gave does not explain"),
        "{}",
        text(&out.stderr)
    );
}

/// `--write` is checked before any load: a folder that is not there is
/// one line and exit 2 at once, nothing sent (nothing listens on the
/// URL either: its check would come later, and nothing was probed).
#[test]
fn a_write_into_no_folder_is_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}/limited", free_port());
    let (out, stdout) = probe(dir.path(), &[&url, "--write", "nope/varnish"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}{err}");
    assert!(
        err.contains("--write \"nope/varnish\": no folder nope"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!stdout.contains("probing"), "{stdout}");
}

/// A URL where nothing answers but 404 is the setup's fault: exit 3 with
/// "check the URL", after the first step alone.
#[test]
fn a_url_that_only_answers_404_is_the_setup_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let (_one, urls) = serve_replicas(dir.path(), 1, "sliding_log", "1s");
    let url = urls[0].replace("/api/transfers", "/no/such/path");
    let (out, stdout) = probe(dir.path(), &[&url]);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("check the URL"), "{stderr}");
    assert!(stderr.contains("404"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// Varnish's vmod_vsthrottle, `is_denied(X-Key, 10, 2s, 0s)`: a bucket of
/// 10 given 5 a second whose partial tokens are lost at each admit. Both
/// `10 per 2s` and `9 per 2s` once explained a short probe, and the
/// tightest was written: a steady client at 4.95 a second, under the
/// limiter's own rate and admitted whole, then failed the starter. The
/// probe finds the key (X-Key) and writes a policy that client passes
/// for 60 s.
#[test]
fn varnish_vsthrottle_is_found_and_a_client_under_its_rate_passes_the_starter() {
    let logs = tempfile::tempdir().unwrap();
    let server = start(Limiter::Varnish, logs.path());
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}/limited", server.port);
    let (out, stdout) = probe(dir.path(), &[&url, "--write", "starter"]);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(key(&stdout).contains("header X-Key"), "{stdout}");
    let path = dir.path().join("starter.toml");
    let starter = std::fs::read_to_string(&path).unwrap();
    assert!(starter.contains("the loosest policy"), "{starter}");
    // One client, 4.95 a second ([load]'s numbers; a policy's `rate` is
    // a string).
    let steady: String = starter
        .lines()
        .map(|l| match l.split_once(" = ") {
            Some(("rate", v)) if v.starts_with(|c: char| c.is_ascii_digit()) => "rate = 4.95",
            Some(("keys", _)) => "keys = 1",
            _ => l,
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        steady.contains("rate = 4.95\n") && steady.contains("keys = 1\n"),
        "{steady}"
    );
    std::fs::write(&path, &steady).unwrap();
    // The steady arm: the client under the limiter's rate.
    let run = rlbench(
        &["run", "starter.toml", "--duration", "60s", "--arm", "api"],
        dir.path(),
    );
    let said = text(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{stdout}\n{steady}\n{said}");
    assert!(said.contains("gate: passed"), "{said}");
}
