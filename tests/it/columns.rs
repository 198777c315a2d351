//! Every line of `run`, `explain` and `doctor` (standard output and
//! standard error) fits 80 columns on a
//! terminal (here `COLUMNS=80`, as a shell sets it): wider ones fold
//! between words, and only a word wider than the width (a path, a URL)
//! keeps a line of its own. `--wide` and a pipe without `COLUMNS` keep
//! lines whole.

use crate::common::{rlbench, rlbench_at, text, write};

/// The lines of `out` wider than `width` that are more than one word.
fn too_wide(out: &str, width: usize) -> Vec<&str> {
    out.lines()
        .filter(|l| l.chars().count() > width)
        .filter(|l| l.split_whitespace().count() > 1)
        .collect()
}

#[test]
fn run_explain_and_doctor_fit_80_columns_and_wide_does_not_fold() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "s.toml",
        &crate::common::small_scenario("2s", ""),
    );
    let s = path.to_str().unwrap();
    let run = rlbench_at(80, &["run", s], dir.path());
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let explain = rlbench_at(80, &["explain", "reports/small/latest"], dir.path());
    assert_eq!(explain.status.code(), Some(0), "{}", text(&explain.stderr));
    let doctor = rlbench_at(80, &["doctor", s], dir.path());
    for (name, out) in [("run", &run), ("explain", &explain), ("doctor", &doctor)] {
        let stdout = text(&out.stdout);
        assert!(stdout.lines().count() >= 3, "{name}: {stdout}");
        let wide = too_wide(&stdout, 80);
        assert!(wide.is_empty(), "{name}: {wide:#?}\n{stdout}");
        // Standard error too: the log (the targets of an arm, three URLs
        // on one line) and the `rlbench:` lines.
        let stderr = text(&out.stderr);
        let wide = too_wide(&stderr, 80);
        assert!(wide.is_empty(), "{name} (stderr): {wide:#?}\n{stderr}");
    }
    assert!(
        text(&run.stderr).contains("INFO arm local"),
        "the log is there to fold: {}",
        text(&run.stderr)
    );
    // The same explanation unfolded: a pipe without COLUMNS, or --wide,
    // has lines over 80 columns (the witnesses' sentences), and the same
    // words — but for the timelines, drawn narrower to fit 80 columns.
    let whole = text(&rlbench(&["explain", "reports/small/latest"], dir.path()).stdout);
    let wide = text(
        &rlbench_at(
            80,
            &["explain", "reports/small/latest", "--wide"],
            dir.path(),
        )
        .stdout,
    );
    assert!(!too_wide(&whole, 80).is_empty(), "{whole}");
    assert_eq!(whole, wide);
    let bar = |w: &&str| w.contains('|') || w.chars().all(|c| c == '#' || c == 'x');
    let words = |s: &str| {
        s.split_whitespace()
            .filter(|w| !bar(w))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(words(&text(&explain.stdout)), words(&whole));
    // The timelines' rows fold no more: each keeps its two `|` on its line.
    let folded = text(&explain.stdout);
    assert!(folded.lines().any(|l| l.ends_with('|')), "{folded}");
    assert!(folded.lines().all(|l| l.trim() != "|"), "{folded}");
}
