//! `rlbench doctor` as text: one line per check, its level first.

use crate::doctor::Finding;

pub fn render(findings: &[Finding]) -> String {
    let width = findings.iter().map(|f| f.what.len()).max().unwrap_or(0);
    findings
        .iter()
        .map(|f| format!("{:<7}  {:<width$}  {}\n", f.level.name(), f.what, f.detail))
        .collect()
}
