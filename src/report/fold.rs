//! Terminal lines folded at 80 columns: a line wider than that goes on
//! over lines indented two more than its own, broken between words only
//! — never inside one at a hyphen (a URL, a path, a key name), and never
//! between a number and its unit (`5.230 s`) — and a word wider than the
//! width keeps a line of its own, whole. `--wide` skips the folding, and
//! so does output to a pipe unless `COLUMNS` is set ([`width`]).

/// The default width of `run`, `attack`, `explain`, `doctor` and `probe`.
pub(crate) const COLUMNS: usize = 80;

/// The width to fold standard output at: `COLUMNS` when it is set (as
/// shells and CI set it), else 80 on a terminal; none with `--wide`, or
/// when the output goes to a pipe or a file without `COLUMNS` (lines
/// whole for the programs that read them, as `ls` does).
pub(crate) fn width(wide: bool) -> Option<usize> {
    use std::io::IsTerminal;
    if wide {
        return None;
    }
    match std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
    {
        Some(n) if n >= 20 => Some(n),
        _ => std::io::stdout().is_terminal().then_some(COLUMNS),
    }
}

/// The width to fold standard error at: as [`width`], for standard error
/// (logging and the `rlbench:` lines).
pub(crate) fn stderr_width(wide: bool) -> Option<usize> {
    use std::io::IsTerminal;
    if wide {
        return None;
    }
    match std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
    {
        Some(n) if n >= 20 => Some(n),
        _ => std::io::stderr().is_terminal().then_some(COLUMNS),
    }
}

/// `text` folded at [`width`], or as it is.
pub(crate) fn for_stdout(text: &str, wide: bool) -> String {
    match width(wide) {
        Some(w) => fold(text, w),
        None => text.to_string(),
    }
}

/// `text` with every line wider than `width` folded.
pub(crate) fn fold(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if textwrap::core::display_width(line) <= width {
            out.push_str(line);
            continue;
        }
        let indent = line.len() - line.trim_start_matches(' ').len();
        let more = " ".repeat(indent + 2);
        let options = textwrap::Options::new(width)
            .initial_indent(&line[..indent])
            .subsequent_indent(&more)
            .break_words(false)
            .word_separator(textwrap::WordSeparator::AsciiSpace)
            .word_splitter(textwrap::WordSplitter::NoHyphenation);
        let glued = glue_units(&line[indent..]);
        let folded = textwrap::wrap(&glued, options);
        out.push_str(&folded.join("\n").replace(GLUE, " "));
    }
    out
}

/// What holds a number and its unit together while a line is folded (a
/// space the folding does not break at), a space again after.
const GLUE: char = '\u{a0}';

/// The units a number may be followed by in rlbench's lines.
const UNITS: &[&str] = &[
    "s", "ms", "µs", "us", "ns", "min", "h", "MiB", "KiB", "GiB", "B", "%", "x", "ppm",
];

/// `text` with the space between a number and its unit made a [`GLUE`].
fn glue_units(text: &str) -> String {
    let words: Vec<&str> = text.split(' ').collect();
    let mut out = String::with_capacity(text.len());
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            let number = words[i - 1].ends_with(|c: char| c.is_ascii_digit());
            let unit = w.trim_end_matches([')', ',', ';', ':', '.', ']']);
            out.push(if number && UNITS.contains(&unit) {
                GLUE
            } else {
                ' '
            });
        }
        out.push_str(w);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_fits_is_left_as_it_is() {
        let line = "x".repeat(80);
        assert_eq!(fold(&line, 80), line);
        assert_eq!(fold("a\n\nb\n", 80), "a\n\nb\n");
    }

    #[test]
    fn a_wide_line_folds_between_words_indented_two_more() {
        let line = format!("  {}", "word ".repeat(30).trim_end());
        let folded = fold(&line, 40);
        let lines: Vec<&str> = folded.lines().collect();
        assert!(lines.len() > 1);
        assert!(lines.iter().all(|l| l.len() <= 40), "{folded}");
        assert!(lines[0].starts_with("  word"));
        assert!(
            lines[1..].iter().all(|l| l.starts_with("    word")),
            "{folded}"
        );
        // Nothing lost.
        let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(words(&folded), words(&line));
    }

    #[test]
    fn a_word_wider_than_the_width_keeps_a_line_of_its_own() {
        let path = format!("/tmp/{}/report.html", "d".repeat(90));
        let folded = fold(&format!("report: {path} (file://{path})"), 80);
        let lines: Vec<&str> = folded.lines().collect();
        assert_eq!(lines[0], "report:");
        assert_eq!(lines[1], format!("  {path}"));
        assert_eq!(lines[2], format!("  (file://{path})"));
    }

    #[test]
    fn a_url_is_never_split_at_its_hyphens_nor_a_number_from_its_unit() {
        let url = "http://127.0.0.1:8080/api/rate-limited-endpoint-of-the-payments-service";
        let line = format!("{} target {url} answered", "word ".repeat(8).trim_end());
        let folded = fold(&line, 60);
        assert!(folded.lines().any(|l| l.trim() == url), "{folded}");
        // "(5.230 s ≤ 6 s)" folded where the number would end a line.
        for at in 30..50 {
            let line = format!("{} (5.230 s ≤ 6 s) after", "a".repeat(at));
            let folded = fold(&line, 40);
            assert!(
                folded
                    .lines()
                    .all(|l| !l.ends_with("5.230") && !l.ends_with(" 6")),
                "{folded}"
            );
            assert_eq!(folded.replace("\n  ", " ").replace('\n', " "), line);
        }
        // Not a unit: folded as any word.
        assert_eq!(
            glue_units("3 keys, 2 s, 10 ms."),
            "3 keys, 2\u{a0}s, 10\u{a0}ms."
        );
    }

    #[test]
    fn colours_take_no_columns() {
        let red = "\u{1b}[31mFAIL\u{1b}[0m";
        let line = format!("{} {red}", "a".repeat(75));
        assert_eq!(fold(&line, 80), line);
    }
}
