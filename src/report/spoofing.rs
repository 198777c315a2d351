//! Principals under forged identities (`[load] spoof`), in words, for the
//! terminal, the page and `explain`: who really called against what the
//! limiter was told. The arm's verdicts are per principal; this says what
//! judging each key as sent gave beside them, and what that means.

use crate::store::summary::ArmSummary;

/// One sentence for an arm whose principals spoofed; none otherwise.
pub(crate) fn sentence(a: &ArmSummary) -> Option<String> {
    let s = a.spoofing.as_ref()?;
    let who = format!(
        "{} principals sent under {} forged identities each ({} forged{}; {} keys sent)",
        s.spoofed.principals,
        s.spoofed.forged_keys,
        s.spoofed.forged.join(" and "),
        s.spoofed
            .own
            .as_ref()
            .map(|own| format!(", each with {own} beside"))
            .unwrap_or_default(),
        s.keys_sent,
    );
    let Some(c) = a.correctness.as_ref() else {
        return Some(format!("{who}; no policy to judge them by"));
    };
    let as_sent = s.per_key_sent.as_ref().map(|v| {
        let why = if v.false_rejects > 0 && c.false_rejects == 0 {
            " — forged keys refused because their caller had spent its limit: it counts the \
             caller, not the key it was sent"
        } else {
            ""
        };
        format!(
            "judged per key sent, as the limiter was told: {} definite violations, {} false \
             rejects{why}",
            v.definite_violations, v.false_rejects
        )
    });
    let verdict = if c.definite_violations > 0 {
        format!(
            "judged per principal, {} admits past the policy are proven: the limiter keys on \
             something its callers forge, so each walks past its limit by changing it; key on \
             what a caller cannot forge (a verified token's claim)",
            c.definite_violations
        )
    } else {
        "judged per principal, each was held to its limit: the limiter keys on something \
         its callers cannot forge"
            .to_string()
    };
    Some(match as_sent {
        Some(as_sent) => format!("{who}; {verdict} ({as_sent})"),
        None => format!("{who}; {verdict}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::records::Spoofed;
    use crate::store::summary::{KeySentVerdict, Spoofing, Summary};

    fn arm(definite: u64, per_key: Option<(u64, u64)>) -> ArmSummary {
        let text = include_str!("../../tests/fixtures/report-v1/summary.json");
        let summary: Summary = serde_json::from_str(text).unwrap();
        let mut a = summary
            .arms
            .into_iter()
            .find(|a| a.correctness.is_some())
            .unwrap();
        a.correctness.as_mut().unwrap().definite_violations = definite;
        a.spoofing = Some(Spoofing {
            spoofed: Spoofed {
                principals: 4,
                forged_keys: 100,
                forged: vec!["the key".into(), "X-Forwarded-For".into()],
                own: Some("a JWT of its own".into()),
            },
            keys_sent: 397,
            per_key_sent: per_key.map(|(d, f)| KeySentVerdict {
                definite_violations: d,
                false_rejects: f,
            }),
        });
        a
    }

    #[test]
    fn forged_keys_past_the_limit_are_said_and_held_ones_too() {
        let walked = sentence(&arm(812, Some((0, 0)))).unwrap();
        assert!(walked.starts_with("4 principals sent under 100 forged identities each (the key and X-Forwarded-For forged, each with a JWT of its own beside; 397 keys sent)"), "{walked}");
        assert!(
            walked.contains("812 admits past the policy are proven"),
            "{walked}"
        );
        assert!(
            walked.contains(
                "per key sent, as the limiter was told: 0 definite violations, 0 false rejects"
            ),
            "{walked}"
        );
        let held = sentence(&arm(0, Some((0, 350)))).unwrap();
        assert!(held.contains("each was held to its limit"), "{held}");
        assert!(
            held.contains(
                "350 false rejects — forged keys refused because their caller had spent its limit"
            ),
            "{held}"
        );
        let mut plain = arm(0, None);
        plain.spoofing = None;
        assert_eq!(sentence(&plain), None);
    }
}
