//! What `rlbench compare` shows: its rows and their trend, the terminal
//! table, the JSON document; the HTML page is in `compare/html.rs`.

pub(crate) mod html;

pub(crate) fn render(c: &Comparison) -> String {
    let mut rows = vec![["arm", "figure", "baseline", "candidate", "change"]
        .map(String::from)
        .to_vec()];
    for r in &c.rows {
        let change = r
            .change()
            .map_or("-".to_string(), |ch| format!("{:+.1}%", ch * 100.0));
        rows.push(vec![
            r.arm.clone(),
            r.figure.to_string(),
            show(r.baseline),
            show(r.candidate),
            change,
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, cell)| {
                let pad = " ".repeat(widths[i] - cell.chars().count());
                if i < 2 {
                    format!("{cell}{pad}")
                } else {
                    format!("{pad}{cell}")
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Row {
    pub arm: String,
    pub figure: &'static str,
    pub baseline: Option<f64>,
    pub candidate: Option<f64>,
    /// Whether `--max-regression` judges this figure (a rise is worse).
    pub gated: bool,
    pub trend: Trend,
}

/// How a row moved against the regression bound (`--max-regression`, or
/// any move without one): `Worse` is what compare calls a regression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trend {
    /// A gated figure rose beyond the bound, or became unbounded.
    Worse,
    /// A gated figure fell beyond the bound (the same test, runs swapped).
    Better,
    /// Within the bound, missing on a side, or a figure compare does not gate.
    Even,
}

impl Row {
    /// Relative change, candidate against baseline.
    pub(crate) fn change(&self) -> Option<f64> {
        match (self.baseline, self.candidate) {
            (Some(b), Some(c)) if b != 0.0 => Some((c - b) / b),
            (Some(b), Some(c)) if b == c => Some(0.0),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Comparison {
    pub rows: Vec<Row>,
    pub regressions: Vec<String>,
    /// How the two runs differ in what they ran (scenario, duration, the
    /// arms, an arm's rate, policy, URLs, key place or keys): their
    /// figures are then not comparable.
    pub differences: Vec<String>,
}

/// The comparison as `--format json` prints it: each row with its change
/// (a share, none when it has no meaning), and the regressions.
pub(crate) fn document(c: &Comparison) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = c
        .rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "arm": r.arm,
                "figure": r.figure,
                "baseline": r.baseline,
                "candidate": r.candidate,
                "change": r.change(),
            })
        })
        .collect();
    serde_json::json!({
        "rows": rows,
        "regressions": c.regressions,
        "differences": c.differences,
    })
}

pub(crate) fn show(v: Option<f64>) -> String {
    match v {
        Some(v) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
        Some(v) => format!("{v:.3}"),
        None => "-".to_string(),
    }
}
