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
    let one_bucket =
        admitted.saturating_mul(k.keys).saturating_mul(2) <= c.replay_admits.saturating_mul(3);
    // Half the keys or more refused without a break for longer than the
    // policy keeps anything: named, before any question about the key.
    // A summary read back is outside bytes: more stuck keys than keys, or
    // a stretch that is not a number of seconds, is no hint at all.
    let stuck = k.stuck.as_ref().filter(|s| {
        s.keys <= k.keys
            && s.keys.saturating_mul(2) >= k.keys
            && s.longest_s.is_finite()
            && s.longest_s >= 0.0
    });
    if let Some(st) = stuck {
        let mut named: Vec<&str> = st
            .named
            .iter()
            .take(crate::store::summary::STUCK_NAMED)
            .map(String::as_str)
            .collect();
        if st.keys > named.len() as u64 {
            named.push("…");
        }
        return Some(format!(
            "{} of {} keys were refused without a break for up to {:.1} s ({}), where the \
             policy lets a key in again within its window: does your limiter extend a key's limit on every request (a TTL refreshed on each hit), \
             or count refused requests too (`count_rejected = true`){}?",
            st.keys,
            k.keys,
            st.longest_s,
            named.join(", "),
            if one_bucket {
                ", or count every key in one bucket"
            } else {
                ""
            }
        ));
    }
    if one_bucket {
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
            stuck: None,
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

    /// Keys a limiter stricter than its policy keeps shut (a TTL
    /// refreshed on each hit) are named, not asked about the header; at
    /// fewer than half the keys stuck, the other hints speak.
    #[test]
    fn keys_refused_without_a_break_are_named() {
        let stuck = |keys: u64| {
            let mut a = arm(10, 0, 30, 250, 200);
            a.keys.as_mut().unwrap().stuck = Some(crate::store::summary::Stuck {
                keys,
                named: vec![
                    "customer-0003".into(),
                    "customer-0001".into(),
                    "customer-0007".into(),
                ],
                longest_s: 8.04,
            });
            a
        };
        let s = sentence(&stuck(5)).unwrap();
        assert!(
            s.starts_with(
                "5 of 10 keys were refused without a break for up to 8.0 s (customer-0003, \
                 customer-0001, customer-0007, …)"
            ),
            "{s}"
        );
        assert!(s.contains("a TTL refreshed on each hit"), "{s}");
        assert!(s.contains("or count every key in one bucket?"), "{s}");
        assert!(!s.contains("does your limiter key on"), "{s}");
        // The boundary: 4 of 10 is the one-bucket hint again.
        let s = sentence(&stuck(4)).unwrap();
        assert!(s.starts_with("all 10 keys together"), "{s}");
        // Admitted well past one bucket: the stuck keys alone.
        let mut many = stuck(10);
        many.requests.admitted = 240;
        let s = sentence(&many).unwrap();
        assert!(s.ends_with("(`count_rejected = true`)?"), "{s}");
        // A forged summary: more stuck keys than keys is no hint of its
        // own, and a million names print as three.
        let mut forged = stuck(11);
        assert!(!sentence(&forged).unwrap().contains("were refused"));
        forged.keys.as_mut().unwrap().stuck.as_mut().unwrap().keys = 10;
        forged.keys.as_mut().unwrap().stuck.as_mut().unwrap().named =
            vec!["k".repeat(8); 1_000_000];
        let s = sentence(&forged).unwrap();
        assert!(s.contains("(kkkkkkkk, kkkkkkkk, kkkkkkkk, …)"), "{s}");
        assert!(s.len() < 600, "{}", s.len());
        // Still never without false rejects.
        let mut clean = stuck(10);
        clean.correctness.as_mut().unwrap().false_rejects = 0;
        assert!(sentence(&clean).is_none());
    }

    #[test]
    fn silent_without_false_rejects_or_with_one_key() {
        // A correct limiter has no false rejects: never a hint.
        assert!(sentence(&arm(10, 10, 25, 250, 0)).is_none());
        assert!(sentence(&arm(1, 1, 25, 250, 9)).is_none());
    }
}
