//! The naming rule for names that become folder and file names (scenarios,
//! arms), checked when a scenario is read and again when a run folder is
//! read back.

/// Names that become folder and file names (scenarios, arms): 1–64
/// letters, digits, `-`, `_` or `.`, not starting with `.` — so never a
/// path, never `..`, never hidden.
pub(crate) fn is_name(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 64
        && !v.starts_with('.')
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// The naming rule in words, for errors.
pub(crate) const NAME_RULE: &str = "1-64 letters, digits, '-', '_' or '.', not starting with '.'";
