//! Hand-built traces for each header check: one that must pass, one that
//! must fail, and the boundary between them.

use super::*;
use crate::events::advertised::Advertised;
use crate::store::probes::ProbeResult;
use crate::verify::{remaining_against_admits, Decided, Obs, Options};

fn ev(sent: u64, done: u64, outcome: Outcome, remaining: Option<u64>) -> Event {
    Event {
        seq: 0,
        key: "k".into(),
        replica: 0,
        intended_us: sent,
        sent_us: sent,
        done_us: done,
        status: match outcome {
            Outcome::Admitted => 200,
            Outcome::Rejected => 429,
            _ => 0,
        },
        outcome,
        error: None,
        advertised: remaining.map(|r| Advertised {
            limit: Some(10),
            window_s: Some(2),
            remaining: Some(r),
            present: 1,
            ..Advertised::default()
        }),
        retry_of: None,
        agent: 0,
    }
}

/// One key's observations and its witnesses (index, remaining).
type KeyTrace = (Vec<Obs>, Vec<(u32, u32)>);

fn exact() -> Options {
    Options {
        slack_us: 0,
        ..Options::default()
    }
}

/// A window policy: its limited answers see every refill, read in any order.
const LOG: Policy = Policy::SlidingLog {
    limit: 10,
    window_us: 1_000_000,
};

/// The counts and, per key, the remaining check — as `analyze` runs them.
fn check(events: &[Event]) -> HeaderSummary {
    check_with(events, &exact())
}

fn check_with(events: &[Event], opts: &Options) -> HeaderSummary {
    check_against(Some(&LOG), events, opts)
}

fn check_against(policy: Option<&Policy>, events: &[Event], opts: &Options) -> HeaderSummary {
    let mut c = Collector::default();
    let mut keys: BTreeMap<String, KeyTrace> = BTreeMap::new();
    for e in events {
        c.add(e);
        let (obs, witnesses) = keys.entry(e.key.clone()).or_default();
        if let Some(r) = e.advertised.and_then(|a| a.remaining) {
            witnesses.push((obs.len() as u32, r as u32));
        }
        obs.push(Obs {
            sent: e.sent_us as i64,
            done: e.done_us as i64,
            decided: match e.outcome {
                Admitted => Decided::Admitted,
                Rejected => Decided::Rejected,
                _ => Decided::Unknown,
            },
        });
    }
    let mut remaining = Remaining::default();
    for (key, (obs, witnesses)) in &keys {
        remaining_against_admits(key, policy, obs, witnesses, opts, &mut remaining);
    }
    c.finish(None, remaining, Vec::new())
}

use Outcome::{Admitted, Rejected, Timeout};

#[test]
fn remaining_used_up_by_observed_admits_is_consistent() {
    // "2 left", then two admits, then a limit: exactly as promised.
    let s = check(&[
        ev(0, 10, Admitted, Some(2)),
        ev(20, 30, Admitted, Some(1)),
        ev(40, 50, Admitted, Some(0)),
        ev(60, 70, Rejected, Some(0)),
    ]);
    assert_eq!(s.remaining.checked, 1);
    assert_eq!(s.remaining.contradicted, 0);
    assert!(s.findings.is_empty(), "{:?}", s.findings);
}

#[test]
fn a_limit_while_promised_capacity_is_unused_is_a_contradiction() {
    let s = check(&[
        ev(0, 10, Admitted, Some(2)),
        ev(20, 30, Admitted, Some(1)),
        ev(60, 70, Rejected, Some(0)),
    ]);
    assert_eq!((s.remaining.checked, s.remaining.contradicted), (1, 1));
    let example = s.remaining.example.as_deref().unwrap();
    assert!(example.contains("remaining 1"), "{example}");
    assert!(s
        .findings
        .iter()
        .any(|f| f.contains("remaining does not match")));
}

#[test]
fn an_admit_that_may_overlap_the_limit_counts_as_used() {
    let base = [ev(0, 10, Admitted, Some(2)), ev(20, 30, Admitted, Some(1))];
    // Sent before the limited answer came back: may have been first.
    let overlapping = [
        base.to_vec(),
        vec![ev(65, 90, Admitted, None), ev(60, 70, Rejected, None)],
    ]
    .concat();
    assert_eq!(check(&overlapping).remaining.contradicted, 0);
    // Sent exactly when it came back: surely after.
    let after = [
        base.to_vec(),
        vec![ev(70, 90, Admitted, None), ev(60, 70, Rejected, None)],
    ]
    .concat();
    assert_eq!(check(&after).remaining.contradicted, 1);
}

#[test]
fn an_unanswered_request_may_have_been_admitted() {
    let s = check(&[
        ev(0, 10, Admitted, Some(2)),
        ev(20, 30, Admitted, Some(1)),
        ev(35, 2_000, Timeout, None),
        ev(60, 70, Rejected, Some(0)),
    ]);
    assert_eq!(s.remaining.contradicted, 0);
}

