//! The header checks in words, for the terminal table and the HTML page:
//! first what was present and what was checked, then each finding.

use crate::events::advertised::Convention;
use crate::store::probes::ProbeResult;
use crate::store::summary::ArmSummary;

/// One overview sentence, then the findings (none when all agrees).
pub(crate) fn sentences(a: &ArmSummary) -> Vec<String> {
    let h = &a.headers;
    if h.responses == 0 {
        return Vec::new();
    }
    if h.with_headers == 0 {
        // The findings say so (and what follows from it).
        return h.findings.clone();
    }
    let mut overview = {
        let names: Vec<String> = Convention::ALL
            .iter()
            .filter_map(|c| {
                let n = h.conventions.get(c.name())?;
                Some(format!(
                    "{} on {}",
                    c.headers(),
                    share(n.present, h.responses)
                ))
            })
            .collect();
        names.join(", ")
    };
    if h.remaining.checked > 0 {
        overview.push_str(&format!(
            "; remaining held against {} limited answers",
            h.remaining.checked
        ));
    }
    let count = |r: ProbeResult| {
        h.retry_after_probes
            .iter()
            .filter(|p| p.result == r)
            .count()
    };
    let (held, broken) = (
        count(ProbeResult::Admitted),
        count(ProbeResult::LimitedAgain),
    );
    if held + broken > 0 {
        overview.push_str(&format!(
            "; Retry-After held in {held} of {} probes",
            held + broken
        ));
    }
    for note in crate::store::probes::notes(&h.retry_after_probes) {
        overview.push_str("; ");
        overview.push_str(&note);
    }
    let mut out = vec![overview];
    out.extend(h.findings.iter().cloned());
    out
}

fn share(part: u64, whole: u64) -> String {
    if part == whole {
        "every answer".to_string()
    } else {
        format!(
            "{:.1}% of answers",
            part as f64 * 100.0 / whole.max(1) as f64
        )
    }
}
