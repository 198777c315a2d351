//! Whether the limiter told the keys apart, in words, for the terminal,
//! the page and `explain`: a first run against one's own limiter that
//! keys on another header than rlbench sends shows as false rejects on
//! every key, and these say the likely cause. A hint, never a verdict:
//! it speaks only when the arm already has false rejects, which a correct
//! limiter never has.

use crate::store::summary::ArmSummary;

/// One sentence, when the trace looks like a limiter that did not count
/// the keys apart; none otherwise.
pub(crate) fn sentence(a: &ArmSummary) -> Option<String> {
    let k = a.keys.as_ref()?;
    let c = a.correctness.as_ref()?;
    if k.keys < 2 || c.false_rejects == 0 {
        return None;
    }
    let asks = match (&k.key_in, &k.key_header) {
        (Some(place), _) => {
            format!("does your limiter key on {place}, where rlbench sends the key (`[load] key`)")
        }
        (None, Some(h)) => {
            format!("does your limiter key on {h}, the header rlbench sends (`key_header`)")
        }
        (None, None) => {
            "rlbench sent no key header: does your limiter key on one (`key_header`)".to_string()
        }
    };
    let admitted = a.requests.admitted;
    // Every key's admits together about what one key may have: one bucket.
    if admitted.saturating_mul(k.keys).saturating_mul(2) <= c.replay_admits.saturating_mul(3) {
        return Some(format!(
            "all {} keys together were admitted {admitted} times, about what one key may be \
             (a limiter counting each key apart would have admitted about {} over the same \
             sends): {asks}, or count every request in one bucket?",
            k.keys, c.replay_admits
        ));
    }
    (k.first_limited.saturating_mul(2) >= k.keys).then(|| {
        format!(
            "{} of {} keys were limited on their very first request, which a limiter counting \
             each key apart never does to a fresh key: {asks}, or does it remember these keys \
             from an earlier run?",
            k.first_limited, k.keys
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::summary::KeyUse;

    /// An arm of a stored run with `keys`, admitted and replay figures set.
    fn arm(
        keys: u64,
        first_limited: u64,
        admitted: u64,
        replay: u64,
        false_rejects: u64,
    ) -> ArmSummary {
        let text = include_str!("../../tests/fixtures/report-v1/summary.json");
        let s: crate::store::summary::Summary = serde_json::from_str(text).unwrap();
        let mut a = s
            .arms
            .into_iter()
            .find(|a| a.correctness.is_some())
            .unwrap();
        a.keys = Some(KeyUse {
            keys,
            first_limited,
            key_header: Some("X-Customer-Id".into()),
            key_in: None,
        });
        a.requests.admitted = admitted;
        let c = a.correctness.as_mut().unwrap();
        c.replay_admits = replay;
        c.false_rejects = false_rejects;
        a
    }

    #[test]
    fn one_bucket_for_every_key_is_named() {
        // 10 keys got 25 admits where 250 were allowed: one bucket.
        let s = sentence(&arm(10, 4, 25, 250, 300)).unwrap();
        assert!(
            s.starts_with("all 10 keys together were admitted 25 times"),
            "{s}"
        );
        assert!(s.contains("does your limiter key on X-Customer-Id"), "{s}");
        // Keys sent elsewhere are named where they went.
        let mut elsewhere = arm(10, 4, 25, 250, 300);
        elsewhere.keys.as_mut().unwrap().key_in = Some("the client address (one per key)".into());
        let s = sentence(&elsewhere).unwrap();
        assert!(
            s.contains("does your limiter key on the client address (one per key), where"),
            "{s}"
        );
        // The boundary: admitted × keys = 1.5 × replay still says it.
        assert!(sentence(&arm(2, 0, 75, 100, 1)).is_some());
        assert!(sentence(&arm(2, 0, 76, 100, 1)).is_none());
    }

    #[test]
    fn first_requests_limited_on_half_the_keys_are_named() {
        let s = sentence(&arm(10, 5, 240, 250, 3)).unwrap();
        assert!(
            s.starts_with("5 of 10 keys were limited on their very first request"),
            "{s}"
        );
        assert!(sentence(&arm(10, 4, 240, 250, 3)).is_none());
    }

    #[test]
    fn silent_without_false_rejects_or_with_one_key() {
        // A correct limiter has no false rejects: never a hint.
        assert!(sentence(&arm(10, 10, 25, 250, 0)).is_none());
        assert!(sentence(&arm(1, 1, 25, 250, 9)).is_none());
    }
}