#[test]
fn a_timeout_the_server_admitted_after_the_client_gave_up_may_have_used_it() {
    // The review's case: the client gave up at 40, the server admitted it
    // at 55 anyway; the limit at 60 is then exactly as promised.
    let s = check(&[
        ev(0, 10, Admitted, Some(2)),
        ev(20, 30, Admitted, Some(1)),
        ev(35, 40, Timeout, None),
        ev(60, 70, Rejected, Some(0)),
    ]);
    assert_eq!(s.remaining.contradicted, 0);
    // Declared to be decided within 10 µs of giving up, a timeout that may
    // have been decided after the "1 left" answer was sent may still have
    // used that unit: not a contradiction either.
    let bounded = Options {
        max_server_time_us: Some(10),
        ..exact()
    };
    let s = check_with(
        &[
            ev(0, 10, Admitted, Some(1)),
            ev(2, 4, Timeout, None),
            ev(60, 70, Rejected, Some(0)),
        ],
        &bounded,
    );
    assert_eq!(s.remaining.contradicted, 0);
    // Surely decided before the answer was sent: it cannot explain the limit.
    let s = check_with(
        &[
            ev(0, 2, Timeout, None),
            ev(20, 30, Admitted, Some(1)),
            ev(60, 70, Rejected, Some(0)),
        ],
        &Options {
            max_server_time_us: Some(5),
            ..exact()
        },
    );
    assert_eq!(s.remaining.contradicted, 1);
    // Without a declared server time it might have been decided any time.
    let s = check(&[
        ev(0, 2, Timeout, None),
        ev(20, 30, Admitted, Some(1)),
        ev(60, 70, Rejected, Some(0)),
    ]);
    assert_eq!(s.remaining.contradicted, 0);
}

#[test]
fn deciders_whose_clocks_differ_within_the_slack_are_not_contradicted() {
    // The review's case: "1 left" answered at 1,000, then a limit sent at
    // 1,500 — possible when the second decider's clock lags by 0.5 ms and
    // the capacity it saw had not come back yet. Within the 1 ms slack:
    // no witness; beyond it: a contradiction.
    let trace = [
        ev(900, 1_000, Admitted, Some(1)),
        ev(1_500, 1_600, Rejected, Some(0)),
    ];
    let slack = Options::default();
    assert_eq!(slack.slack_us, 1_000);
    let s = check_with(&trace, &slack);
    assert_eq!((s.remaining.checked, s.remaining.contradicted), (0, 0));
    let later = [
        ev(900, 1_000, Admitted, Some(1)),
        ev(2_001, 2_100, Rejected, Some(0)),
    ];
    let s = check_with(&later, &slack);
    assert_eq!((s.remaining.checked, s.remaining.contradicted), (1, 1));
    // The boundary: exactly the slack after is still not a witness.
    let edge = [
        ev(900, 1_000, Admitted, Some(1)),
        ev(2_000, 2_100, Rejected, Some(0)),
    ];
    assert_eq!(check_with(&edge, &slack).remaining.checked, 0);
}

#[test]
fn only_answers_surely_decided_first_are_witnesses() {
    // The "5 left" answer arrived exactly when the limited request left:
    // it may have been decided after it.
    let at_edge = check(&[ev(0, 60, Admitted, Some(5)), ev(60, 70, Rejected, Some(0))]);
    assert_eq!(
        (at_edge.remaining.checked, at_edge.remaining.contradicted),
        (0, 0)
    );
    let before = check(&[ev(0, 59, Admitted, Some(5)), ev(60, 70, Rejected, Some(0))]);
    assert_eq!(
        (before.remaining.checked, before.remaining.contradicted),
        (1, 1)
    );
}

/// Without a declared policy the limiter may be a GCRA whose reject read
/// its clock long before it took the state: nothing bounds the refill it
/// missed, so nothing is held against the header — unless every decision
/// reads one clock inside its step. With a bucket declared, that refill is
/// allowed for.
#[test]
fn remaining_is_held_against_the_admits_only_where_a_stale_reading_is_bounded() {
    let events = [
        ev(0, 10, Admitted, Some(2)),
        ev(20, 30, Admitted, Some(1)),
        ev(60, 70, Rejected, Some(0)),
    ];
    let unknown = check_against(None, &events, &exact());
    assert_eq!(
        (unknown.remaining.checked, unknown.remaining.contradicted),
        (0, 0)
    );
    let one_clock = Options {
        one_clock: true,
        ..exact()
    };
    let s = check_against(None, &events, &one_clock);
    assert_eq!((s.remaining.checked, s.remaining.contradicted), (1, 1));
    // A bucket declared: the refill a stale reading of the limited
    // request may have missed over its 10 µs is allowed for, rounded up.
    // "2 left", nothing admitted since, then a limit: at 1 token per
    // second a stale reading misses at most one token, so one of the two
    // promised is still unexplained...
    let gcra = |per_us| Policy::Gcra {
        rate: reference_api::Rate { count: 1, per_us },
        burst: 3,
    };
    let promised_two = [ev(0, 10, Admitted, Some(2)), ev(60, 70, Rejected, Some(0))];
    let s = check_against(Some(&gcra(1_000_000)), &promised_two, &exact());
    assert_eq!((s.remaining.checked, s.remaining.contradicted), (1, 1));
    // ...at 1 per 5 µs it may have missed two: no proof...
    let s = check_against(Some(&gcra(5)), &promised_two, &exact());
    assert_eq!((s.remaining.checked, s.remaining.contradicted), (1, 0));
    // ...and at 1 per 6 µs, ⌈10/6⌉ = 2 as well: the boundary.
    let s = check_against(Some(&gcra(6)), &promised_two, &exact());
    assert_eq!(s.remaining.contradicted, 0);
    let s = check_against(Some(&gcra(11)), &promised_two, &exact());
    assert_eq!(s.remaining.contradicted, 1, "⌈10/11⌉ = 1");
}

