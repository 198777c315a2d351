//! The terminal summary: one row per arm, the figures a person checks
//! first, then one line per failed expectation.

use crate::store::summary::{ArmSummary, Summary};

fn ratio(r: Option<f64>) -> String {
    r.map_or("∞".to_string(), |r| format!("{r:.2}x"))
}

/// Red and bold: an expectation failed.
fn failed() -> anstyle::Style {
    anstyle::Style::new()
        .fg_color(Some(anstyle::AnsiColor::Red.into()))
        .bold()
}

/// Green: every expectation met.
fn passed() -> anstyle::Style {
    anstyle::Style::new().fg_color(Some(anstyle::AnsiColor::Green.into()))
}

/// The columns a narrow table keeps (of the wide one's), so that it fits
/// 80 columns with the usual arm names.
const NARROW: [&str; 8] = [
    "arm",
    "sent",
    "admitted",
    "over-adm",
    "definite",
    "false-rej",
    "p99 ms",
    "expect",
];

/// What the judged columns mean, one line each table (at most 80 columns).
const LEGEND: &str =
    "over-adm: admitted/allowed  definite: proven over-admits  false-rej: wrong 429s";
const LEGEND_WIDE: &str = "allowed: most a correct limiter admits  peak: busiest window/limit  \
possible: over-admits some timing allows";

