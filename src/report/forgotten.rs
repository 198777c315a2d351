//! Keys a limiter forgets, read across arms: an arm of many keys proven
//! past its policy while an arm of the same policy with fewer keys was
//! judged and proven nothing is what a limiter that keeps only so many
//! keys (an LRU cache, a fixed-size table) does — a forgotten key is
//! admitted afresh. A hint, never a verdict: it speaks only beside
//! admits already proven past the policy.

use crate::store::summary::{ArmSummary, Summary};

/// One sentence naming the arm of many keys caught and the arm of few
/// that was not; none otherwise.
pub(crate) fn sentence(s: &Summary) -> Option<String> {
    let judged = |a: &ArmSummary| {
        let c = a.correctness.as_ref()?;
        let keys = a.keys.as_ref()?.keys;
        // A summary read back is outside bytes: keys that sent nothing
        // decided, or a claim of more keys than requests, are no hint.
        let decided = a.requests.admitted.saturating_add(a.requests.rejected);
        (!a.partial && keys >= 1 && keys <= decided).then_some((c.definite_violations, keys))
    };
    s.arms.iter().find_map(|many| {
        let (proven, keys) = judged(many)?;
        if proven == 0 {
            return None;
        }
        // The clean arm of the most keys, the first of equals.
        let few = s
            .arms
            .iter()
            .rev()
            .filter(|a| a.policy_text == many.policy_text)
            .filter_map(|a| judged(a).map(|j| (a, j)))
            .filter(|(_, (proven, fewer))| *proven == 0 && fewer.saturating_mul(4) <= keys)
            .max_by_key(|(_, (_, fewer))| *fewer)?;
        let (clean, (_, fewer)) = few;
        Some(format!(
            "arm {} sent {keys} keys and admitted {proven} past the policy; arm {} sent {fewer} \
             under the same policy and none: does your limiter keep only so many keys, \
             forgetting a key still limited and admitting it afresh (an LRU cache, a fixed-size \
             table such as nginx's limit_req_zone size)? Or does it lose count at that arm's \
             rate?",
            many.name, clean.name
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::summary::KeyUse;

    /// A stored run's arms renamed, each with its keys and proven admits.
    fn summary(arms: &[(&str, u64, u64)]) -> Summary {
        let text = include_str!("../../tests/fixtures/report-v1/summary.json");
        let mut s: Summary = serde_json::from_str(text).unwrap();
        let template = serde_json::to_value(
            s.arms
                .iter()
                .find(|a| a.correctness.is_some())
                .expect("a judged arm"),
        )
        .unwrap();
        s.arms = arms
            .iter()
            .map(|&(name, keys, proven)| {
                let mut a: ArmSummary = serde_json::from_value(template.clone()).unwrap();
                a.name = name.into();
                a.partial = false;
                a.requests.admitted = 3_000;
                a.requests.rejected = 3_000;
                a.keys = Some(KeyUse {
                    keys,
                    first_limited: 0,
                    key_header: Some("X-Customer-Id".into()),
                    key_in: None,
                    stuck: None,
                });
                a.correctness.as_mut().unwrap().definite_violations = proven;
                a
            })
            .collect();
        s
    }

    #[test]
    fn many_keys_caught_beside_few_clean_is_named() {
        let s = sentence(&summary(&[
            ("api", 5, 0),
            ("bursts", 5, 0),
            ("keys", 500, 2_610),
        ]))
        .expect("a hint");
        assert!(
            s.starts_with(
                "arm keys sent 500 keys and admitted 2610 past the policy; arm api sent 5"
            ),
            "{s}"
        );
        assert!(s.contains("an LRU cache"), "{s}");
    }

    #[test]
    fn it_says_nothing_unless_many_keys_alone_were_caught() {
        // Every arm clean, or every arm caught (a pair counting apart).
        assert_eq!(sentence(&summary(&[("api", 5, 0), ("keys", 500, 0)])), None);
        assert_eq!(
            sentence(&summary(&[("api", 5, 40), ("keys", 500, 900)])),
            None
        );
        // The boundary: four times the keys speaks, fewer does not.
        assert!(sentence(&summary(&[("api", 5, 0), ("keys", 20, 9)])).is_some());
        assert_eq!(sentence(&summary(&[("api", 5, 0), ("keys", 19, 9)])), None);
        // Another policy is another question.
        let mut other = summary(&[("api", 5, 0), ("keys", 500, 9)]);
        other.arms[0].policy_text = "sliding_log: 1 per 1s".into();
        assert_eq!(sentence(&other), None);
    }

    /// A summary read back may claim anything: more keys than decided
    /// requests, or a partial arm, gives no hint.
    #[test]
    fn a_forged_summary_gives_no_hint() {
        let mut s = summary(&[("api", 5, 0), ("keys", 500, 9)]);
        s.arms[1].keys.as_mut().unwrap().keys = u64::MAX;
        assert_eq!(sentence(&s), None);
        let mut s = summary(&[("api", 5, 0), ("keys", 500, 9)]);
        s.arms[0].partial = true;
        assert_eq!(sentence(&s), None);
    }
}
