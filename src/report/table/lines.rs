//! The lines under the verdict table: what each arm's figures say beyond
//! its row (targets, rate, what was not sent, agents, Redis, clocks,
//! faults, headers, keys...), the generator's pace, what the expectations
//! asked, and the gate.

use super::style::{failed, passed, ratio};
use crate::store::summary::{ArmSummary, Summary};

/// What an arm's figures say beyond its row, one line each, in the order a
/// person reads them (each line names its arm).
pub(crate) fn findings(a: &ArmSummary) -> String {
    let mut out = String::new();
    if let Some(sentence) = crate::report::remote::sentence(a) {
        out.push_str(&format!("targets of {}: {sentence}\n", a.name));
    }
    out.push_str(&rate_line(a));
    if a.rate.not_sent.total() > 0 {
        out.push_str(&format!(
            "not sent in {}: {} of the {} requests scheduled ({})\n",
            a.name,
            a.rate.not_sent.total(),
            a.rate.scheduled,
            a.rate.not_sent.why()
        ));
    }
    for sentence in crate::report::agents::sentences(a) {
        out.push_str(&format!("agent of {}: {sentence}\n", a.name));
    }
    if let Some(sentence) = crate::report::goodput::sentence(a) {
        out.push_str(&format!("goodput of {}: {sentence}\n", a.name));
    }
    if let Some(sentence) = crate::report::redis_use::sentence(a) {
        out.push_str(&format!("redis of {}: {sentence}\n", a.name));
    }
    if let Some(sentence) = crate::report::redis_use::fallback_sentence(a) {
        out.push_str(&format!("redis of {}: {sentence}\n", a.name));
    }
    if let Some(sentence) = crate::report::redis_use::lease_sentence(a) {
        out.push_str(&format!("lease of {}: {sentence}\n", a.name));
    }
    if let Some(line) = errors_line(a) {
        out.push_str(&line);
    }
    if let Some(sentence) =
        crate::report::clock_words::sentence(a).filter(|_| crate::report::clock_words::notable(a))
    {
        out.push_str(&format!("clock of {}: {sentence}\n", a.name));
    }
    for sentence in crate::report::phases::sentences(a) {
        out.push_str(&format!("fault in {}: {sentence}\n", a.name));
    }
    for sentence in crate::report::headers::sentences(a) {
        out.push_str(&format!("headers of {}: {sentence}\n", a.name));
    }
    if let Some(sentence) = crate::report::keys::sentence(a) {
        out.push_str(&format!("keys of {}: {sentence}\n", a.name));
    }
    if let Some(sentence) = crate::report::setup::sentence(a) {
        out.push_str(&format!("setup of {}: {sentence}\n", a.name));
    }
    if let Some(sentence) = crate::report::metrics::sentence(a) {
        out.push_str(&format!("metrics of {}: {sentence}\n", a.name));
    }
    if let Some(sentence) = crate::report::spoofing::sentence(a) {
        out.push_str(&format!("spoofing in {}: {sentence}\n", a.name));
    }
    if let Some(sentence) = crate::report::slow::sentence(a) {
        out.push_str(&format!("answers of {}: {sentence}\n", a.name));
    }
    out
}

/// Admitted over the replay's admits, when admits were proven past the
/// policy and the replay shows more excess than the bound does (by 0.05
/// or more); none otherwise.
fn admitted_over_replay(admitted: u64, c: &crate::store::summary::Correctness) -> Option<f64> {
    let by_replay = admitted as f64 / c.replay_admits as f64;
    let bound = c.over_admission_ratio.unwrap_or(0.0);
    (c.definite_violations > 0 && c.replay_admits > 0 && by_replay >= bound + 0.05)
        .then_some(by_replay)
}

