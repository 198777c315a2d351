//! The keys the page's per-key timeline can show, and which of their
//! requests: the busiest key first, then the keys with witnesses, then
//! the others by name while the arm's budget lasts. A key with more
//! requests than one view holds keeps those around its first witness (or
//! its start), so the proof is always in view.

use crate::analyze::keyed::KeyTrace;
use crate::store::page_json::{ms, KeyView, MAX_ARM_REQUESTS, MAX_KEY_REQUESTS};
use crate::store::summary::ArmWitness;
use crate::verify::Decided;

/// `names` and `traces` as the trace numbers keys, `taken` those kept
/// here; `busiest` by number, with the time (µs) its admits peaked, where
/// its view centres when it has no witness; `witnesses` the arm's, as
/// summary.json carries them.
pub(super) fn key_views(
    names: &[String],
    traces: &[KeyTrace],
    taken: &[bool],
    busiest: Option<(usize, Option<i64>)>,
    witnesses: &[ArmWitness],
) -> Vec<KeyView> {
    // Linear in the keys: a flood of a million distinct keys is a case
    // this must serve (a membership test by scanning `order` was
    // quadratic, and a report of 1 M keys never came).
    let number: std::collections::HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut chosen = vec![false; names.len()];
    let mut order: Vec<(usize, &'static str)> = Vec::new();
    let mut push = |i: usize, why: &'static str, order: &mut Vec<(usize, &'static str)>| {
        if taken.get(i) == Some(&true) && !chosen[i] {
            chosen[i] = true;
            order.push((i, why));
        }
    };
    if let Some((b, _)) = busiest {
        push(b, "busiest", &mut order);
    }
    for w in witnesses {
        if let Some(&i) = number.get(w.key.as_str()) {
            push(i, "witness", &mut order);
        }
    }
    let mut rest: Vec<usize> = (0..names.len()).collect();
    rest.sort_by(|&a, &b| names[a].cmp(&names[b]));
    for i in rest {
        push(i, "key", &mut order);
    }
    let mut budget = MAX_ARM_REQUESTS;
    let mut out = Vec::new();
    for (i, why) in order {
        if budget == 0 {
            break;
        }
        let peak = busiest.filter(|(b, _)| *b == i).and_then(|(_, at)| at);
        let centre_us = witnesses
            .iter()
            .filter(|w| w.key == names[i])
            .map(|w| (w.from_s * 1e6) as i64)
            .min()
            .or(peak);
        let view = view(&names[i], why, &traces[i], centre_us, budget);
        budget -= view.seq.len();
        out.push(view);
    }
    out
}

/// At most `budget` (and [`MAX_KEY_REQUESTS`]) of a key's requests by send
/// time, starting a little before `centre_us` when it has more.
fn view(key: &str, why: &str, trace: &KeyTrace, centre_us: Option<i64>, budget: usize) -> KeyView {
    let mut named = trace.named(&trace.obs());
    named.sort_by_key(|n| (n.obs.sent, n.seq));
    let room = budget.min(MAX_KEY_REQUESTS);
    let start = match centre_us {
        Some(at) if named.len() > room => {
            let first = named.partition_point(|n| n.obs.sent < at);
            first.saturating_sub(room / 4).min(named.len() - room)
        }
        _ => 0,
    };
    let end = (start + room).min(named.len());
    let shown = &named[start..end];
    KeyView {
        key: key.to_string(),
        why: why.to_string(),
        left_out: (named.len() - shown.len()) as u64,
        sent_ms: shown.iter().map(|n| ms(n.obs.sent)).collect(),
        done_ms: shown.iter().map(|n| ms(n.obs.done)).collect(),
        replica: shown.iter().map(|n| n.replica).collect(),
        outcome: shown
            .iter()
            .map(|n| match n.obs.decided {
                Decided::Admitted => 'a',
                Decided::Rejected => 'r',
                Decided::Unknown => 'u',
            })
            .collect(),
        seq: shown.iter().map(|n| n.seq).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Event, Outcome};

    fn trace(requests: u64) -> KeyTrace {
        let mut t = KeyTrace::default();
        for i in 0..requests {
            let e = Event {
                seq: i,
                key: String::new(),
                replica: (i % 3) as u32,
                intended_us: i * 1_000,
                sent_us: i * 1_000,
                done_us: i * 1_000 + 500,
                status: 200,
                outcome: Outcome::Admitted,
                error: None,
                advertised: None,
                retry_of: None,
                agent: 0,
            };
            t.add(&e, Decided::Admitted, 0);
        }
        t
    }

    fn witness(key: &str, from_s: f64) -> ArmWitness {
        ArmWitness {
            kind: crate::store::summary::WitnessKind::Violation,
            key: key.into(),
            rule: String::new(),
            from_s,
            to_s: from_s + 0.01,
            excess: 1,
            reject: None,
            requests: Vec::new(),
            more_requests: 0,
        }
    }

    #[test]
    fn the_busiest_then_witnesses_then_names_while_the_budget_lasts() {
        let names: Vec<String> = ["c", "b", "a", "w"].map(String::from).to_vec();
        let traces = vec![trace(3), trace(5), trace(2), trace(4)];
        let views = key_views(
            &names,
            &traces,
            &[true, true, true, true],
            Some((1, None)),
            &[witness("w", 0.0)],
        );
        let order: Vec<(&str, &str)> = views
            .iter()
            .map(|v| (v.key.as_str(), v.why.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                ("b", "busiest"),
                ("w", "witness"),
                ("a", "key"),
                ("c", "key")
            ]
        );
        let b = &views[0];
        assert_eq!(b.seq, [0, 1, 2, 3, 4]);
        assert_eq!(b.outcome, "aaaaa");
        assert_eq!(b.replica, [0, 1, 2, 0, 1]);
        assert_eq!((b.sent_ms[1], b.done_ms[1]), (1.0, 1.5));
        assert_eq!(b.left_out, 0);
    }

    #[test]
    fn a_long_key_keeps_the_requests_around_its_witness() {
        let names = vec!["k".to_string()];
        let long = MAX_KEY_REQUESTS as u64 * 3;
        let at_s = 4_000.0 / 1_000.0; // request 4000, sent at 4 s
        let views = key_views(&names, &[trace(long)], &[true], None, &[witness("k", at_s)]);
        let v = &views[0];
        assert_eq!(v.seq.len(), MAX_KEY_REQUESTS);
        assert_eq!(v.left_out, long - MAX_KEY_REQUESTS as u64);
        assert!(v.seq.contains(&4_000), "the witness's requests are in view");
        assert_eq!(v.seq[0], 4_000 - MAX_KEY_REQUESTS as u64 / 4);
    }

    #[test]
    fn the_busiest_key_without_a_witness_centres_on_its_peak() {
        let names = vec!["k".to_string()];
        let long = MAX_KEY_REQUESTS as u64 * 10;
        let views = key_views(
            &names,
            &[trace(long)],
            &[true],
            Some((0, Some(5_000_000))),
            &[],
        );
        let v = &views[0];
        assert_eq!(v.why, "busiest");
        assert_eq!(v.seq[0], 5_000 - MAX_KEY_REQUESTS as u64 / 4, "around 5 s");
    }

    #[test]
    fn keys_not_judged_here_are_left_out() {
        let names = vec!["a".to_string(), "b".to_string()];
        let views = key_views(
            &names,
            &[trace(2), trace(2)],
            &[false, true],
            Some((0, None)),
            &[],
        );
        assert_eq!(views.len(), 1);
        assert_eq!(views[0].key, "b");
    }
}
