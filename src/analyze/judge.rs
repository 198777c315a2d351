//! Per-key judging and its merge: each judged key's trace expanded once
//! and judged apart, on every core (the remaining check, the verifier's
//! verdict, its false rejects' times, its verdict within each phase);
//! then the results added in key order into the judgments (so a rebuild
//! picks the same examples and witnesses), and the busiest key's window.

use crate::analyze::judgments::{Busiest, Judgments};
use crate::analyze::keyed::{KeyTrace, Keyed};
use crate::analyze::window;
use crate::analyze::witnesses::Picker;
use crate::verify::{self, PhaseVerdict, Verdict, Witness};
use rayon::prelude::*;
use reference_api::Policy;

/// One key's verdicts, judged on its own.
struct Judged {
    verdict: Verdict,
    found: Vec<Witness>,
    /// Its false rejects' (sent, done), to cut phases by.
    wrong: Vec<(i64, i64)>,
    /// Its verdict within each phase.
    phases: Vec<PhaseVerdict>,
}

/// What the keys are judged by.
pub(crate) struct Judge<'a> {
    /// `None`: nothing to judge against (the remaining check still runs).
    pub policy: Option<&'a Policy>,
    pub opts: &'a verify::Options,
    /// The fault phases' spans (empty without faults).
    pub spans: &'a [(i64, i64)],
}

impl Judge<'_> {
    /// The judged keys of `keyed`, judged and added up in key order; the
    /// witnesses `picker` wants are kept in it.
    pub(crate) fn judge(&self, keyed: &Keyed, picker: &mut Picker) -> Judgments {
        let mut sorted: Vec<(&String, &KeyTrace)> = keyed
            .names
            .iter()
            .zip(&keyed.traces)
            .zip(&keyed.taken)
            .filter(|(_, &t)| t)
            .map(|(k, _)| k)
            .collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        // One pass per key, on every core.
        let judged: Vec<(verify::Remaining, Option<Judged>)> = sorted
            .par_iter()
            .map(|(key, trace)| self.one(key, trace, picker))
            .collect();
        let mut sum = self.merge(&sorted, judged, picker);
        sum.busiest = self.busiest(keyed);
        sum
    }

    /// One key: its trace expanded once for the remaining check and the
    /// verifier.
    fn one(
        &self,
        key: &str,
        trace: &KeyTrace,
        picker: &Picker,
    ) -> (verify::Remaining, Option<Judged>) {
        let obs = trace.obs();
        let mut remaining = verify::Remaining::default();
        let witnesses = trace.witnesses();
        if !witnesses.is_empty() {
            verify::remaining_against_admits(
                key,
                self.policy,
                &obs,
                &witnesses,
                self.opts,
                &mut remaining,
            );
        }
        let judged = self.policy.map(|p| {
            let (verdict, found) = verify::judge_key(p, &obs, self.opts, picker.wanted(key));
            let wrong = if self.spans.is_empty() {
                Vec::new()
            } else {
                verify::false_reject_times(p, &obs, self.opts)
            };
            let phases = self
                .spans
                .iter()
                .map(|&(from, to)| verify::verify_phase(p, &obs, self.opts, from, to))
                .collect();
            Judged {
                verdict,
                found,
                wrong,
                phases,
            }
        });
        (remaining, judged)
    }

    /// The keys' results added in key order.
    fn merge(
        &self,
        sorted: &[(&String, &KeyTrace)],
        judged: Vec<(verify::Remaining, Option<Judged>)>,
        picker: &mut Picker,
    ) -> Judgments {
        let mut sum = Judgments {
            keys: sorted.len() as u64,
            verdict: self.policy.map(|_| Verdict::default()),
            phases: vec![
                (0, 0);
                if self.policy.is_some() {
                    self.spans.len()
                } else {
                    0
                }
            ],
            ..Judgments::default()
        };
        let mut verdict = self.policy.map(|_| Verdict::default());
        for ((key, trace), (one, judged)) in sorted.iter().zip(judged) {
            sum.remaining_checked += one.checked;
            sum.remaining_contradicted += one.contradicted;
            if sum.remaining_example.is_none() {
                sum.remaining_example = one.example.map(|e| (key.to_string(), e));
            }
            if let (Some(total), Some(j)) = (verdict.as_mut(), judged) {
                total.merge(&j.verdict);
                if !j.found.is_empty() {
                    picker.add(key, &trace.named(&trace.obs()), j.found);
                }
                sum.wrong.extend(j.wrong);
                for (phase, v) in sum.phases.iter_mut().zip(j.phases) {
                    phase.0 += v.definite_violations;
                    phase.1 += v.false_rejects;
                }
            }
        }
        sum.verdict = verdict;
        (sum.earliest, sum.largest) = picker.kept();
        sum
    }

    /// The busiest key (the later in the trace of equals) and its
    /// timeline, when there is a policy.
    fn busiest(&self, keyed: &Keyed) -> Option<Busiest> {
        let policy = self.policy?;
        let busiest = keyed
            .traces
            .iter()
            .enumerate()
            .filter(|&(i, _)| keyed.taken[i])
            .max_by_key(|(_, trace)| trace.admitted());
        busiest.map(|(number, trace)| Busiest {
            admitted: trace.admitted() as u64,
            number: number as u32,
            window: window::series(policy, self.opts, &keyed.names[number], &trace.obs()),
        })
    }
}
