//! Per-phase figures of an arm that ran faults: the run is cut at each
//! fault's start and end (before / during 1 / after 1 / during 2 / ...) and
//! every request counts in the phase it was sent in. Also each fault's
//! recovery: from its end until requests stop going wrong — the answer of
//! the last request sent in the phase after it that failed (error, timeout)
//! or was a false reject; when none did, the answer of the first decided
//! (2xx or 429) request sent after it.

use super::stats::{histogram, Counts, Percentiles};
use crate::events::Event;
use crate::verify::PhaseVerdict;
use hdrhistogram::Histogram;

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PhaseFigures {
    /// "before", "during 1", "after 1", ...
    pub name: String,
    /// µs from the load's start; `None` at the open ends.
    pub from_us: Option<i64>,
    pub to_us: Option<i64>,
    pub counts: Counts,
    /// Latency from the intended time (ms).
    pub latency: Percentiles,
    /// `None` without a policy.
    pub verdict: Option<PhaseVerdict>,
}

/// Collects phase figures while the events stream by.
pub(crate) struct Phases {
    /// (from, to) of each phase, µs.
    spans: Vec<(i64, i64)>,
    names: Vec<String>,
    counts: Vec<Counts>,
    latency: Vec<Histogram<u64>>,
    /// Each fault's end, and the earliest decided request sent after it: (sent, done).
    ends: Vec<i64>,
    first_after: Vec<Option<(u64, u64)>>,
    /// The latest answer of a wrong or failed request in each fault's after-phase.
    last_wrong: Vec<Option<i64>>,
}

impl Phases {
    /// `windows`: each fault's (from, to), in order, not overlapping.
    pub(crate) fn new(windows: &[(i64, i64)]) -> Self {
        let mut spans = Vec::new();
        let mut names = Vec::new();
        let mut edge = i64::MIN;
        for (i, &(from, to)) in windows.iter().enumerate() {
            spans.push((edge, from));
            names.push(if i == 0 {
                "before".to_string()
            } else {
                format!("after {i}")
            });
            spans.push((from, to));
            names.push(format!("during {}", i + 1));
            edge = to;
        }
        if !windows.is_empty() {
            spans.push((edge, i64::MAX));
            names.push(format!("after {}", windows.len()));
        }
        Phases {
            latency: spans.iter().map(|_| histogram()).collect(),
            counts: vec![Counts::default(); spans.len()],
            spans,
            names,
            ends: windows.iter().map(|w| w.1).collect(),
            first_after: vec![None; windows.len()],
            last_wrong: vec![None; windows.len()],
        }
    }

    /// (from, to) of every phase, µs.
    pub(crate) fn spans(&self) -> &[(i64, i64)] {
        &self.spans
    }

    fn phase_of(&self, sent: i64) -> usize {
        self.spans
            .partition_point(|&(_, to)| to <= sent)
            .min(self.spans.len() - 1)
    }

    pub(crate) fn record(&mut self, e: &Event) {
        if self.spans.is_empty() {
            return;
        }
        let p = self.phase_of(e.sent_us as i64);
        self.counts[p].add(e.outcome);
        self.latency[p].saturating_record(e.latency_us().max(1));
        if matches!(
            e.outcome,
            crate::events::Outcome::Error | crate::events::Outcome::Timeout
        ) {
            self.wrong(e.sent_us as i64, e.done_us as i64);
        } else {
            for (end, first) in self.ends.iter().zip(&mut self.first_after) {
                if e.sent_us as i64 >= *end && !first.is_some_and(|(s, _)| s <= e.sent_us) {
                    *first = Some((e.sent_us, e.done_us));
                }
            }
        }
    }

    /// A request that went wrong (failed, or a false reject): it counts
    /// against the recovery of the fault whose after-phase it was sent in.
    pub(crate) fn wrong(&mut self, sent: i64, done: i64) {
        if self.spans.is_empty() {
            return;
        }
        let p = self.phase_of(sent);
        // Phases alternate before, during 1, after 1, during 2, after 2, ...
        if p >= 2 && p % 2 == 0 {
            let fault = p / 2 - 1;
            let last = &mut self.last_wrong[fault];
            *last = Some(last.map_or(done, |l| l.max(done)));
        }
    }

