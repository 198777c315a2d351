//! Admits answered too slowly for the policy's sharp rules, in words for
//! the terminal, the page and `explain`: a verdict of 0 means little when
//! the answers took longer than the spans the rules count in (a segmented
//! window answered in more than a window is judged by its segments alone;
//! a sliding log answered in more than its window, not at all).

use crate::store::summary::ArmSummary;

/// One sentence when some admits were that slow; none otherwise.
pub(crate) fn sentence(a: &ArmSummary) -> Option<String> {
    let c = a.correctness.as_ref()?;
    let t = c.too_slow.as_ref().filter(|t| t.admits > 0)?;
    let all = if t.admits == a.requests.admitted {
        "all".to_string()
    } else {
        format!("{} of", t.admits)
    };
    Some(format!(
        "{all} {} admits were answered too slowly to judge against the policy's window \
         (in {:.3} s or more, the slack included): of those, {} can be proven",
        a.requests.admitted,
        t.from_ms / 1e3,
        t.left
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::summary::{Summary, TooSlow};

    fn arm(admitted: u64, slow: Option<u64>) -> ArmSummary {
        let text = include_str!("../../tests/fixtures/report-v1/summary.json");
        let s: Summary = serde_json::from_str(text).unwrap();
        let mut a = s
            .arms
            .into_iter()
            .find(|a| a.correctness.is_some())
            .unwrap();
        a.requests.admitted = admitted;
        a.correctness.as_mut().unwrap().too_slow = slow.map(|admits| TooSlow {
            admits,
            from_ms: 1_000.0,
            left: "only more than 10 per segment of 0.1 s over long spans".into(),
        });
        a
    }

    #[test]
    fn slow_answers_are_said_with_what_is_left_to_prove() {
        let s = sentence(&arm(604, Some(604))).unwrap();
        assert!(
            s.starts_with("all 604 admits were answered too slowly"),
            "{s}"
        );
        assert!(s.contains("in 1.000 s or more"), "{s}");
        assert!(
            s.ends_with(
                "of those, only more than 10 per segment of 0.1 s over long spans can be proven"
            ),
            "{s}"
        );
        let some = sentence(&arm(604, Some(3))).unwrap();
        assert!(some.starts_with("3 of 604 admits"), "{some}");
        assert_eq!(sentence(&arm(604, None)), None);
        assert_eq!(sentence(&arm(604, Some(0))), None);
    }
}
