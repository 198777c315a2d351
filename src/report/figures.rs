//! Figures as the renderers write them: a rate with as many digits as it
//! needs (`20000`, `44.9`, `0.001`).

/// Requests per second: whole above 100, one decimal above 1, three
/// significant digits below (so 0.001 is not "0.0").
pub(crate) fn per_second(r: f64) -> String {
    if !r.is_finite() || r <= 0.0 {
        return "0".to_string();
    }
    if r >= 100.0 {
        format!("{r:.0}")
    } else if r >= 1.0 {
        format!("{r:.1}")
    } else {
        let digits = (2 - r.log10().floor() as i32).clamp(1, 9) as usize;
        let text = format!("{r:.digits$}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::per_second;

    #[test]
    fn rates_keep_the_digits_they_need() {
        assert_eq!(per_second(20_000.0), "20000");
        assert_eq!(per_second(150.0), "150");
        assert_eq!(per_second(44.94), "44.9");
        assert_eq!(per_second(0.001), "0.001");
        assert_eq!(per_second(0.25), "0.25");
        assert_eq!(per_second(0.3333), "0.333");
        assert_eq!(per_second(0.0), "0");
    }
}
