//! The per-event tally of one analysis: each request counted once, as the
//! trace is read, into the arm's counts, tries, statuses, errors, lag,
//! per-replica and per-agent figures, fault phases, header checks, the
//! page's series, and each key's first request.

use crate::analyze::figures::{AgentFigures, FirstRequests};
use crate::analyze::phases::Phases;
use crate::analyze::stats::{histogram, Counts, Histograms, Percentiles, Tries};
use crate::events::{ErrorKind, Event, Outcome};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Answers counted by status.
struct StatusCounts {
    http: Box<[u64; 600]>,
    other: BTreeMap<u16, u64>,
}

impl Default for StatusCounts {
    fn default() -> Self {
        StatusCounts {
            http: Box::new([0; 600]),
            other: BTreeMap::new(),
        }
    }
}

impl StatusCounts {
    fn add(&mut self, status: u16) {
        match self.http.get_mut(status as usize) {
            Some(n) => *n += 1,
            None => *self.other.entry(status).or_insert(0) += 1,
        }
    }

    fn finish(mut self) -> BTreeMap<u16, u64> {
        for (status, &n) in self.http.iter().enumerate().filter(|(_, n)| **n > 0) {
            self.other.insert(status as u16, n);
        }
        self.other
    }
}

/// Everything counted per event.
pub(crate) struct Tally {
    pub headers: crate::headers::checks::Collector,
    pub phases: Phases,
    pub counts: Counts,
    pub tries: Tries,
    pub per_replica: Vec<Counts>,
    pub per_replica_histograms: Vec<Histograms>,
    pub lag: Histogram<u64>,
    agent_lags: Vec<Histogram<u64>>,
    per_agent: Vec<AgentFigures>,
    /// Whether the load came from agents (their figures are kept).
    from_agents: bool,
    pub errors_by_kind: BTreeMap<ErrorKind, u64>,
    // By status: HTTP's 100–599 in arrays (a map entry per request costs
    // more than the rest of the count), any other in a map.
    statuses: StatusCounts,
    error_statuses: StatusCounts,
    /// Per key: its first send, and whether that request was limited.
    firsts: Vec<(u64, bool)>,
    /// Per key: how long it was refused since its last admit (or its
    /// first request), the longest such stretch so far, both in µs.
    refused: Vec<Refused>,
    pub series: crate::analyze::series::Collector,
}

impl Tally {
    /// `agents`: one entry per load agent (none on one machine);
    /// `fault_windows`: the spans the phases are cut by.
    pub(crate) fn new(replicas: usize, agents: usize, fault_windows: &[(i64, i64)]) -> Self {
        Tally {
            headers: crate::headers::checks::Collector::default(),
            phases: Phases::new(fault_windows),
            counts: Counts::default(),
            tries: Tries::default(),
            per_replica: vec![Counts::default(); replicas],
            // Histograms weigh tens of kB: made as replicas answer, not all
            // at once for what a record says (at most a trace's 65,536).
            per_replica_histograms: (0..replicas.min(64)).map(|_| Histograms::new()).collect(),
            lag: histogram(),
            agent_lags: (0..agents).map(|_| histogram()).collect(),
            per_agent: vec![AgentFigures::default(); agents],
            from_agents: agents > 0,
            errors_by_kind: BTreeMap::new(),
            statuses: StatusCounts::default(),
            error_statuses: StatusCounts::default(),
            firsts: Vec::new(),
            refused: Vec::new(),
            series: crate::analyze::series::Collector::default(),
        }
    }

    /// A key defined in the trace (its number is the next one).
    pub(crate) fn key(&mut self) {
        self.firsts.push((u64::MAX, false));
        self.refused.push(Refused::default());
    }

    /// One request of key number `key`.
    pub(crate) fn add(&mut self, key: usize, e: &Event) {
        // Each key's first request (by its send): was it limited?
        if let Some(first) = self.firsts.get_mut(key).filter(|f| e.sent_us < f.0) {
            *first = (e.sent_us, e.outcome == Outcome::Rejected);
        }
        if let Some(r) = self.refused.get_mut(key) {
            r.add(e);
        }
        self.counts.add(e.outcome);
        self.tries.add(e);
        if let Some(kind) = e.error {
            *self.errors_by_kind.entry(kind).or_insert(0) += 1;
        }
        if e.status != 0 {
            self.statuses.add(e.status);
            if e.outcome == Outcome::Error {
                self.error_statuses.add(e.status);
            }
        }
        let r = e.replica as usize;
        if r >= self.per_replica.len() {
            self.per_replica.resize(r + 1, Counts::default());
        }
        if r >= self.per_replica_histograms.len() {
            self.per_replica_histograms
                .resize_with(r + 1, Histograms::new);
        }
        self.per_replica[r].add(e.outcome);
        self.per_replica_histograms[r].record(e);
        self.lag.saturating_record(e.lag_us().max(1));
        self.agent(e);
        self.phases.record(e);
        self.headers.add(e);
        self.series.add(e);
    }