#[test]
fn keys_are_judged_apart() {
    let mut other = ev(60, 70, Rejected, Some(0));
    other.key = "other".into();
    let s = check(&[ev(0, 10, Admitted, Some(5)), other]);
    assert_eq!((s.remaining.checked, s.remaining.contradicted), (0, 0));
}

#[test]
fn limited_answers_claiming_capacity_and_remaining_above_limit_are_counted() {
    let mut over = ev(0, 10, Admitted, Some(11));
    if let Some(a) = over.advertised.as_mut() {
        a.limit = Some(10);
    }
    let at_limit = ev(20, 30, Admitted, Some(10));
    let s = check(&[over, at_limit, ev(40, 50, Rejected, Some(3))]);
    assert_eq!(s.remaining.above_limit, 1);
    assert_eq!(s.remaining.limited_with_remaining, 1);
}

#[test]
fn advertised_quota_and_window_are_held_against_the_declared_policy() {
    let events = [ev(0, 10, Admitted, Some(9))];
    let judged = |policy: &Policy| {
        let mut c = Collector::default();
        c.add(&events[0]);
        c.finish(Some(policy), Remaining::default(), Vec::new())
            .findings
    };
    // The helper advertises 10 per 2 s.
    let same = Policy::SlidingLog {
        limit: 10,
        window_us: 2_000_000,
    };
    assert!(judged(&same).is_empty(), "{:?}", judged(&same));
    let more = Policy::SlidingLog {
        limit: 11,
        window_us: 2_000_000,
    };
    assert!(
        judged(&more)[0].contains("limit of 10 (on 1 answers)"),
        "{:?}",
        judged(&more)
    );
    let longer = Policy::SlidingLog {
        limit: 10,
        window_us: 2_000_001,
    };
    assert!(
        judged(&longer)[0].contains("window of 2"),
        "{:?}",
        judged(&longer)
    );
}

#[test]
fn malformed_headers_and_their_absence_are_findings() {
    let mut bad = ev(0, 10, Admitted, None);
    bad.advertised = Some(Advertised {
        present: 1 | 8,
        malformed: 8,
        ..Advertised::default()
    });
    let s = check(&[bad, ev(20, 30, Admitted, Some(3))]);
    assert_eq!(
        s.conventions["retry_after"],
        ConventionCount {
            present: 1,
            malformed: 1
        }
    );
    assert_eq!(
        s.conventions["ratelimit"],
        ConventionCount {
            present: 2,
            malformed: 0
        }
    );
    assert_eq!(s.findings.len(), 1, "{:?}", s.findings);
    assert!(s.findings[0].contains("1 of 1 answers with Retry-After"));

    let none = check(&[ev(0, 10, Admitted, None), ev(20, 30, Rejected, None)]);
    assert_eq!(none.with_headers, 0);
    assert!(
        none.findings[0].contains("none of the 2 answers"),
        "{:?}",
        none.findings
    );
}

#[test]
fn probes_that_held_say_nothing_and_the_rest_are_grouped() {
    let probe = |key: &str, result| Probe {
        key: key.into(),
        retry_after_ms: Some(2_000),
        result,
        status: 429,
    };
    let held = crate::store::probes::findings(&[probe("a", ProbeResult::Admitted)], true);
    assert!(held.is_empty(), "{held:?}");
    let broken = crate::store::probes::findings(
        &[
            probe("a", ProbeResult::LimitedAgain),
            probe("b", ProbeResult::LimitedAgain),
        ],
        true,
    );
    assert_eq!(broken.len(), 1);
    assert!(
        broken[0].contains("2.0 s") && broken[0].contains("a, b"),
        "{broken:?}"
    );
    // Without any headers, the missing Retry-After is not said twice.
    let quiet = crate::store::probes::findings(&[probe("a", ProbeResult::NoRetryAfter)], false);
    assert!(quiet.is_empty());
    let missing = crate::store::probes::findings(&[probe("a", ProbeResult::NoRetryAfter)], true);
    assert!(
        missing[0].contains("no usable Retry-After (a)"),
        "{missing:?}"
    );
    // A wait too long to make is a note, not something wrong.
    let long = [probe("a", ProbeResult::WaitTooLong)];
    assert!(crate::store::probes::findings(&long, true).is_empty());
    let notes = crate::store::probes::notes(&long);
    assert!(notes[0].contains("2.0 s advertised"), "{notes:?}");
}