/// What an arm's expectations asked of its limiter, and what it did, so
/// that a green `ok` on a fake limiter reads as "caught, as expected":
/// an arm expected to be caught (a minimum on violations or
/// over-admission), or expected correct (at most 0 definite violations).
pub(crate) fn expected(a: &ArmSummary) -> Option<String> {
    let c = a.correctness.as_ref()?;
    let on = |kind: &str, figures: &[&str]| {
        a.expect
            .iter()
            .filter(|e| e.kind == kind && figures.contains(&e.figure.as_str()))
            .collect::<Vec<_>>()
    };
    let caught = on(
        "min",
        &[
            "definite_violations",
            "over_admission_ratio",
            "peak_window_ratio",
        ],
    );
    let correct = on("max", &["definite_violations"]);
    // admitted/allowed is a lower bound on the excess: allowed is the
    // most any correct limiter could have admitted.
    let over = match c.over_admission_ratio {
        Some(_) if c.definite_violations > 0 => {
            format!("at least {}", ratio(c.over_admission_ratio))
        }
        r => ratio(r),
    };
    // Where the trace shows more than the bound: the admits against an
    // ideal limiter's replayed over the same sends (an estimate, never
    // gated: a correct limiter can beat the replay a little).
    let replayed = admitted_over_replay(a.requests.admitted, c)
        .map(|r| format!("; admitted {r:.2}x an ideal limiter replayed over the same sends"))
        .unwrap_or_default();
    let proven = format!(
        "{over}, {} admits proven past the policy{replayed}",
        c.definite_violations
    );
    if !caught.is_empty() {
        return Some(if caught.iter().all(|e| e.passed) {
            format!("expected to be caught, and caught ({proven})")
        } else {
            format!("expected to be caught, but not ({proven})")
        });
    }
    let correct = correct.first()?;
    Some(
        if correct.passed && c.definite_violations == 0 && c.false_rejects > 0 {
            // Stricter than its policy (a TTL refreshed on every request):
            // nothing admitted past it, but refusals it does not allow.
            format!(
                "expected correct: nothing is proven past the policy, but it refused {} \
             requests the policy allows{}",
                c.false_rejects,
                stuck_keys(c)
            )
        } else if correct.passed && c.definite_violations == 0 {
            "expected correct, and nothing is proven past the policy".to_string()
        } else if correct.passed {
            format!(
                "expected at most {} proven, and within it ({proven})",
                correct.bound
            )
        } else {
            format!("expected correct, but not ({proven})")
        },
    )
}

/// The keys of the false rejects kept as witnesses, at most three:
/// " (among them keys customer-0001, customer-0003)".
fn stuck_keys(c: &crate::store::summary::Correctness) -> String {
    let mut keys: Vec<&str> = c
        .witnesses
        .iter()
        .filter(|w| w.kind == crate::store::summary::WitnessKind::FalseReject)
        .map(|w| w.key.as_str())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.truncate(3);
    match keys.len() {
        0 => String::new(),
        1 => format!(" (among them key {})", keys[0]),
        _ => format!(" (among them keys {})", keys.join(", ")),
    }
}

/// The run's gate in one closing line: met, or how many expectations of
/// all failed and the first of them.
pub(crate) fn gate_line(s: &Summary) -> String {
    let all: usize = s.arms.iter().map(|a| a.expect.len()).sum();
    let n = s.gate.failures.len();
    let (ok, bad) = (passed(), failed());
    match s.gate.failures.first() {
        None if s.gate.passed => match ungated(s) {
            // Not "passed" beside proven over-admits nothing bounded.
            Some(arm) => {
                format!("{ok}gate: met{ok:#} — every expectation met ({all} of {all}), but {arm}\n")
            }
            None => format!("{ok}gate: passed{ok:#} — every expectation met ({all} of {all})\n"),
        },
        None => format!("{bad}gate: FAILED{bad:#}\n"),
        Some(first) => format!(
            "{bad}gate: FAILED{bad:#} — {n} of {all} expectations ({first}{})\n",
            if n > 1 { ", …" } else { "" }
        ),
    }
}

/// The first arm with admits proven past its policy that none of its
/// expectations bounds (no `max_…` or `min_…` on what is admitted past
/// the policy), in words: "arm local: 12 admits proven past the policy,
/// and no expectation bounds them".
pub(crate) fn ungated(s: &Summary) -> Option<String> {
    const OVER: [&str; 4] = [
        "definite_violations",
        "possible_violations",
        "over_admission_ratio",
        "peak_window_ratio",
    ];
    s.arms.iter().find_map(|a| {
        let proven = a.correctness.as_ref()?.definite_violations;
        let bounded = a.expect.iter().any(|e| OVER.contains(&e.figure.as_str()));
        (proven > 0 && !bounded).then(|| {
            format!(
                "arm {}: {proven} admits proven past the policy, and no expectation bounds them",
                a.name
            )
        })
    })
}

