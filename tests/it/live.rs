//! `rlbench run --live`: a real run followed in headless Chromium (the
//! counters move, nothing but the live server is asked, no console error,
//! the report is linked at the end), and the flag's refusals (an address
//! off loopback, a port in use) before anything starts.

use crate::cdp::Browser;
use crate::common::{self, text};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The live URL rlbench prints on stderr (`live: http://…/`).
fn live_url(lines: &mpsc::Receiver<String>, said: &mut Vec<String>) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => {
                if let Some(url) = line.strip_prefix("live: ") {
                    return url.trim().to_string();
                }
                said.push(line);
            }
            Err(_) => panic!("no `live:` line on stderr; it said: {said:?}"),
        }
    }
}

fn number(browser: &mut Browser, id: &str) -> u64 {
    let js = format!("Number(document.getElementById('{id}').dataset.value)");
    browser.eval(&js).as_u64().unwrap_or(0)
}

#[test]
fn the_live_view_follows_a_run_in_a_browser_and_links_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::write(dir.path(), "s.toml", &common::small_scenario("4s", ""));
    let child = Command::new(common::bin())
        .args(["run", scenario.to_str().unwrap(), "--out", "out", "-q"])
        .args(["--live", "127.0.0.1:0"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rlbench starts");
    let mut running = common::Running(Some(child));
    let stderr = running.0.as_mut().unwrap().stderr.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut said = Vec::new();
    let url = live_url(&lines, &mut said);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let origin = url.trim_end_matches('/').to_string();

    let mut browser = Browser::launch();
    browser.open(&url);
    browser.wait_for(
        "document.body.dataset.state === 'running' && Number(document.getElementById('sent').dataset.value) > 0",
        Duration::from_secs(30),
    );
    // Two reads 1.5 s apart within one arm: its counters have moved.
    let label = "document.getElementById('arm-label').textContent";
    let mut tries = 0;
    loop {
        let (arm, first) = (browser.eval(label), number(&mut browser, "sent"));
        std::thread::sleep(Duration::from_millis(1_500));
        let (later_arm, second) = (browser.eval(label), number(&mut browser, "sent"));
        if arm == later_arm {
            assert!(
                second > first,
                "{arm}: sent {first}, then {second} 1.5 s later"
            );
            break;
        }
        tries += 1;
        assert!(tries < 3, "the arms went by too fast to watch");
    }
    let admitted = number(&mut browser, "admitted");
    let rejected = number(&mut browser, "rejected");
    assert!(admitted > 0 && rejected > 0, "{admitted} {rejected}");
    let latency = browser.wait_for(
        "(t => t.includes('ms') && t)(document.getElementById('latency').textContent)",
        Duration::from_secs(5),
    );
    assert!(latency.as_str().unwrap().contains(" / "), "{latency}");
    let progress = browser.eval("document.getElementById('progress').value");
    assert!(progress.as_f64().unwrap() > 0.0, "{progress}");
    let lines_drawn = browser.wait_for(
        "document.querySelectorAll('#chart-outcomes polyline').length",
        Duration::from_secs(5),
    );
    assert_eq!(
        lines_drawn,
        json!(3),
        "admitted, rejected and errors per second"
    );
    // Both charts have axes: values from 0 with the unit on the top tick,
    // and the time since the arm began along the bottom.
    for (id, unit) in [("chart-outcomes", "/s"), ("chart-latency", " ms")] {
        let ticks = browser.eval(&format!(
            "[...document.querySelectorAll('#{id} text.tick')].map(t => t.textContent)"
        ));
        let ticks: Vec<String> = serde_json::from_value(ticks).unwrap();
        assert_eq!(
            ticks.first().map(String::as_str),
            Some("0"),
            "{id}: {ticks:?}"
        );
        assert!(ticks.iter().any(|t| t.ends_with(unit)), "{id}: {ticks:?}");
        assert!(ticks.iter().any(|t| t == "0 s"), "{id}: {ticks:?}");
        assert!(
            ticks.iter().filter(|t| t.ends_with(" s")).count() >= 2,
            "{id}: {ticks:?}"
        );
    }

    // The end: each arm's verdict, and the report, kept by the page.
    browser.wait_for(
        "document.body.dataset.state === 'finished' && document.getElementById('report').dataset.saved === 'yes'",
        Duration::from_secs(90),
    );
    let verdicts =
        browser.eval("[...document.querySelectorAll('#finished li')].map(li => li.textContent)");
    let verdicts: Vec<&str> = verdicts
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(verdicts.len(), 2, "{verdicts:?}");
    assert!(verdicts[0].starts_with("single: "), "{verdicts:?}");
    assert!(
        verdicts
            .iter()
            .all(|v| v.contains("admitted where a correct limiter could admit at most")),
        "{verdicts:?}"
    );
    let path = browser.eval("document.getElementById('report-path').textContent");
    assert!(path.as_str().unwrap().ends_with("report.html"), "{path}");
    let link = browser.eval("document.getElementById('report').href");
    assert!(link.as_str().unwrap().starts_with("blob:"), "{link}");

    let errors = browser.console_errors();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    let requests = browser.requests();
    assert!(!requests.is_empty());
    assert!(
        requests
            .iter()
            .all(|u| u.starts_with(&origin) || u.starts_with(&format!("blob:{origin}"))),
        "only the live server is asked: {requests:?}"
    );

    // rlbench exits by itself once the page has the end; nothing is left.
    let child = running.0.as_mut().unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "rlbench did not exit after the run"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    said.extend(lines.try_iter());
    assert_eq!(status.code(), Some(0), "{said:?}");
    common::none_left(pid, Duration::from_secs(10));
    assert!(
        std::net::TcpStream::connect(url.trim_start_matches("http://").trim_end_matches('/'))
            .is_err(),
        "the live server stopped with rlbench"
    );
    browser.screenshot(&dir.path().join("live.png"));
    // The page's copy of the report opens with rlbench gone.
    browser.open(link.as_str().unwrap());
    let verdict = browser.eval("document.body.innerText.includes('Every expectation met')");
    assert_eq!(verdict, json!(true), "the report, from the page's copy");
}

#[test]
fn live_refuses_an_address_off_loopback_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::write(dir.path(), "s.toml", &common::small_scenario("1s", ""));
    let out = common::rlbench(
        &[
            "run",
            scenario.to_str().unwrap(),
            "--out",
            "out",
            "--live",
            "10.0.0.1:0",
        ],
        dir.path(),
    );
    common::exited(&out, 2);
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--live"), "{err}");
    assert!(err.contains("not a loopback address"), "{err}");
    assert!(!dir.path().join("out").exists(), "nothing ran");
}

#[test]
fn live_on_a_port_in_use_says_so_in_one_line_before_any_load() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::write(dir.path(), "s.toml", &common::small_scenario("1s", ""));
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = common::rlbench(
        &[
            "run",
            scenario.to_str().unwrap(),
            "--out",
            "out",
            "--live",
            &addr,
        ],
        dir.path(),
    );
    common::exited(&out, 3);
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("--live {addr}: the address is in use")),
        "{err}"
    );
    assert!(!dir.path().join("out").exists(), "nothing ran");
}