    /// The figures, with each phase's verdict (summed over keys) if judged.
    pub(crate) fn finish(
        self,
        verdicts: Option<Vec<PhaseVerdict>>,
    ) -> (Vec<PhaseFigures>, Vec<Option<f64>>) {
        let phases = (0..self.spans.len())
            .map(|i| {
                let (from, to) = self.spans[i];
                PhaseFigures {
                    name: self.names[i].clone(),
                    from_us: (from != i64::MIN).then_some(from),
                    to_us: (to != i64::MAX).then_some(to),
                    counts: self.counts[i],
                    latency: Percentiles::of(&self.latency[i]),
                    verdict: verdicts.as_ref().and_then(|v| v.get(i).copied()),
                }
            })
            .collect();
        let recovery = (0..self.ends.len())
            .map(|i| {
                let end = self.ends[i];
                let settled = self.last_wrong[i].or(self.first_after[i].map(|(_, d)| d as i64))?;
                Some((settled - end).max(0) as f64 / 1_000.0)
            })
            .collect();
        (phases, recovery)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Outcome;

    fn event(sent: u64, done: u64, outcome: Outcome) -> Event {
        Event {
            seq: 0,
            key: "k".into(),
            replica: 0,
            intended_us: sent,
            sent_us: sent,
            done_us: done,
            status: 0,
            outcome,
            error: None,
            advertised: None,
            retry_of: None,
            agent: 0,
        }
    }

    #[test]
    fn requests_count_in_the_phase_they_were_sent_in() {
        let mut p = Phases::new(&[(1_000, 2_000), (3_000, 4_000)]);
        let names: Vec<&str> = p.names.iter().map(String::as_str).collect();
        assert_eq!(
            names,
            ["before", "during 1", "after 1", "during 2", "after 2"]
        );
        // The boundaries: a request sent exactly at a fault's start is in it.
        for sent in [0, 999, 1_000, 1_999, 2_000, 3_500, 4_000, 9_000] {
            p.record(&event(sent, sent + 10, Outcome::Admitted));
        }
        let (phases, _) = p.finish(None);
        let sent: Vec<u64> = phases.iter().map(|f| f.counts.sent).collect();
        assert_eq!(sent, [2, 2, 1, 1, 2]);
        assert_eq!(phases[0].from_us, None);
        assert_eq!(phases[1].from_us, Some(1_000));
        assert_eq!(phases[4].to_us, None);
    }

    #[test]
    fn recovery_lasts_until_requests_stop_going_wrong() {
        // Nothing wrong after the fault: the first decided answer ends it.
        let mut p = Phases::new(&[(1_000, 2_000)]);
        p.record(&event(2_100, 2_600, Outcome::Admitted));
        p.record(&event(2_050, 2_400, Outcome::Rejected));
        assert_eq!(p.finish(None).1, [Some(0.4)]);
        // An error and a false reject after it: the later answer ends it; a
        // failure during the fault does not count.
        let mut p = Phases::new(&[(1_000, 2_000)]);
        p.record(&event(1_500, 1_900, Outcome::Error));
        p.record(&event(2_100, 2_600, Outcome::Admitted));
        p.record(&event(2_200, 3_000, Outcome::Timeout));
        p.wrong(2_500, 5_000);
        assert_eq!(p.finish(None).1, [Some(3.0)]);
        // Nothing decided after it: no figure.
        let mut p = Phases::new(&[(1_000, 2_000)]);
        p.record(&event(1_100, 1_200, Outcome::Admitted));
        assert_eq!(p.finish(None).1, [None]);
    }

    #[test]
    fn no_faults_no_phases() {
        let mut p = Phases::new(&[]);
        p.record(&event(5, 6, Outcome::Admitted));
        p.wrong(5, 6);
        let (phases, recovery) = p.finish(None);
        assert!(phases.is_empty() && recovery.is_empty());
    }
}
