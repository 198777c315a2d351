//! `rlbench audit`: the logs real nginx and HAProxy processes wrote during
//! a run, judged alone, give the run's verdicts — one limiter exact, two
//! that each count alone caught as a fake global limit; k6's JSON results
//! are read; a damaged line is named by file and line, never judged.

use crate::common::{arm, free_port, rlbench, run_scenario, summary, text};
use crate::external::{start_nginx, wait_listening, Group};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn shipped(name: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join("scenarios").join(name)).unwrap()
}

fn on_ports(text: &str, from: u16, ports: &[u16]) -> String {
    let mut text = text.to_string();
    for (i, port) in ports.iter().enumerate() {
        text = text.replace(
            &format!("127.0.0.1:{}", from + i as u16),
            &format!("127.0.0.1:{port}"),
        );
    }
    text
}

/// `rlbench audit ARGS` in `dir` with `--out out`: its output and summary.
fn audit(dir: &Path, args: &[&str]) -> (std::process::Output, serde_json::Value) {
    let out_dir = dir.join("audit-out");
    let out = rlbench(
        &[&["audit"], args, &["--out", out_dir.to_str().unwrap()]].concat(),
        dir,
    );
    let s = if out_dir.join("summary.json").is_file() {
        summary(&out_dir)
    } else {
        serde_json::Value::Null
    };
    (out, s)
}

fn definite(s: &serde_json::Value, name: &str) -> u64 {
    arm(s, name)["correctness"]["definite_violations"]
        .as_u64()
        .unwrap_or_else(|| panic!("{name}: no verdict in {s}"))
}