    /// The request's load agent's share (only when agents sent the load).
    fn agent(&mut self, e: &Event) {
        let a = e.agent as usize;
        if a >= self.per_agent.len() && self.from_agents {
            self.per_agent.resize(a + 1, AgentFigures::default());
            self.agent_lags.resize_with(a + 1, histogram);
        }
        if let Some(f) = self.per_agent.get_mut(a) {
            f.counts.add(e.outcome);
            if f.counts.sent == 1 || e.intended_us < f.first_intended_us {
                f.first_intended_us = e.intended_us;
            }
            f.last_sent_us = f.last_sent_us.max(e.sent_us);
            self.agent_lags[a].saturating_record(e.lag_us().max(1));
        }
    }

    /// The arm's histograms: its replicas' added (exact: same buckets).
    pub(crate) fn histograms(&self) -> Histograms {
        let mut histograms = Histograms::new();
        for h in &self.per_replica_histograms {
            histograms.add(h);
        }
        histograms
    }

    /// Answers by status, and the erroneous ones by status.
    pub(crate) fn statuses(&mut self) -> (BTreeMap<u16, u64>, BTreeMap<u16, u64>) {
        (
            std::mem::take(&mut self.statuses).finish(),
            std::mem::take(&mut self.error_statuses).finish(),
        )
    }

    /// Each load agent's figures, its lag percentiles filled in.
    pub(crate) fn per_agent(&mut self) -> Vec<AgentFigures> {
        std::mem::take(&mut self.per_agent)
            .into_iter()
            .zip(&self.agent_lags)
            .map(|(f, h)| AgentFigures {
                lag: Percentiles::of(h),
                ..f
            })
            .collect()
    }

    /// How the keys' first requests fared.
    pub(crate) fn first_requests(&self) -> FirstRequests {
        FirstRequests {
            keys: self.firsts.iter().filter(|f| f.0 != u64::MAX).count() as u64,
            limited: self.firsts.iter().filter(|f| f.1).count() as u64,
            stuck: Vec::new(),
        }
    }

    /// The keys refused without a break for over twice `memory_us` (the
    /// policy's whole window, or the time its bucket takes to fill), by
    /// number with the longest stretch (µs), the longest first.
    pub(crate) fn stuck(&self, memory_us: u64) -> Vec<(usize, u64)> {
        let mut stuck: Vec<(usize, u64)> = self
            .refused
            .iter()
            .enumerate()
            .map(|(k, r)| (k, r.longest_us))
            .filter(|&(_, us)| us > memory_us.saturating_mul(2))
            .collect();
        stuck.sort_by_key(|&(k, us)| (std::cmp::Reverse(us), k));
        stuck
    }
}

/// One key's refusals without a break: since when (its last admit, or
/// its first request refused), and the longest stretch so far.
#[derive(Clone, Copy, Debug, Default)]
struct Refused {
    since_us: Option<u64>,
    longest_us: u64,
}

impl Refused {
    /// Events come about in send order; a stretch is from the first
    /// refusal after an admit to the latest refusal before the next.
    fn add(&mut self, e: &Event) {
        match e.outcome {
            Outcome::Admitted => self.since_us = None,
            Outcome::Rejected => {
                let since = *self.since_us.get_or_insert(e.sent_us);
                self.longest_us = self.longest_us.max(e.sent_us.saturating_sub(since));
            }
            Outcome::Error | Outcome::Timeout => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(sent_us: u64, outcome: Outcome) -> Event {
        Event {
            seq: 0,
            key: "k".into(),
            replica: 0,
            intended_us: sent_us,
            sent_us,
            done_us: sent_us + 100,
            status: 0,
            outcome,
            error: None,
            advertised: None,
            retry_of: None,
            agent: 0,
        }
    }

    /// Key 0 is admitted once and then refused for 5 s; key 1 is let in
    /// every 0.5 s between refusals; key 2 is refused for exactly twice
    /// the memory (the boundary: not stuck); key 3 only errs after its
    /// refusals, which neither break nor lengthen a stretch.
    #[test]
    fn a_key_refused_past_twice_the_policys_memory_is_stuck() {
        let mut t = Tally::new(1, 0, &[]);
        for _ in 0..4 {
            t.key();
        }
        t.add(0, &event(0, Outcome::Admitted));
        for i in 1..=50 {
            t.add(0, &event(i * 100_000, Outcome::Rejected));
        }
        for i in 0..20 {
            let outcome = if i % 5 == 0 {
                Outcome::Admitted
            } else {
                Outcome::Rejected
            };
            t.add(1, &event(i * 100_000, outcome));
        }
        t.add(2, &event(0, Outcome::Rejected));
        t.add(2, &event(2_000_000, Outcome::Rejected));
        t.add(3, &event(0, Outcome::Rejected));
        t.add(3, &event(500_000, Outcome::Rejected));
        t.add(3, &event(9_000_000, Outcome::Error));
        assert_eq!(t.stuck(1_000_000), vec![(0, 4_900_000)]);
        assert_eq!(
            t.stuck(100_000),
            vec![(0, 4_900_000), (2, 2_000_000), (3, 500_000), (1, 300_000)]
        );
        assert!(t.stuck(3_000_000).is_empty());
    }
}
