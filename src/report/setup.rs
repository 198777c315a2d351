//! The setup named before the limiter is blamed: an arm none of whose
//! requests got a decision is the environment's failure (a wrong URL, a
//! target that is down), not a verdict; an arm whose limiter limited
//! nothing at all is most likely not keyed the way rlbench sends the key,
//! or not in front of the URL; and a failed expectation that came with a
//! generator that fell behind, or during faults, says so beside it.
//! Sentences only; the exit a caller takes from [`unreached`].

use crate::store::summary::{ArmSummary, Summary};

/// For the first arm that sent requests and got no decision for any
/// (every one an error status, a refusal or a timeout), one line naming
/// what the answers were and what to check: the run's environment failed.
pub(crate) fn unreached(s: &Summary) -> Option<String> {
    s.arms.iter().find_map(|a| {
        let r = &a.requests;
        (r.sent > 0 && r.admitted + r.rejected == 0).then(|| {
            let mut kinds: Vec<String> = r
                .error_status_codes
                .iter()
                .map(|(status, n)| format!("{status} ×{n}"))
                .collect();
            kinds.extend(r.errors_by_kind.iter().map(|(k, n)| format!("{k} ×{n}")));
            if r.timeouts > 0 {
                kinds.push(format!("timeout ×{}", r.timeouts));
            }
            let what = if kinds.is_empty() {
                String::new()
            } else {
                format!(" ({})", kinds.join(", "))
            };
            let check = if r
                .error_status_codes
                .keys()
                .any(|s| s == "404" || s == "405")
            {
                "check the URL's path and method"
            } else if r
                .error_status_codes
                .keys()
                .any(|s| s == "401" || s == "403")
            {
                "check what the target asks of a request (a token, a header)"
            } else {
                "check the URL and that the target is up"
            };
            format!(
                "arm {}: none of its {} requests got a decision{what}: nothing was judged, \
                 the limiter is not to blame — {check}",
                a.name, r.sent
            )
        })
    })
}

/// The setup hint of an arm, if any: nothing limited, or a policy other
/// than the declared one that explains every decision — unless the keys
/// hint speaks (`report::keys`): keys the limiter did not tell apart are
/// the nearer cause, and a per-key fit of one bucket's admits says less.
pub(crate) fn sentence(a: &ArmSummary) -> Option<String> {
    nothing_limited(a).or_else(|| {
        super::keys::sentence(a)
            .is_none()
            .then(|| other_policy(a))
            .flatten()
    })
}

/// A hint when an arm expected correct was proven wrong against its
/// declared policy and another policy explains its decisions. The
/// declared policy is the intent, so both readings are said plainly, the
/// bug first: if the limiter should not do this it changed (the gate
/// holds it to the declared policy); if it should, declaring the fit
/// makes the gate pass. At 1.5× the declared rate or more, with several
/// URLs or replicas, the likeliest cause comes before either: that many
/// limiters counting apart (never more than the arm sent to).
pub(crate) fn other_policy(a: &ArmSummary) -> Option<String> {
    let f = a.policy_fit.as_ref()?;
    let apart = (f.rate_ratio.round() as usize).min(a.replicas);
    let first = if f.rate_ratio >= 1.5 && apart >= 2 {
        format!(
            "most likely {apart} limiters count apart (the arm sent to {}), each keeping the \
             declared {}: a fake global limit. ",
            a.replicas, a.policy_text
        )
    } else {
        String::new()
    };
    Some(format!(
        "its answers fit {} ({:.2}× the declared rate) with no definite violation and no false \
         reject on its {} busiest keys ({} requests). {first}If the limiter should not do this, \
         it changed: it does not keep the declared {} (a bug to fix; the gate holds it to what \
         you declared). If it should, declare it (--policy '{}') and the gate passes — \
         `rlbench probe URL` finds the limiter's own from outside",
        f.policy_text, f.rate_ratio, f.keys, f.requests, a.policy_text, f.inline
    ))
}

/// A hint when the limiter limited none of an arm's requests though the
/// policy was exceeded: the likeliest cause is the setup, not the limiter.
pub(crate) fn nothing_limited(a: &ArmSummary) -> Option<String> {
    let c = a.correctness.as_ref()?;
    let r = &a.requests;
    // Spoofing says its own (a limiter that counts forged keys limits
    // nothing by design).
    if a.spoofing.is_some() || r.rejected > 0 || r.admitted == 0 || c.definite_violations == 0 {
        return None;
    }
    let key = match a.keys.as_ref() {
        Some(k) => match (&k.key_in, &k.key_header) {
            (Some(place), _) => format!("key on {place}, where rlbench sends the key"),
            (None, Some(h)) => format!("key on {h}, the header rlbench sends the key in"),
            (None, None) => "key on something rlbench sends (it sent no key)".to_string(),
        },
        None => "key on what rlbench sends".to_string(),
    };
    Some(format!(
        "the limiter limited none of the {} requests: is it in front of this URL, does it \
         {key}, and is its limit what the policy says? (a limiter that skips requests \
         without its key — nginx does — admits them all)",
        r.sent
    ))
}