#[test]
fn nginx_logs_give_the_runs_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = tempfile::tempdir().unwrap();
    let ports = [free_port(), free_port(), free_port()];
    let logs: Vec<PathBuf> = (0..3)
        .map(|i| prefix.path().join(format!("access-{i}.log")))
        .collect();
    let mut conf = on_ports(&shipped("nginx/nginx.conf"), 18080, &ports).replace(
        "access_log off;",
        "log_format audit '$msec $request_time $status \"$http_x_customer_id\"';",
    );
    for (i, port) in ports.iter().enumerate() {
        conf = conf.replace(
            &format!("listen 127.0.0.1:{port};"),
            &format!(
                "listen 127.0.0.1:{port};\n        access_log {} audit;",
                logs[i].display()
            ),
        );
    }
    let nginx = start_nginx(prefix.path(), &conf, &ports);
    let scenario = on_ports(&shipped("nginx.toml"), 18080, &ports)
        .replace("duration = \"6s\"", "duration = \"3s\"");
    let (out, _) = run_scenario(dir.path(), &scenario, &[], &[]);
    drop(nginx);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let run = summary(&dir.path().join("out"));
    assert_eq!(definite(&run, "one-zone"), 0);
    assert!(definite(&run, "two-zones") > 0, "{stdout}");

    let policy = r#"preset = "nginx_limit_req", rate = "10r/s", burst = 5, nodelay = true"#;
    let format = r#"$msec $request_time $status "$http_x_customer_id""#;
    let common = [
        "--log",
        "nginx",
        "--log-format",
        format,
        "--key",
        "$http_x_customer_id",
        "--policy",
        policy,
        "--limited-status",
        "503",
    ];
    // Zone a alone (the one-zone arm, then its half of two-zones): exact.
    let (out, s) = audit(
        dir.path(),
        &[&common[..], &[logs[0].to_str().unwrap()]].concat(),
    );
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert_eq!(definite(&s, "audit"), 0, "{said}");
    assert_eq!(
        arm(&s, "audit")["correctness"]["false_rejects"],
        0,
        "{said}"
    );
    let sent = arm(&s, "audit")["requests"]["sent"].as_u64().unwrap();
    let logged = std::fs::read_to_string(&logs[0]).unwrap().lines().count() as u64;
    assert_eq!(sent, logged, "every line a request: {said}");
    assert!(said.contains("requests judged"), "{said}");
    // Zones a and b, each counting alone: caught, as the run caught them.
    let (out, s) = audit(
        dir.path(),
        &[
            &common[..],
            &[
                "--clock-bound",
                "0s",
                logs[0].to_str().unwrap(),
                logs[1].to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(definite(&s, "audit") > 0, "{said}");
    assert!(said.contains("definite_violations"), "{said}");
    // Two logs without a clock bound: refused in one line.
    let out = rlbench(
        &[
            &["audit"],
            &common[..],
            &[logs[0].to_str().unwrap(), logs[1].to_str().unwrap()],
        ]
        .concat(),
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--clock-bound"),
        "{}",
        text(&out.stderr)
    );
}

/// HAProxy logging each request to stdout (`log stdout format raw`), the
/// key captured, on `port`; its log is `log`.
fn haproxy(dir: &Path, port: u16, log: &Path) -> Group {
    let cfg = std::fs::read_to_string(Path::new(ROOT).join("scenarios/haproxy/haproxy.cfg"))
        .unwrap()
        .replace("global\n", "global\n    log stdout format raw local0\n")
        .replace(
            "defaults\n",
            "defaults\n    log global\n    option httplog\n",
        )
        .replace(
            "    http-request track-sc0",
            "    http-request capture req.hdr(X-Customer-Id) len 64\n    http-request track-sc0",
        );
    let path = dir.join(format!("haproxy-{port}.cfg"));
    std::fs::write(&path, cfg).unwrap();
    use std::os::unix::process::CommandExt;
    let mut group = Group(
        Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&path)
            .env("RLBENCH_HAPROXY_PORT", port.to_string())
            .process_group(0)
            .stdout(std::fs::File::create(log).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .expect("haproxy starts (scripts/test.sh installs it)"),
    );
    wait_listening(port, &mut group.0);
    group
}

#[test]
fn haproxy_logs_give_the_runs_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let ports = [free_port(), free_port(), free_port()];
    let logs: Vec<PathBuf> = (0..3)
        .map(|i| dir.path().join(format!("haproxy-{i}.log")))
        .collect();
    let servers: Vec<Group> = (0..3)
        .map(|i| haproxy(dir.path(), ports[i], &logs[i]))
        .collect();
    let scenario = on_ports(&shipped("haproxy.toml"), 18110, &ports)
        .replace("duration = \"8s\"", "duration = \"3s\"");
    let (out, _) = run_scenario(dir.path(), &scenario, &[], &[]);
    drop(servers);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let run = summary(&dir.path().join("out"));
    assert_eq!(definite(&run, "one-process"), 0);
    assert!(definite(&run, "two-processes") > 0);

    let policy =
        r#"algorithm = "sliding_counter", limit = 10, window = "1s", count_rejected = true"#;
    let common = ["--log", "haproxy", "--policy", policy];
    let (out, s) = audit(
        dir.path(),
        &[&common[..], &[logs[0].to_str().unwrap()]].concat(),
    );
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert_eq!(definite(&s, "audit"), 0, "{said}");
    // Every request of the arm logged (and the Retry-After probes after it).
    let sent =
        |s: &serde_json::Value, name: &str| arm(s, name)["requests"]["sent"].as_u64().unwrap();
    assert!(sent(&s, "audit") >= sent(&run, "one-process"), "{said}");
    let (out, s) = audit(
        dir.path(),
        &[
            &common[..],
            &[
                "--clock-bound",
                "0s",
                logs[1].to_str().unwrap(),
                logs[2].to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(definite(&s, "audit") > 0, "{said}");
}

#[test]
fn a_damaged_or_hostile_line_is_named_and_never_judged() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("envoy.log");
    let good = |t: u32, code: u16| {
        format!(
            r#"{{"start_time":"2026-12-06T10:00:{:02}.{:03}Z","duration":1,"response_code":{code},"x_customer_id":"c-1"}}"#,
            t / 1000,
            t % 1000
        )
    };
    let mut lines: Vec<String> = (0..20)
        .map(|i| good(i * 150, if i < 10 { 200 } else { 429 }))
        .collect();
    lines.insert(7, r#"{"start_time":"2026-12-06T10:00:01Z","duration":"x","response_code":200,"x_customer_id":"c-1"}"#.into());
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let args = [
        "--log",
        "envoy",
        "--key",
        "x_customer_id",
        "--policy",
        r#"algorithm = "fixed_window", limit = 10, window = "1m""#,
        log.to_str().unwrap(),
    ];
    let (out, _) = audit(dir.path(), &args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("envoy.log:8: duration: not a number"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // Skipped on request, and said.
    let (out, s) = audit(dir.path(), &[&args[..], &["--skip-bad-lines"]].concat());
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("1 skipped as unreadable (first: "), "{said}");
    assert_eq!(arm(&s, "audit")["requests"]["sent"], 20);
    // Bytes that are no text, a line a megabyte long: one line each.
    std::fs::write(&log, [b"\xff\xfe\x00\n".as_slice()].concat()).unwrap();
    let (out, _) = audit(dir.path(), &args);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("envoy.log:1: not UTF-8 text"));
    std::fs::write(&log, "x".repeat(2 << 20)).unwrap();
    let (out, _) = audit(dir.path(), &args);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("longer than"),
        "{}",
        text(&out.stderr)
    );
}

/// k6's `--out json` as its docs describe it (k6 is not packaged for
/// Debian; the lines are those k6 writes: a Metric definition, then one
/// Point per sample, http_req_duration stamped at the request's end).
#[test]
fn k6_results_with_the_key_as_a_tag_are_judged() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("k6.json");
    let mut lines = vec![
        r#"{"type":"Metric","data":{"name":"http_req_duration","type":"trend","contains":"time","thresholds":[],"submetrics":null},"metric":"http_req_duration"}"#.to_string(),
    ];
    // Two customers, 15 requests each within a second: the first 10 of
    // each admitted, the rest limited.
    for i in 0..30u32 {
        let customer = i % 2;
        let status = if i / 2 < 10 { 200 } else { 429 };
        let ms = 100 + i * 20;
        lines.push(format!(
            r#"{{"metric":"http_reqs","type":"Point","data":{{"time":"2026-12-06T10:00:00.{ms:03}+01:00","value":1,"tags":{{"status":"{status}","customer":"c-{customer}"}}}}}}"#
        ));
        lines.push(format!(
            r#"{{"metric":"http_req_duration","type":"Point","data":{{"time":"2026-12-06T10:00:00.{ms:03}+01:00","value":1.5,"tags":{{"method":"POST","status":"{status}","customer":"c-{customer}"}}}}}}"#
        ));
    }
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let args = [
        "--log",
        "k6",
        "--key",
        "customer",
        "--policy",
        r#"algorithm = "fixed_window", limit = 10, window = "1m""#,
        log.to_str().unwrap(),
    ];
    let (out, s) = audit(dir.path(), &args);
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{said}");
    let a = arm(&s, "audit");
    assert_eq!(a["requests"]["sent"], 30, "{said}");
    assert_eq!(a["requests"]["admitted"], 20);
    assert_eq!(a["requests"]["rejected"], 10);
    assert_eq!(a["correctness"]["definite_violations"], 0);
    // The same results against a limit of 5: admits proven past it.
    // (A sliding log: ten admits in 0.6 s may straddle a fixed window's edge.)
    let tight = [
        &args[..5],
        &[r#"algorithm = "sliding_log", limit = 5, window = "1m""#],
        &args[6..],
    ]
    .concat();
    let (out, s) = audit(dir.path(), &tight);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(definite(&s, "audit") > 0);
}

/// vegeta's results as `vegeta encode --to csv` writes them (vegeta is not
/// packaged for Debian): the key read from each row's URL.
#[test]
fn vegeta_results_with_the_key_in_the_url_are_judged() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("results.csv");
    let start_ns: u64 = 1_796_550_000_000_000_000;
    let rows: Vec<String> = (0..24u64)
        .map(|i| {
            let key = format!("k{}", i % 2);
            let code = if i / 2 < 10 { 200 } else { 429 };
            let error = if i == 23 { "\"read: connection reset, peer\"" } else { "" };
            let code = if i == 23 { 0 } else { code };
            format!(
                "{},{code},1500000,0,12,{error},eyJvayI6dHJ1ZX0K,,{i},GET,http://127.0.0.1:8080/v1/items?api_key={key},",
                start_ns + i * 20_000_000
            )
        })
        .collect();
    std::fs::write(&csv, rows.join("\n") + "\n").unwrap();
    let args = [
        "--log",
        "vegeta",
        "--key",
        "query:api_key",
        "--policy",
        r#"algorithm = "sliding_log", limit = 10, window = "1m""#,
        "--max-false-reject-ratio",
        "0",
        csv.to_str().unwrap(),
    ];
    let (out, s) = audit(dir.path(), &args);
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    // 24 rows: 20 admitted, 3 limited, one reset (an error: 1 of 24 is
    // above the default 1% error bound).
    assert_eq!(out.status.code(), Some(1), "{said}");
    let a = arm(&s, "audit");
    assert_eq!(a["requests"]["sent"], 24, "{said}");
    assert_eq!(a["requests"]["admitted"], 20);
    assert_eq!(a["requests"]["rejected"], 3);
    assert_eq!(a["correctness"]["definite_violations"], 0);
    assert!(said.contains("error_ratio"), "{said}");
    let (out, _) = audit(
        dir.path(),
        &[&args[..2], &["--key", "header:X"], &args[4..]].concat(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("query:NAME"),
        "{}",
        text(&out.stderr)
    );
}
