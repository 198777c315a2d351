//! report.html's interactive views in a real browser (Chromium over the
//! DevTools protocol, `cdp`): a small run with a fake global limit, its
//! page opened from disk; the over-time charts draw, a key picked on the
//! timeline shows its requests with the witness outlined, the policy's
//! window follows the pointer, an unknown key is said, and the page logs
//! no error and requests nothing beyond itself.

use crate::{cdp, common};
use std::time::Duration;

/// Runs `js` after selecting `value` in the `<select id=id>`.
fn choose(b: &mut cdp::Browser, id: &str, value: &str) {
    b.eval(&format!(
        "(() => {{ const s = document.getElementById({id:?}); s.value = {value:?}; \
         s.dispatchEvent(new Event('change')); return s.value; }})()"
    ));
}

fn count(b: &mut cdp::Browser, selector: &str) -> u64 {
    b.eval(&format!("document.querySelectorAll({selector:?}).length"))
        .as_u64()
        .unwrap()
}

#[test]
fn a_key_is_picked_and_its_witness_is_outlined_on_the_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = common::run_small(dir.path(), "3s");
    let page = std::fs::canonicalize(out_dir.join("report.html")).unwrap();
    assert!(out_dir.join("page.json").is_file());
    let url = url::Url::from_file_path(&page).unwrap().to_string();

    let mut b = cdp::Browser::launch();
    b.open(&url);
    b.wait_for(
        "document.body.dataset.ready === '1'",
        Duration::from_secs(20),
    );

    // Four charts over time per arm (requests by outcome and status, the
    // busiest key against its band, latency, lag), each a uPlot canvas.
    let arms =
        b.eval("JSON.parse(document.getElementById('rlbench-data').textContent).arms.length");
    assert_eq!(arms, 2, "single and local");
    assert_eq!(count(&mut b, ".over-time .uplot canvas"), 8);
    // A 3 s run: no chart under 20 points, every legend says something
    // (a total or a peak) before the pointer comes near, and each
    // chart's y axis starts at zero.
    let points =
        b.eval("[...document.querySelectorAll('.over-time .chart')].map(d => +d.dataset.points)");
    let points: Vec<u64> = serde_json::from_value(points).unwrap();
    assert_eq!(points.len(), 8, "{points:?}");
    assert!(points.iter().all(|&n| n >= 20), "{points:?}");
    let legends = b.eval(
        "[...document.querySelectorAll('.over-time .u-legend .u-series:not(:first-child) .u-value')].map(v => v.textContent)",
    );
    let legends: Vec<String> = serde_json::from_value(legends).unwrap();
    assert!(legends.len() >= 8, "{legends:?}");
    assert!(
        legends.iter().all(|v| !v.trim().is_empty()
            && v != "--"
            && (v.ends_with(" in all") || v.starts_with("peak"))),
        "{legends:?}"
    );
    let admitted = legends.iter().find(|v| v.ends_with(" in all")).unwrap();
    assert_ne!(admitted, "0 in all", "{legends:?}");
    let from = b.eval(
        "[...document.querySelectorAll('.over-time .chart')].map(d => [+d.dataset.xmin, +d.dataset.ymin])",
    );
    let from: Vec<(f64, f64)> = serde_json::from_value(from).unwrap();
    assert!(
        from.iter().all(|&p| p == (0.0, 0.0)),
        "axes from zero: {from:?}"
    );
    // The correct arm's admits stay inside the band; the fake global's do not.
    let inside = b.eval(
        "JSON.parse(document.getElementById('rlbench-data').textContent).arms\
         .map(a => a.window.admitted.every(n => n <= a.window.most))",
    );
    assert_eq!(
        inside,
        serde_json::json!([true, false]),
        "single inside, local above"
    );

    // Pick the local arm, then a key with a witness.
    let local = b.eval(
        "[...document.getElementById('timeline-arm').options].find(o => o.textContent === 'local').value",
    );
    choose(&mut b, "timeline-arm", local.as_str().unwrap());
    let key = b.eval(
        "[...document.getElementById('timeline-key').options].find(o => o.textContent.includes('witness')).value",
    );
    choose(&mut b, "timeline-key", key.as_str().unwrap());
    let requests = count(&mut b, "#timeline-svg rect.req");
    let hits = count(&mut b, "#timeline-svg rect.req.hit");
    assert!(requests > 0, "the key's requests are drawn");
    // Every request the witness names is in view and outlined; a
    // violation of 5 per second holds more than 5 admits.
    let named = b.eval(
        "(() => { const d = JSON.parse(document.getElementById('rlbench-data').textContent);          const arm = d.arms[+document.getElementById('timeline-arm').value];          const key = arm.keys[+document.getElementById('timeline-key').value].key;          return arm.witnesses.find(w => w.key === key).requests.length; })()",
    );
    assert_eq!(Some(hits), named.as_u64(), "outlined: {hits} of {requests}");
    assert!(hits > 5, "{hits}");
    assert_eq!(count(&mut b, "#timeline-svg rect.witness-span"), 1);
    assert!(
        count(&mut b, "#timeline-svg text.lane") >= 2,
        "a lane per replica"
    );
    let said =
        b.eval("document.querySelector('#timeline-witness .witness-choice.chosen').textContent");
    let said = said.as_str().unwrap();
    assert!(said.starts_with("Violation: customer-"), "{said}");
    assert!(said.contains("each replica counts alone"), "{said}");
    // Times in the policy's terms: nothing finer than a millisecond.
    let fine = said
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.split_once('.'))
        .find(|(_, frac)| frac.len() > 3);
    assert_eq!(fine, None, "{said}");

    // The policy's window follows the pointer, with its admits and the limit.
    let window = b.eval(
        "(() => { const s = document.getElementById('timeline-svg'); const r = s.getBoundingClientRect(); \
         s.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + r.width * 0.6, clientY: r.top + 20})); \
         const c = s.querySelector('g.cursor'); return [c.getAttribute('visibility'), c.textContent]; })()",
    );
    assert_eq!(window[0], "visible");
    let text = window[1].as_str().unwrap();
    assert!(
        text.contains("admits decided inside") && text.contains("limit 5"),
        "{text}"
    );

    // A key the page does not carry is said, not silently ignored.
    b.eval(
        "(() => { const s = document.getElementById('timeline-search'); s.value = 'nobody'; \
         s.dispatchEvent(new Event('change')); })()",
    );
    let note = b.eval("document.getElementById('timeline-note').textContent");
    assert!(
        note.as_str()
            .unwrap()
            .contains("is not among the keys this page carries"),
        "{note}"
    );

    let shot = dir.path().join("timeline.png");
    b.eval("document.getElementById('timeline').scrollIntoView()");
    b.screenshot(&shot);
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 20_000,
        "a screenshot"
    );

    assert_eq!(
        b.console_errors(),
        Vec::<String>::new(),
        "no console errors"
    );
    let elsewhere: Vec<String> = b
        .requests()
        .into_iter()
        .filter(|u| !(u.starts_with("file:") || u.starts_with("data:") || u.starts_with("about:")))
        .collect();
    assert!(elsewhere.is_empty(), "no network requests: {elsewhere:?}");
}
