//! Every error in a scenario file, not only the first (`rlbench check`).
//!
//! Reading a scenario stops at its first error. To find the next one, the
//! entry that error points at is recovered from the way a compiler does
//! and the text read again: a key `did you mean` names is renamed to the
//! name suggested; otherwise the entry is blanked out — its line, or a
//! whole table when it points at the table's header — and a required key
//! whose blanking is all that is now wrong (`duration = 10`) gets a
//! placeholder of its type instead. Lines keep their numbers, so every
//! error names its place in the file as written. Like a compiler's, the
//! list stops where a later error could be a consequence of the recovery
//! rather than of the file: an error with no place, one that speaks of a
//! key taken out or sits on the header of a table that lost a line, a
//! text the recovery made unreadable. A file that is not TOML at all is
//! read no further than its first error.

use super::spec::{Scenario, ScenarioError};

/// Enough for any file a person writes; a file with more errors than this
/// is better fixed from the top.
pub(crate) const MAX_ERRORS: usize = 20;

/// Values tried, in order, for a required key whose own value was wrong:
/// one of them is of the key's type (a duration, a count, a switch, a
/// name), and any that is wrong again is an error on the same line, which
/// rules it out.
const PLACEHOLDERS: [&str; 4] = ["\"1s\"", "1", "true", "\"x\""];

/// What was changed in the text: the lines (0-based, end exclusive) and
/// the key or table name they held.
#[derive(Clone)]
struct Blanked {
    lines: std::ops::Range<usize>,
    name: String,
}

/// The scenario, or every error found in it (at least one), in the order
/// of the file (reading finds them in its own order: a table's keys
/// sorted by name).
pub(crate) fn every(file: &str, text: &str) -> Result<Scenario, Vec<ScenarioError>> {
    let first = match super::validate::scenario(file, text) {
        Ok(s) => return Ok(s),
        Err(e) => e,
    };
    let mut errors = vec![first];
    if toml::from_str::<toml::Table>(text).is_err() {
        return Err(errors);
    }
    let written: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    let mut lines = written.clone();
    let mut blanked: Vec<Blanked> = Vec::new();
    'errors: while errors.len() < MAX_ERRORS {
        let last = &errors[errors.len() - 1];
        for (mut now, b) in recoveries(&lines, last) {
            let mut with = blanked.clone();
            with.push(b);
            let mut next = read(file, &now);
            if let Read::Error(e) = &next {
                if let Some(at) = required_blanked(e, &with) {
                    if let Some((placed, after)) = placeholder(file, &now, &written[at], at) {
                        now = placed;
                        next = after;
                    }
                }
            }
            let e = match next {
                Read::Clean => break 'errors,
                Read::Unreadable => continue,
                Read::Error(e) => e,
            };
            let seen = errors
                .iter()
                .any(|x| x.line == e.line && x.message == e.message);
            if e.line == last.line || seen || follows(&e, &with, &written, &now) {
                continue;
            }
            lines = now;
            blanked = with;
            errors.push(e);
            continue 'errors;
        }
        break;
    }
    errors.sort_by_key(|e| (e.line, e.column));
    Err(errors)
}

/// What reading a recovered text found.
enum Read {
    Clean,
    Error(ScenarioError),
    /// The recovery broke the TOML itself (a line of a value written over
    /// several lines): it says nothing of the file.
    Unreadable,
}

fn read(file: &str, lines: &[String]) -> Read {
    let text = lines.concat();
    if toml::from_str::<toml::Table>(&text).is_err() {
        return Read::Unreadable;
    }
    match super::validate::scenario(file, &text) {
        Ok(_) => Read::Clean,
        Err(e) => Read::Error(e),
    }
}

/// The texts to read again after `error`, most likely first, each with
/// what it changed: the name a `did you mean` suggests, then the entry
/// blanked; before blanking, the line a `write …` hint gives.
fn recoveries(lines: &[String], error: &ScenarioError) -> Vec<(Vec<String>, Blanked)> {
    let mut out = Vec::new();
    let Some(at) = error.line.checked_sub(1) else {
        return out;
    };
    let Some(text) = lines.get(at).map(|l| l.trim()) else {
        return out;
    };
    if text.is_empty() {
        return out;
    }
    if let (false, Some((_, value)), Some(name)) = (
        is_header(text),
        text.split_once('='),
        suggested(&error.message),
    ) {
        let mut now = lines.to_vec();
        now[at] = format!("{name} ={value}\n");
        out.push((
            now,
            Blanked {
                lines: at..at + 1,
                name: name_of(text),
            },
        ));
    }
    // The line the message says to write (`duration = "10s"` for
    // `duration = 10`): the file as meant, so nothing is taken out.
    if let Some(line) = rewritten(&error.message) {
        let mut now = lines.to_vec();
        now[at] = format!("{line}\n");
        out.push((
            now,
            Blanked {
                lines: at..at + 1,
                name: String::new(),
            },
        ));
    }
    let mut now = lines.to_vec();
    let b = blank(&mut now, at);
    out.push((now, b));
    out
}