/// One line per failed expectation of an arm whose generator fell behind
/// its schedule or that ran faults: what else was going on.
pub(crate) fn circumstances(s: &Summary) -> Vec<String> {
    let mut out = Vec::new();
    for a in &s.arms {
        if a.expect.iter().all(|e| e.passed) {
            continue;
        }
        if a.rate.generator_saturated {
            out.push(format!(
                "arm {} failed while the generator fell behind its schedule (lag p50 {} ms, \
                 {:.0} of {:.0} requests/s): the limiter saw less load than asked — a busy \
                 machine (rlbench doctor)",
                a.name, a.schedule_lag_ms.p50, a.rate.achieved_rps, a.rate.target_rps
            ));
        }
        let faults: Vec<&str> = a
            .faults
            .iter()
            .filter(|f| f.applied)
            .map(|f| f.fault.as_str())
            .collect();
        if !faults.is_empty() {
            out.push(format!(
                "arm {} failed with faults applied during its load ({}): see each fault's \
                 phases for what happened in it",
                a.name,
                faults.join(", ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary() -> Summary {
        let text = include_str!("../../tests/fixtures/report-v1/summary.json");
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn an_arm_with_no_decision_is_the_setups_failure_and_says_what_to_check() {
        let mut s = summary();
        assert_eq!(unreached(&s), None);
        let a = &mut s.arms[0];
        let sent = a.requests.sent;
        a.requests.admitted = 0;
        a.requests.rejected = 0;
        a.requests.error_status_codes = [("404".to_string(), sent - 5)].into();
        a.requests.timeouts = 5;
        let line = unreached(&s).unwrap();
        assert!(
            line.contains(&format!("none of its {sent} requests got a decision")),
            "{line}"
        );
        assert!(
            line.contains(&format!("404 ×{}, timeout ×5", sent - 5)),
            "{line}"
        );
        assert!(line.ends_with("check the URL's path and method"), "{line}");
        s.arms[0].requests.error_status_codes.clear();
        s.arms[0]
            .requests
            .errors_by_kind
            .insert("connect_refused".into(), sent - 5);
        assert!(unreached(&s)
            .unwrap()
            .ends_with("check the URL and that the target is up"));
        // One decision is enough to judge.
        s.arms[0].requests.rejected = 1;
        assert_eq!(unreached(&s), None);
    }

    #[test]
    fn a_limiter_that_limited_nothing_past_its_policy_gets_a_setup_hint() {
        let s = summary();
        let mut a = s
            .arms
            .into_iter()
            .find(|a| a.correctness.is_some())
            .unwrap();
        a.requests.rejected = 0;
        a.requests.admitted = 600;
        a.correctness.as_mut().unwrap().definite_violations = 426;
        let hint = nothing_limited(&a).unwrap();
        assert!(
            hint.starts_with("the limiter limited none of the"),
            "{hint}"
        );
        // Anything limited, or nothing proven: no hint.
        a.requests.rejected = 1;
        assert_eq!(nothing_limited(&a), None);
        a.requests.rejected = 0;
        a.correctness.as_mut().unwrap().definite_violations = 0;
        assert_eq!(nothing_limited(&a), None);
    }

    #[test]
    fn a_policy_other_than_declared_that_fits_is_named_with_the_command_to_check() {
        let s = summary();
        let mut a = s
            .arms
            .into_iter()
            .find(|a| a.correctness.is_some())
            .unwrap();
        assert_eq!(other_policy(&a), None);
        a.policy_fit = Some(crate::store::summary::PolicyFit {
            policy_text: "token_bucket: capacity 6, refill 10 per 1s".into(),
            inline: "algorithm = \"token_bucket\", capacity = 6, refill = \"10/1s\"".into(),
            rate_ratio: 1.0,
            keys: 3,
            requests: 300,
        });
        let hint = sentence(&a).unwrap();
        assert!(
            hint.starts_with("its answers fit token_bucket: capacity 6, refill 10 per 1s (1.00×"),
            "{hint}"
        );
        assert!(hint.contains("its 3 busiest keys (300 requests)"), "{hint}");
        assert!(hint.contains("rlbench probe URL"), "{hint}");
        assert!(!hint.contains("count apart"), "{hint}");
        // Both readings plainly, the bug first, then declaring the fit.
        let bug = hint
            .find("If the limiter should not do this, it changed: it does not keep the declared")
            .unwrap();
        let declare = hint.find("If it should, declare it (--policy").unwrap();
        assert!(bug < declare, "{hint}");
        // Three times the declared rate: several limiters counting apart
        // would do that, and it comes first — never more of them than the
        // arm sent to.
        a.policy_fit.as_mut().unwrap().rate_ratio = 2.96;
        a.replicas = 3;
        let hint = sentence(&a).unwrap();
        let apart = hint
            .find(
                "most likely 3 limiters count apart (the arm sent to 3), each keeping the declared",
            )
            .unwrap_or_else(|| panic!("{hint}"));
        assert!(
            apart < hint.find("If the limiter should not").unwrap(),
            "{hint}"
        );
        a.replicas = 2;
        assert!(sentence(&a)
            .unwrap()
            .contains("most likely 2 limiters count apart (the arm sent to 2)"));
        a.replicas = 1;
        assert!(!sentence(&a).unwrap().contains("count apart"));
    }

    #[test]
    fn a_failure_under_a_saturated_generator_or_faults_says_so() {
        let mut s = summary();
        // Every expectation met: nothing to say, faults or not.
        assert!(circumstances(&s).is_empty());
        let faults = std::mem::take(&mut s.arms[0].faults);
        let a = &mut s.arms[0];
        a.expect[0].passed = false;
        a.rate.generator_saturated = true;
        let lines = circumstances(&s);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("arm local failed while the generator fell behind"),
            "{lines:?}"
        );
        // The fixture's fault, named on its own line once applied.
        s.arms[0].rate.generator_saturated = false;
        s.arms[0].faults = faults;
        assert!(
            circumstances(&s).is_empty(),
            "a fault with nothing to break"
        );
        s.arms[0].faults[0].applied = true;
        let lines = circumstances(&s);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains("failed with faults applied during its load (redis_"),
            "{lines:?}"
        );
        s.arms[0].expect[0].passed = true;
        assert!(circumstances(&s).is_empty());
    }
}
