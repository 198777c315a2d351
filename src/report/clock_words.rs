//! What the clocks did, in words: how fast this machine's wall clock ran
//! against the generator's during an arm, and the rate its verdicts allow.

use crate::events::clock::MARGIN_PPM;
use crate::store::summary::ArmSummary;

/// e.g. "the wall clock ran up to 4,832 ppm off the generator's clock (9
/// samples); windows, segments and refills were judged with 4,932 ppm
/// allowed".
pub(crate) fn sentence(a: &ArmSummary) -> Option<String> {
    let c = a.clock.as_ref()?;
    let measured = match c.measured_ppm {
        Some(m) => format!(
            "the wall clock ran up to {} ppm off the generator's clock ({} samples)",
            grouped(m),
            c.samples
        ),
        None => "the wall clock was not sampled long enough to measure its rate".to_string(),
    };
    let mut s = measured;
    if c.simulated_ppm != 0 {
        s.push_str(&format!(
            "; the replicas' clocks were made to run {:+} ppm on it",
            c.simulated_ppm
        ));
    }
    if let Some(d) = c.declared_ppm {
        s.push_str(&format!("; {d} ppm declared for other clocks"));
    }
    s.push_str(&format!(
        "; windows, segments and refills were judged with {} ppm allowed",
        grouped(c.allowed_ppm)
    ));
    Some(s)
}

/// Worth a line in the terminal: a clock that ran off by more than the
/// margin, or one made or declared to.
pub(crate) fn notable(a: &ArmSummary) -> bool {
    a.clock.as_ref().is_some_and(|c| {
        c.measured_ppm.is_some_and(|m| m > MARGIN_PPM)
            || c.simulated_ppm != 0
            || c.declared_ppm.is_some()
    })
}

/// `4832` as `4,832`.
fn grouped(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn rates_are_grouped_by_thousands() {
        assert_eq!(super::grouped(4_832), "4,832");
        assert_eq!(super::grouped(100), "100");
        assert_eq!(super::grouped(-25_000), "-25,000");
    }
}