/// The line (0-based) of a key the recovery blanked and `e` now says is
/// missing: a required key whose value was wrong.
fn required_blanked(e: &ScenarioError, blanked: &[Blanked]) -> Option<usize> {
    let name = missing_field(&e.message)?;
    blanked
        .iter()
        .find(|b| b.name == name && b.lines.len() == 1)
        .map(|b| b.lines.start)
}

/// `lines` with the key `written` (the line as the file has it) back at
/// `at` holding a placeholder of its type instead of its value, and what
/// reading that finds; None when every placeholder is wrong again there.
fn placeholder(
    file: &str,
    lines: &[String],
    written: &str,
    at: usize,
) -> Option<(Vec<String>, Read)> {
    let (key, _) = written.split_once('=')?;
    PLACEHOLDERS.iter().find_map(|value| {
        let mut now = lines.to_vec();
        now[at] = format!("{} = {value}\n", key.trim());
        match read(file, &now) {
            Read::Unreadable => None,
            Read::Error(e) if e.line == at + 1 => None,
            found => Some((now, found)),
        }
    })
}

/// The line a `write …` hint gives (`duration = "10s"`).
fn rewritten(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once(": write ")?;
    let (line, _) = rest.split_once(" (or ")?;
    Some(line)
}

/// The name a `did you mean` hint suggests.
fn suggested(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once("did you mean `")?;
    let (name, _) = rest.split_once('`')?;
    Some(name)
}

/// Blanks the entry at line `at` (0-based, not empty): a table from its
/// header to the next header, else the one line.
fn blank(lines: &mut [String], at: usize) -> Blanked {
    let text = lines[at].trim();
    let end = if is_header(text) {
        (at + 1..lines.len())
            .find(|&i| is_header(lines[i].trim()))
            .unwrap_or(lines.len())
    } else {
        at + 1
    };
    let name = name_of(text);
    for l in &mut lines[at..end] {
        let newline = l.ends_with('\n');
        l.clear();
        if newline {
            l.push('\n');
        }
    }
    Blanked {
        lines: at..end,
        name,
    }
}

fn is_header(trimmed: &str) -> bool {
    trimmed.starts_with('[')
}

/// The key a line sets (`limit = 10` → `limit`), or the table a header
/// opens (`[[arms]]` → `arms`); the last part of a dotted name.
fn name_of(trimmed: &str) -> String {
    let name = if is_header(trimmed) {
        trimmed.trim_matches(|c| c == '[' || c == ']')
    } else {
        trimmed.split('=').next().unwrap_or("")
    };
    let name = name.trim().rsplit('.').next().unwrap_or("");
    name.trim().trim_matches('"').to_string()
}

/// Whether `e` may follow from what was blanked rather than from the file
/// (`written`, as the file has it; `lines`, as read now).
fn follows(e: &ScenarioError, blanked: &[Blanked], written: &[String], lines: &[String]) -> bool {
    if e.line == 0 {
        return true;
    }
    let at = e.line - 1;
    let names = blanked
        .iter()
        .any(|b| !b.name.is_empty() && mentions(&e.message, &b.name));
    let header_of_blanked = lines.get(at).is_some_and(|l| is_header(l.trim())) && {
        let end = (at + 1..lines.len())
            .find(|&i| is_header(lines[i].trim()))
            .unwrap_or(lines.len());
        blanked
            .iter()
            .any(|b| b.lines.start > at && b.lines.start < end)
    };
    // A key the file has, said to be missing, was taken out by the
    // recovery; one the file never had is the file's own error.
    let taken_out =
        missing_field(&e.message).is_some_and(|k| written.iter().any(|l| name_of(l.trim()) == k));
    names || header_of_blanked || taken_out
}

/// The key a `missing field` error names.
fn missing_field(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once("missing field `")?;
    rest.split_once('`').map(|(name, _)| name)
}

/// `word` in `text` as a whole word (not inside a longer name).
fn mentions(text: &str, word: &str) -> bool {
    let is_name = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = !text[..i].chars().next_back().is_some_and(is_name);
        let after = !text[i + word.len()..].chars().next().is_some_and(is_name);
        before && after
    })
}

#[cfg(test)]
mod tests;