/// Achieved against target rate, and how late requests left.
fn rate_line(a: &ArmSummary) -> String {
    use crate::report::figures::per_second;
    let lag = &a.schedule_lag_ms;
    if a.from_logs {
        format!(
            "rate of {}: {} requests/s in the logs\n",
            a.name,
            per_second(a.rate.achieved_rps)
        )
    } else if a.rate.target_rps > 0.0 {
        format!(
            "rate of {}: {} of {} requests/s; schedule lag p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms\n",
            a.name,
            per_second(a.rate.achieved_rps),
            per_second(a.rate.target_rps),
            lag.p50,
            lag.p99,
            lag.max
        )
    } else {
        format!(
            "rate of {}: {} requests/s (closed loop)\n",
            a.name,
            per_second(a.rate.achieved_rps)
        )
    }
}

/// The generator fell behind (and by how much), or only left some
/// requests late.
pub(crate) fn pace_line(a: &ArmSummary) -> Option<String> {
    pace_sentence(a).map(|(label, s)| format!("{label} in {}: {s}\n", a.name))
}

/// ("generator saturated" | "late requests", what happened in words).
pub(crate) fn pace_sentence(a: &ArmSummary) -> Option<(&'static str, String)> {
    use crate::store::summary::LATE_LAG_P99_MS;
    let (r, lag) = (&a.rate, &a.schedule_lag_ms);
    let sent = a.requests.sent.min(r.scheduled);
    if r.generator_saturated {
        let what = if r.scheduled > sent {
            format!(
                "sent {sent} of the {} requests scheduled ({} never left)",
                r.scheduled,
                r.scheduled - sent
            )
        } else {
            format!(
                "{} of {} requests/s",
                crate::report::figures::per_second(r.achieved_rps),
                crate::report::figures::per_second(r.target_rps)
            )
        };
        return Some((
            "generator saturated",
            format!(
                "{what}, the typical request {:.1} ms late (schedule lag p50; p99 {:.1} ms) — the limiter saw less load than asked",
                lag.p50, lag.p99
            ),
        ));
    }
    (r.target_rps > 0.0 && lag.p99 > LATE_LAG_P99_MS).then(|| {
        let all = if r.scheduled == 0 || sent >= r.scheduled {
            "every request scheduled was sent".to_string()
        } else {
            format!("{sent} of the {} scheduled were sent", r.scheduled)
        };
        (
            "late requests",
            format!(
                "1 in 100 requests left more than {:.1} ms after its time (schedule lag p99; p50 {:.2} ms, max {:.1} ms); latency counts from the intended time, and {all}",
                lag.p99, lag.p50, lag.max
            ),
        )
    })
}

/// Requests without a decision, by kind: timeouts, failures by kind, and
/// answers that were neither admitted nor rejected, by status.
fn errors_line(a: &ArmSummary) -> Option<String> {
    let r = &a.requests;
    let mut parts = Vec::new();
    if r.timeouts > 0 {
        parts.push(format!("{} timeout", r.timeouts));
    }
    parts.extend(r.errors_by_kind.iter().map(|(k, n)| format!("{n} {k}")));
    parts.extend(
        r.error_status_codes
            .iter()
            .map(|(code, n)| format!("{n} status {code}")),
    );
    let refusals = limited_as_errors(a).unwrap_or_default();
    (!parts.is_empty()).then(|| format!("errors of {}: {}{refusals}\n", a.name, parts.join(", ")))
}

/// A tenth of an arm's requests answered with one 5xx status or more:
/// what a limiter answers when it limits with that status (nginx's
/// `limit_req_status` is 503 unless set) and it was not declared. Said
/// beside the errors, with how to declare it; a hint, since an
/// overloaded server answers the same.
fn limited_as_errors(a: &ArmSummary) -> Option<String> {
    let r = &a.requests;
    let (code, n) = r
        .error_status_codes
        .iter()
        .filter(|(code, _)| code.len() == 3 && code.starts_with('5'))
        .max_by_key(|(_, n)| **n)?;
    (n.saturating_mul(10) >= r.sent && r.sent > 0).then(|| {
        format!(
            " — {n} of {} answers were {code}: a limiter may answer {code} when it limits \
             (nginx's limit_req_status is 503 unless set); if these are its refusals, declare \
             them (`limited_status = [{code}]` in [target], `--limited-status {code}`), or \
             else the server failed",
            r.sent
        )
    })
}
