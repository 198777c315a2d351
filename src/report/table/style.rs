//! The verdict table's styles and number forms: red and bold for a failed
//! expectation, green for all met, a ratio with an infinite one as `∞`.

pub(crate) fn ratio(r: Option<f64>) -> String {
    r.map_or("∞".to_string(), |r| format!("{r:.2}x"))
}

/// Red and bold: an expectation failed.
pub(crate) fn failed() -> anstyle::Style {
    anstyle::Style::new()
        .fg_color(Some(anstyle::AnsiColor::Red.into()))
        .bold()
}

/// Green: every expectation met.
pub(crate) fn passed() -> anstyle::Style {
    anstyle::Style::new().fg_color(Some(anstyle::AnsiColor::Green.into()))
}
