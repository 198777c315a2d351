//! `rlbench doctor` as text: one line per check, its level first.

pub(crate) fn render(findings: &[Finding]) -> String {
    let width = findings.iter().map(|f| f.what.len()).max().unwrap_or(0);
    findings
        .iter()
        .map(|f| format!("{:<7}  {:<width$}  {}\n", f.level.name(), f.what, f.detail))
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Level {
    Ok,
    Warn,
    Missing,
}

impl Level {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Missing => "missing",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Finding {
    pub level: Level,
    pub what: String,
    /// What was found, or the fix.
    pub detail: String,
}
