//! The terminal summary: one row per arm, the figures a person checks
//! first, then one line per failed expectation.

pub(crate) mod lines;
mod style;

use crate::store::summary::Summary;
use lines::{expected, findings, gate_line, pace_line};
use style::{failed, passed, ratio};

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

/// What the judged columns mean, under each table (at most 80 columns a
/// line). admitted/allowed is a lower bound: allowed is the most any
/// correct limiter could admit (a pair counting apart reads 1.3–1.9x).
const LEGEND: &str = "over-adm: admitted/allowed, a lower bound on the excess (it may be larger)\n\
definite: proven over-admits  false-rej: wrong 429s";

const LEGEND_WIDE: &str = "allowed: most a correct limiter admits  peak: busiest window/limit  \
possible: over-admits some timing allows";

/// The verdict table (`wide`: every column, else those that fit 80
/// columns), a legend, and a line per finding.
pub(crate) fn render(s: &Summary, wide: bool) -> String {
    let mut out = grid(rows(s), wide);
    out.push_str(&legend(s, wide));
    out.push_str(&policies(s));
    for a in &s.arms {
        out.push_str(&findings(a));
    }
    if let Some(sentence) = crate::report::forgotten::sentence(s) {
        out.push_str(&format!("keys across arms: {sentence}\n"));
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

/// Every column of the wide table, in order: a row's cells by these.
const ALL: [&str; 14] = [
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

/// The header row, then one row per arm with every column of [`ALL`].
fn rows(s: &Summary) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = vec![ALL.iter().map(|h| h.to_string()).collect()];
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
    rows
}

/// The table's lines: the columns shown (all with `wide`, else
/// [`NARROW`]'s), each padded to its widest cell, the verdict in colour.
fn grid(rows: Vec<Vec<String>>, wide: bool) -> String {
    let mut out = String::new();
    // The columns shown, by their place in `ALL`.
    let shown: Vec<usize> = (0..ALL.len())
        .filter(|&i| wide || NARROW.contains(&ALL[i]))
        .collect();
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|row| shown.iter().map(|&i| row[i].clone()).collect())
        .collect();
    let header: Vec<&str> = shown.iter().map(|&i| ALL[i]).collect();
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
    out
}

/// What the judged columns mean, when any arm was judged.
fn legend(s: &Summary, wide: bool) -> String {
    let mut out = String::new();
    if s.arms.iter().any(|a| a.correctness.is_some()) {
        out.push_str(LEGEND);
        out.push('\n');
        if wide {
            out.push_str(LEGEND_WIDE);
            out.push('\n');
        }
    }
    out
}

/// The policy every arm was judged against, or each arm's when they differ.
fn policies(s: &Summary) -> String {
    let mut out = String::new();
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
    out
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
            "expected to be caught, and caught (at least 2.44x, 578 admits proven past the policy)"
        );
        // A pair of fixed windows: the bound reads 1.41x, the replay of
        // one ideal limiter shows the pair's 1.90x; both said. Within
        // 0.05 of the bound the replay adds nothing and is left out.
        a.correctness.as_mut().unwrap().over_admission_ratio = Some(1.41);
        a.requests.admitted = 190;
        a.correctness.as_mut().unwrap().replay_admits = 100;
        assert_eq!(
            expected(a).unwrap(),
            "expected to be caught, and caught (at least 1.41x, 578 admits proven past the \
             policy; admitted 1.90x an ideal limiter replayed over the same sends)"
        );
        a.correctness.as_mut().unwrap().replay_admits = 132;
        assert!(!expected(a).unwrap().contains("replayed"));
        a.correctness.as_mut().unwrap().over_admission_ratio = Some(2.44);
        a.expect[0].passed = false;
        assert!(expected(a)
            .unwrap()
            .starts_with("expected to be caught, but not"));

        a.expect[0].kind = "max".into();
        a.expect[0].bound = 0.0;
        assert_eq!(
            expected(a).unwrap(),
            "expected correct, but not (at least 2.44x, 578 admits proven past the policy)"
        );
        // Nothing admitted past the policy, but refusals it allows (a
        // limiter stricter than its policy): said, never "and nothing".
        a.expect[0].passed = true;
        let c = a.correctness.as_mut().unwrap();
        c.definite_violations = 0;
        c.false_rejects = 12;
        let line = expected(a).unwrap();
        assert!(
            line.starts_with(
                "expected correct: nothing is proven past the policy, but it refused 12 \
                 requests the policy allows"
            ),
            "{line}"
        );
        let c = a.correctness.as_mut().unwrap();
        c.definite_violations = 578;
        c.false_rejects = 0;
        a.expect[0].passed = false;
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
        // Admits proven past the policy that no expectation bounds: the
        // gate is met, never "passed".
        let mut unbounded: Summary =
            serde_json::from_str(include_str!("../../tests/fixtures/report-v1/summary.json"))
                .unwrap();
        let c = unbounded.arms[0].correctness.as_mut().unwrap();
        c.definite_violations = 578;
        unbounded.arms[0].expect.retain(|e| e.figure == "p99_ms");
        unbounded.arms[0]
            .expect
            .iter_mut()
            .for_each(|e| e.passed = true);
        unbounded.gate.passed = true;
        unbounded.gate.failures.clear();
        let text = anstream::adapter::strip_str(&render(&unbounded, false)).to_string();
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with("gate: met — every expectation met ("),
            "{last}"
        );
        assert!(
            last.ends_with(&format!(
                "but arm {}: 578 admits proven past the policy, and no expectation bounds them",
                unbounded.arms[0].name
            )),
            "{last}"
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
        assert_eq!(table.len(), 5, "{narrow}");
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
        assert!(table[3].contains("a lower bound on the excess"), "{narrow}");
        assert!(table[4].starts_with("definite: "), "{narrow}");
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

    /// A flood of 503s is named as what a limiter may answer when it
    /// limits, with how to declare it; a few are not, nor are 4xx.
    #[test]
    fn a_flood_of_503s_says_a_limiter_may_answer_them() {
        let mut s: Summary =
            serde_json::from_str(include_str!("../../tests/fixtures/report-v1/summary.json"))
                .unwrap();
        let a = &mut s.arms[0];
        a.requests.sent = 1_000;
        a.requests.error_status_codes = [("503".to_string(), 650)].into_iter().collect();
        let text = findings(a);
        assert!(
            text.contains("650 of 1000 answers were 503: a limiter may answer 503 when it limits"),
            "{text}"
        );
        assert!(text.contains("`limited_status = [503]`"), "{text}");
        // The boundary: a tenth speaks, less does not.
        a.requests.error_status_codes = [("503".to_string(), 100)].into_iter().collect();
        assert!(findings(a).contains("may answer 503"));
        a.requests.error_status_codes = [("503".to_string(), 99)].into_iter().collect();
        assert!(!findings(a).contains("may answer"));
        a.requests.error_status_codes = [("404".to_string(), 900)].into_iter().collect();
        assert!(!findings(a).contains("may answer"));
    }
}