/// The verdict table (`wide`: every column, else those that fit 80
/// columns), a legend, and a line per finding.
pub(crate) fn render(s: &Summary, wide: bool) -> String {
    let mut out = String::new();
    let all = [
        "arm",
        "mode",
        "repl",
        "sent",
        "admitted",
        "allowed",
        "over-adm",
        "peak",
        "definite",
        "possible",
        "false-rej",
        "p50 ms",
        "p99 ms",
        "expect",
    ];
    let mut rows: Vec<Vec<String>> = vec![all.iter().map(|h| h.to_string()).collect()];
    for a in &s.arms {
        let failed = a.expect.iter().filter(|e| !e.passed).count();
        // Met of all when every one holds; failed of all when not.
        let verdict = match (a.expect.len(), failed) {
            (0, _) => "-".to_string(),
            (n, 0) => format!("ok {n}/{n}"),
            (n, f) => format!("FAIL {f}/{n}"),
        };
        let judged = a.correctness.as_ref().map_or_else(
            || vec!["-".to_string(); 6],
            |c| {
                vec![
                    c.allowed_max.to_string(),
                    ratio(c.over_admission_ratio),
                    format!("{:.2}", c.peak_window_ratio),
                    c.definite_violations.to_string(),
                    c.possible_violations.to_string(),
                    c.false_rejects.to_string(),
                ]
            },
        );
        let mut row = vec![
            a.name.clone(),
            a.mode.clone(),
            a.replicas.to_string(),
            a.requests.sent.to_string(),
            a.requests.admitted.to_string(),
        ];
        row.extend(judged);
        row.extend([
            format!("{:.2}", a.latency_ms.p50),
            format!("{:.2}", a.latency_ms.p99),
            verdict,
        ]);
        rows.push(row);
    }
    // The columns shown, by their place in `all`.
    let shown: Vec<usize> = (0..all.len())
        .filter(|&i| wide || NARROW.contains(&all[i]))
        .collect();
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|row| shown.iter().map(|&i| row[i].clone()).collect())
        .collect();
    let header: Vec<&str> = shown.iter().map(|&i| all[i]).collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let last = header.len() - 1;
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, cell)| {
                let pad = widths[i] - cell.chars().count();
                // The verdict in colour (the terminal's stream drops the
                // styles where colour is not wanted), padded as plain text.
                let style = match cell.split(' ').next() {
                    Some("FAIL") if i == last => failed(),
                    Some("ok") if i == last => passed(),
                    _ => anstyle::Style::new(),
                };
                if matches!(header[i], "arm" | "mode") {
                    format!("{cell}{}", " ".repeat(pad))
                } else {
                    format!("{}{style}{cell}{style:#}", " ".repeat(pad))
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    if s.arms.iter().any(|a| a.correctness.is_some()) {
        out.push_str(LEGEND);
        out.push('\n');
        if wide {
            out.push_str(LEGEND_WIDE);
            out.push('\n');
        }
    }
    let first = s.arms.first().map(|a| &a.policy_text);
    if s.arms.iter().all(|a| Some(&a.policy_text) == first) {
        if let Some(policy) = first {
            out.push_str(&format!("policy: {policy}\n"));
        }
    } else {
        for a in &s.arms {
            out.push_str(&format!("policy of {}: {}\n", a.name, a.policy_text));
        }
    }
    for a in &s.arms {
        if let Some(sentence) = super::remote::sentence(a) {
            out.push_str(&format!("targets of {}: {sentence}\n", a.name));
        }
        out.push_str(&rate_line(a));
        if a.rate.not_sent.total() > 0 {
            out.push_str(&format!(
                "not sent in {}: {} of the {} requests scheduled ({})\n",
                a.name,
                a.rate.not_sent.total(),
                a.rate.scheduled,
                a.rate.not_sent.why()
            ));
        }
        for sentence in super::agents::sentences(a) {
            out.push_str(&format!("agent of {}: {sentence}\n", a.name));
        }
        if let Some(sentence) = super::goodput::sentence(a) {
            out.push_str(&format!("goodput of {}: {sentence}\n", a.name));
        }
        if let Some(sentence) = super::redis_use::sentence(a) {
            out.push_str(&format!("redis of {}: {sentence}\n", a.name));
        }
        if let Some(sentence) = super::redis_use::fallback_sentence(a) {
            out.push_str(&format!("redis of {}: {sentence}\n", a.name));
        }
        if let Some(sentence) = super::redis_use::lease_sentence(a) {
            out.push_str(&format!("lease of {}: {sentence}\n", a.name));
        }
        if let Some(line) = errors_line(a) {
            out.push_str(&line);
        }
        if let Some(sentence) = super::clock::sentence(a).filter(|_| super::clock::notable(a)) {
            out.push_str(&format!("clock of {}: {sentence}\n", a.name));
        }
        for sentence in super::phases::sentences(a) {
            out.push_str(&format!("fault in {}: {sentence}\n", a.name));
        }
        for sentence in super::headers::sentences(a) {
            out.push_str(&format!("headers of {}: {sentence}\n", a.name));
        }
        if let Some(sentence) = super::keys::sentence(a) {
            out.push_str(&format!("keys of {}: {sentence}\n", a.name));
        }
        if let Some(sentence) = super::setup::sentence(a) {
            out.push_str(&format!("setup of {}: {sentence}\n", a.name));
        }
        if let Some(sentence) = super::metrics::sentence(a) {
            out.push_str(&format!("metrics of {}: {sentence}\n", a.name));
        }
        if let Some(sentence) = super::spoofing::sentence(a) {
            out.push_str(&format!("spoofing in {}: {sentence}\n", a.name));
        }
        if let Some(sentence) = super::slow::sentence(a) {
            out.push_str(&format!("answers of {}: {sentence}\n", a.name));
        }
    }
    for a in &s.arms {
        if let Some(line) = pace_line(a) {
            out.push_str(&line);
        }
    }
    for a in &s.arms {
        if let Some(sentence) = expected(a) {
            out.push_str(&format!("{}: {sentence}\n", a.name));
        }
    }
    if s.partial {
        let why = s
            .partial_reason
            .as_deref()
            .unwrap_or("the run was interrupted");
        let warn = anstyle::Style::new().fg_color(Some(anstyle::AnsiColor::Yellow.into()));
        out.push_str(&format!("{warn}partial:{warn:#} {why}\n"));
    }
    out.push_str(&gate_line(s));
    out
}

/// What an arm's expectations asked of its limiter, and what it did, so
/// that a green `ok` on a fake limiter reads as "caught, as expected":
/// an arm expected to be caught (a minimum on violations or
/// over-admission), or expected correct (at most 0 definite violations).
fn expected(a: &ArmSummary) -> Option<String> {
    let c = a.correctness.as_ref()?;
    let on = |kind: &str, figures: &[&str]| {
        a.expect
            .iter()
            .filter(|e| e.kind == kind && figures.contains(&e.figure.as_str()))
            .collect::<Vec<_>>()
    };
    let caught = on(
        "min",
        &[
            "definite_violations",
            "over_admission_ratio",
            "peak_window_ratio",
        ],
    );
    let correct = on("max", &["definite_violations"]);
    let proven = format!(
        "{}, {} admits proven past the policy",
        ratio(c.over_admission_ratio),
        c.definite_violations
    );
    if !caught.is_empty() {
        return Some(if caught.iter().all(|e| e.passed) {
            format!("expected to be caught, and caught ({proven})")
        } else {
            format!("expected to be caught, but not ({proven})")
        });
    }
    let correct = correct.first()?;
    Some(if correct.passed && c.definite_violations == 0 {
        "expected correct, and nothing is proven past the policy".to_string()
    } else if correct.passed {
        format!(
            "expected at most {} proven, and within it ({proven})",
            correct.bound
        )
    } else {
        format!("expected correct, but not ({proven})")
    })
}

/// The run's gate in one closing line: met, or how many expectations of
/// all failed and the first of them.
fn gate_line(s: &Summary) -> String {
    let all: usize = s.arms.iter().map(|a| a.expect.len()).sum();
    let n = s.gate.failures.len();
    let (ok, bad) = (passed(), failed());
    match s.gate.failures.first() {
        None if s.gate.passed => {
            format!("{ok}gate: passed{ok:#} — every expectation met ({all} of {all})\n")
        }
        None => format!("{bad}gate: FAILED{bad:#}\n"),
        Some(first) => format!(
            "{bad}gate: FAILED{bad:#} — {n} of {all} expectations ({first}{})\n",
            if n > 1 { ", …" } else { "" }
        ),
    }
}

/// Achieved against target rate, and how late requests left.
fn rate_line(a: &ArmSummary) -> String {
    use super::figures::per_second;
    let lag = &a.schedule_lag_ms;
    if a.from_logs {
        format!(
            "rate of {}: {} requests/s in the logs\n",
            a.name,
            per_second(a.rate.achieved_rps)
        )
    } else if a.rate.target_rps > 0.0 {
        format!(
            "rate of {}: {} of {} requests/s; schedule lag p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms\n",
            a.name,
            per_second(a.rate.achieved_rps),
            per_second(a.rate.target_rps),
            lag.p50,
            lag.p99,
            lag.max
        )
    } else {
        format!(
            "rate of {}: {} requests/s (closed loop)\n",
            a.name,
            per_second(a.rate.achieved_rps)
        )
    }
}

/// The generator fell behind (and by how much), or only left some
/// requests late.
pub(crate) fn pace_line(a: &ArmSummary) -> Option<String> {
    pace_sentence(a).map(|(label, s)| format!("{label} in {}: {s}\n", a.name))
}

/// ("generator saturated" | "late requests", what happened in words).
pub(crate) fn pace_sentence(a: &ArmSummary) -> Option<(&'static str, String)> {
    use crate::store::summary::LATE_LAG_P99_MS;
    let (r, lag) = (&a.rate, &a.schedule_lag_ms);
    let sent = a.requests.sent.min(r.scheduled);
    if r.generator_saturated {
        let what = if r.scheduled > sent {
            format!(
                "sent {sent} of the {} requests scheduled ({} never left)",
                r.scheduled,
                r.scheduled - sent
            )
        } else {
            format!(
                "{} of {} requests/s",
                super::figures::per_second(r.achieved_rps),
                super::figures::per_second(r.target_rps)
            )
        };
        return Some((
            "generator saturated",
            format!(
                "{what}, the typical request {:.1} ms late (schedule lag p50; p99 {:.1} ms) — the limiter saw less load than asked",
                lag.p50, lag.p99
            ),
        ));
    }
    (r.target_rps > 0.0 && lag.p99 > LATE_LAG_P99_MS).then(|| {
        let all = if r.scheduled == 0 || sent >= r.scheduled {
            "every request scheduled was sent".to_string()
        } else {
            format!("{sent} of the {} scheduled were sent", r.scheduled)
        };
        (
            "late requests",
            format!(
                "1 in 100 requests left more than {:.1} ms after its time (schedule lag p99; p50 {:.2} ms, max {:.1} ms); latency counts from the intended time, and {all}",
                lag.p99, lag.p50, lag.max
            ),
        )
    })
}

/// Requests without a decision, by kind: timeouts, failures by kind, and
/// answers that were neither admitted nor rejected, by status.
fn errors_line(a: &ArmSummary) -> Option<String> {
    let r = &a.requests;
    let mut parts = Vec::new();
    if r.timeouts > 0 {
        parts.push(format!("{} timeout", r.timeouts));
    }
    parts.extend(r.errors_by_kind.iter().map(|(k, n)| format!("{n} {k}")));
    parts.extend(
        r.error_status_codes
            .iter()
            .map(|(code, n)| format!("{n} status {code}")),
    );
    (!parts.is_empty()).then(|| format!("errors of {}: {}\n", a.name, parts.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored fixture run, its arms named like three-replicas' longest
    /// and with figures as wide as a 5-minute run's.
    fn fixture() -> Summary {
        let mut s: Summary =
            serde_json::from_str(include_str!("../../tests/fixtures/report-v1/summary.json"))
                .unwrap();
        for (a, name) in s.arms.iter_mut().zip(["redis-naive", "redis-lua"]) {
            a.name = name.to_string();
            a.requests.sent = 6_000_000;
            a.requests.admitted = 3_000_000;
            a.latency_ms.p99 = 1234.56;
            if let Some(c) = a.correctness.as_mut() {
                c.definite_violations = 2_999_999;
                c.false_rejects = 1_234_567;
                c.over_admission_ratio = Some(12.34);
            }
        }
        s
    }

    #[test]
    fn each_arm_says_what_was_expected_and_the_gate_closes() {
        let mut s: Summary =
            serde_json::from_str(include_str!("../../tests/fixtures/report-v1/summary.json"))
                .unwrap();
        let text = anstream::adapter::strip_str(&render(&s, false)).to_string();
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with("gate: passed — every expectation met ("),
            "{text}"
        );
        assert!(text.contains(" ok "), "{text}");
        // An arm expected caught, caught; one expected correct, not.
        let a = &mut s.arms[0];
        a.expect[0].kind = "min".into();
        a.expect[0].figure = "definite_violations".into();
        a.expect[0].passed = true;
        a.correctness.as_mut().unwrap().definite_violations = 578;
        a.correctness.as_mut().unwrap().over_admission_ratio = Some(2.44);
        assert_eq!(
            expected(a).unwrap(),
            "expected to be caught, and caught (2.44x, 578 admits proven past the policy)"
        );
        a.expect[0].passed = false;
        assert!(expected(a)
            .unwrap()
            .starts_with("expected to be caught, but not"));
        a.expect[0].kind = "max".into();
        a.expect[0].bound = 0.0;
        assert_eq!(
            expected(a).unwrap(),
            "expected correct, but not (2.44x, 578 admits proven past the policy)"
        );
        let failure = format!("{}: definite_violations 578 > max 0", a.name);
        s.gate.passed = false;
        s.gate.failures = vec![failure.clone()];
        let text = anstream::adapter::strip_str(&render(&s, false)).to_string();
        let all: usize = s.arms.iter().map(|a| a.expect.len()).sum();
        assert_eq!(
            text.lines().last().unwrap(),
            format!("gate: FAILED — 1 of {all} expectations ({failure})")
        );
        assert!(
            text.contains(&format!(" FAIL 1/{}", s.arms[0].expect.len())),
            "{text}"
        );
    }

    #[test]
    fn the_table_and_its_legend_fit_80_columns_and_wide_shows_every_column() {
        let s = fixture();
        // As a terminal shows it: without the colour's escape codes.
        let narrow = anstream::adapter::strip_str(&render(&s, false)).to_string();
        // The table, its legend: the lines before the policy's.
        let table: Vec<&str> = narrow
            .lines()
            .take_while(|l| !l.starts_with("policy"))
            .collect();
        assert_eq!(table.len(), 4, "{narrow}");
        for line in &table {
            assert!(
                line.chars().count() <= 80,
                "{} columns: {line}",
                line.chars().count()
            );
        }
        assert!(table[0].starts_with("arm "), "{narrow}");
        assert!(!table[0].contains("possible"), "{narrow}");
        assert!(table[3].starts_with("over-adm: "), "{narrow}");
        let wide = anstream::adapter::strip_str(&render(&s, true)).to_string();
        let header = wide.lines().next().unwrap();
        for column in ["mode", "repl", "allowed", "peak", "possible", "p50 ms"] {
            assert!(header.contains(column), "{header}");
        }
        assert!(
            wide.contains("\npossible: ") || wide.contains("  possible: "),
            "{wide}"
        );
    }
}
