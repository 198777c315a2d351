//! report.html in a real browser: headless Chromium (Debian's `chromium`,
//! which .ci/run installs) opens the file from disk, with the network
//! features off; every chart must decode and the verdicts must be there.

use crate::{cdp, common};

use common::text;
use std::process::Command;

fn headless(
    profile: &std::path::Path,
    extra: &[&str],
    page: &std::path::Path,
) -> std::process::Output {
    Command::new(cdp::chromium())
        .args(cdp::FLAGS)
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs")
}

#[test]
fn the_report_opens_from_disk_with_every_chart_and_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = common::run_small(dir.path(), "2s");
    let page = out_dir.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no network references"
    );
    for chart in [
        "admitted-vs-limit.png",
        "latency-spectrum.png",
        "per-replica.png",
        "over-admission.png",
    ] {
        assert!(out_dir.join(chart).is_file(), "{chart}");
    }

    let dom = headless(
        &dir.path().join("p1"),
        &["--virtual-time-budget=5000", "--dump-dom"],
        &page,
    );
    let dom_text = text(&dom.stdout);
    assert!(dom.status.success(), "{}", text(&dom.stderr));
    assert!(
        dom_text.contains("data-charts=\"4/4\""),
        "every chart decoded: {}",
        &dom_text[..dom_text.len().min(400)]
    );
    let start = dom_text
        .find("<li>local: ")
        .expect("a verdict for the local arm");
    let verdict = &dom_text[start..start + dom_text[start..].find("</li>").unwrap()];
    assert!(
        verdict.contains("admitted where a correct limiter could admit at most"),
        "{verdict}"
    );
    assert!(verdict.contains("definite violations"), "{verdict}");
    // The verdict links its proof, and the proof is on the page.
    let link = verdict
        .find("href=\"#witnesses-")
        .map(|i| &verdict[i + 6..i + 6 + verdict[i + 6..].find('"').unwrap()])
        .expect("the verdict links its witnesses");
    let anchor = format!("id=\"{}\"", &link[1..]);
    let at = dom_text
        .find(&anchor)
        .expect("the witnesses the link points at");
    let proof = &dom_text[at..];
    assert!(
        proof.contains("admits, all decided between"),
        "{}",
        &proof[..proof.len().min(400)]
    );
    assert!(proof.contains("<td>admitted</td>"));
    assert!(dom_text.contains("Every expectation met."));

    let shot = dir.path().join("shot.png");
    let screenshot = format!("--screenshot={}", shot.display());
    let s = headless(
        &dir.path().join("p2"),
        &["--window-size=1100,2400", &screenshot],
        &page,
    );
    assert!(s.status.success(), "{}", text(&s.stderr));
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 50_000,
        "a screenshot with charts in it"
    );
}
