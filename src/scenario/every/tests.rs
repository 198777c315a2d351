//! Every error in a file: independent ones all found at their own lines,
//! consequences of the blanking never reported, a file that is not TOML
//! read no further than its first error.

use super::{every, MAX_ERRORS};

const GOOD: &str = r#"name = "demo"
duration = "5s"

[policy]
algorithm = "sliding_log"
limit = 10
window = "2s"

[load]
rate = 200
keys = 4

[redis]
timeout = "50ms"

[[arms]]
name = "single"
mode = "local"
"#;

/// GOOD with line `n` (1-based) replaced.
fn with(changes: &[(usize, &str)]) -> String {
    let mut lines: Vec<String> = GOOD.lines().map(str::to_string).collect();
    for (n, text) in changes {
        lines[n - 1] = text.to_string();
    }
    lines.join("\n") + "\n"
}

fn errors(text: &str) -> Vec<(usize, String)> {
    every("s.toml", text)
        .expect_err("errors")
        .into_iter()
        .map(|e| (e.line, e.message))
        .collect()
}

#[test]
fn a_good_file_reads_as_before() {
    assert_eq!(every("s.toml", GOOD).unwrap().name, "demo");
}

#[test]
fn independent_errors_are_all_found_where_they_are_written() {
    let text = with(&[
        (2, "duration = 10"),
        (10, "rat = 200"),
        (14, "timeout = \"fast\""),
        (18, "mode = \"globl\""),
    ]);
    let found = errors(&text);
    let lines: Vec<usize> = found.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines.len(), 4, "{found:?}");
    for l in [2, 10, 14, 18] {
        assert!(lines.contains(&l), "line {l} not reported: {found:?}");
    }
    let at = |l: usize| &found.iter().find(|(n, _)| *n == l).unwrap().1;
    assert!(at(2).contains("\"10s\""), "{}", at(2));
    assert!(at(10).contains("rat"), "{}", at(10));
    assert!(at(14).contains("fast"), "{}", at(14));
    assert!(at(18).contains("globl"), "{}", at(18));
    // What reading the file says is among them, and they come in the
    // file's order.
    let first = crate::scenario::parse("s.toml", &text).unwrap_err();
    assert!(found.contains(&(first.line, first.message)), "{found:?}");
    assert_eq!(lines, vec![2, 10, 14, 18]);
}

#[test]
fn a_required_key_with_a_wrong_value_does_not_hide_the_rest() {
    // duration blanked would be "missing field `duration`"; a placeholder
    // of its type lets reading go on to the misspelt key and the mode,
    // and the misspelt key is read as the name suggested.
    let text = with(&[
        (2, "duration = 10"),
        (10, "rat = 200"),
        (18, "mode = \"globl\""),
    ]);
    let found = errors(&text);
    let lines: Vec<usize> = found.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, vec![2, 10, 18], "{found:?}");
    assert!(
        found.iter().all(|(_, m)| !m.contains("missing")),
        "{found:?}"
    );
}

#[test]
fn a_required_key_the_file_never_had_is_its_own_error() {
    let text = with(&[(2, ""), (10, "rat = 200")]);
    let found = errors(&text);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].1.contains("missing field `duration`"), "{found:?}");
    assert!(found[1].1.contains("`rat`"), "{found:?}");
}

#[test]
fn one_error_is_one_error() {
    let found = errors(&with(&[(6, "limit = 0")]));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, 6);
}

#[test]
fn a_file_that_is_not_toml_stops_at_its_first_error() {
    let found = errors(&with(&[(6, "limit = = 10"), (10, "rat = 200")]));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, 6);
}

#[test]
fn a_key_taken_out_is_not_then_reported_missing() {
    // limit blanked: "sliding_log needs \"limit\"" would follow, at [policy].
    let found = errors(&with(&[(6, "limit = \"ten\""), (10, "rat = 200")]));
    let mut lines: Vec<usize> = found.iter().map(|(l, _)| *l).collect();
    lines.sort_unstable();
    assert_eq!(lines, vec![6, 10], "{found:?}");
    assert!(found.iter().all(|(_, m)| !m.contains("needs")), "{found:?}");
}

#[test]
fn an_error_that_names_a_key_taken_out_is_not_reported() {
    // topology blanked makes the redis single; "only a cluster has
    // masters" would then be the blanking's doing, not the file's.
    let text = with(&[(14, "topology = \"clustr\"\nmasters = 3")]);
    let found = errors(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, 14);
    // With the topology right, masters is fine: the stop was needed.
    assert!(every(
        "s.toml",
        &with(&[(14, "topology = \"cluster\"\nmasters = 3")])
    )
    .is_ok());
}

#[test]
fn an_unknown_table_goes_whole() {
    // Blanking only its header would file its keys under [load].
    let text = with(&[(13, "[rediss]"), (18, "mode = \"globl\"")]);
    let found = errors(&text);
    let lines: Vec<usize> = found.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, vec![13, 18], "{found:?}");
}

#[test]
fn the_list_is_bounded() {
    let many: String = (0..MAX_ERRORS + 5)
        .map(|i| format!("unknown{i} = 1\n"))
        .collect();
    let text = format!("{many}{GOOD}");
    let found = errors(&text);
    assert_eq!(found.len(), MAX_ERRORS);
    let lines: Vec<usize> = found.iter().map(|(l, _)| *l).collect();
    assert!(lines.windows(2).all(|w| w[0] < w[1]), "{lines:?}");
    assert!(lines.iter().all(|&l| l <= MAX_ERRORS + 5), "{lines:?}");
}

#[test]
fn any_line_spoiled_any_way_gives_the_first_error_among_the_rest() {
    let spoils = [
        "",
        "x = 1",
        "[x]",
        "limit = -1",
        "window = 10",
        "mode = 3",
        "= =",
        "\"é\" = \"ü\"",
        "[[arms]]",
    ];
    let n = GOOD.lines().count();
    for a in 1..=n {
        for b in [1, n / 2, n] {
            for (i, s) in spoils.iter().enumerate() {
                let t = spoils[(i + a) % spoils.len()];
                let text = with(&[(a, s), (b, t)]);
                if let Err(found) = every("s.toml", &text) {
                    let first = crate::scenario::parse("s.toml", &text).unwrap_err();
                    assert!(
                        found
                            .iter()
                            .any(|e| e.line == first.line && e.message == first.message),
                        "{text}"
                    );
                    assert!(found.len() <= MAX_ERRORS);
                }
            }
        }
    }
}
