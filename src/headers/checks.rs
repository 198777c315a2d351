//! Judges what the limiter's response headers said against what it did
//! and against the declared policy: which conventions are present and
//! parse, whether `remaining` agrees with the admits rlbench observed,
//! whether the advertised quota and window are the declared ones, and what
//! the Retry-After probes found. Collected while the trace streams past,
//! then computed once; every finding is one sentence for the report.
//!
//! The remaining check is sound for any algorithm whose spare capacity
//! only grows with time and shrinks only by admits (all of the declared
//! ones), as long as rlbench is the target's only client: a limited answer
//! B contradicts an earlier answer A that said `remaining = R` when fewer
//! than R requests could have been admitted between A's decision and B's.

use crate::events::advertised::Convention;
use crate::events::{Event, Outcome};
use crate::store::probes::Probe;
use crate::store::summary::{ConventionCount, HeaderSummary};
use crate::verify::Remaining;
use reference_api::Policy;
use std::collections::BTreeMap;

/// Fed every event of an arm, in any order: the counts. The remaining
/// check runs per key afterwards (`verify::remaining_against_admits`), on the
/// per-key traces the verifier keeps anyway.
#[derive(Default)]
pub(crate) struct Collector {
    summary: HeaderSummary,
    /// Per convention (in [`Convention::ALL`] order): present, malformed.
    conventions: [ConventionCount; 4],
    limits: Tally,
    windows: Tally,
}

/// Answers by advertised value, the latest value's count kept aside: a
/// limiter mostly repeats its quota, so most answers touch no map.
#[derive(Default)]
struct Tally {
    latest: Option<(u64, u64)>,
    by_value: BTreeMap<u64, u64>,
}

impl Tally {
    fn add(&mut self, value: u64) {
        match &mut self.latest {
            Some((v, n)) if *v == value => *n += 1,
            latest => {
                if let Some((v, n)) = latest.replace((value, 1)) {
                    *self.by_value.entry(v).or_insert(0) += n;
                }
            }
        }
    }

    /// By value, in words (summary.json's keys are strings).
    fn finish(mut self) -> BTreeMap<String, u64> {
        if let Some((v, n)) = self.latest {
            *self.by_value.entry(v).or_insert(0) += n;
        }
        self.by_value
            .into_iter()
            .map(|(v, n)| (v.to_string(), n))
            .collect()
    }
}

impl Collector {
    /// Counts one event; no allocation (it runs once per request).
    pub(crate) fn add(&mut self, e: &Event) {
        let s = &mut self.summary;
        if e.status != 0 {
            s.responses += 1;
        }
        let Some(a) = e.advertised else {
            return;
        };
        s.with_headers += 1;
        for (c, count) in Convention::ALL.iter().zip(&mut self.conventions) {
            if a.has(*c) {
                count.present += 1;
                count.malformed += u64::from(a.is_malformed(*c));
            }
        }
        if let Some(l) = a.limit {
            self.limits.add(l);
        }
        if let Some(w) = a.window_s {
            self.windows.add(w);
        }
        if let Some(r) = a.remaining {
            if e.outcome == Outcome::Rejected && r > 0 {
                s.remaining.limited_with_remaining += 1;
            }
            if a.limit.is_some_and(|l| r > l) {
                s.remaining.above_limit += 1;
            }
        }
    }

    /// The figures and findings, with the per-key remaining check's result,
    /// against `policy` when one was declared.
    pub(crate) fn finish(
        self,
        policy: Option<&Policy>,
        remaining: Remaining,
        probes: Vec<Probe>,
    ) -> HeaderSummary {
        let mut s = self.summary;
        s.conventions = Convention::ALL
            .iter()
            .zip(self.conventions)
            .filter(|(_, n)| n.present > 0)
            .map(|(c, n)| (c.name().to_string(), n))
            .collect();
        s.advertised_limit = self.limits.finish();
        s.advertised_window_s = self.windows.finish();
        s.remaining.checked = remaining.checked;
        s.remaining.contradicted = remaining.contradicted;
        s.remaining.example = remaining.example;
        s.retry_after_probes = probes;
        s.findings = findings(&s, policy);
        s
    }
}

fn findings(s: &HeaderSummary, policy: Option<&Policy>) -> Vec<String> {
    let mut out = Vec::new();
    if s.responses > 0 && s.with_headers == 0 {
        out.push(format!(
            "none of the {} answers carried rate-limit headers (RateLimit, RateLimit-Limit, \
             X-RateLimit-*, Retry-After): clients cannot tell when to come back",
            s.responses
        ));
    }
    for c in Convention::ALL {
        if let Some(n) = s.conventions.get(c.name()).filter(|n| n.malformed > 0) {
            out.push(format!(
                "{} of {} answers with {} had a value that does not parse",
                n.malformed,
                n.present,
                c.headers()
            ));
        }
    }
    if let Some(p) = policy {
        let (quota, window_us) = p.quota();
        let window_s = window_us.div_ceil(1_000_000).max(1);
        let other = |values: &BTreeMap<String, u64>, expected: u64| -> Vec<String> {
            values
                .iter()
                .filter(|(v, _)| v.parse::<u64>().ok() != Some(expected))
                .map(|(v, n)| format!("{v} (on {n} answers)"))
                .collect()
        };
        let limits = other(&s.advertised_limit, quota);
        if !limits.is_empty() {
            out.push(format!(
                "the headers advertise a limit of {}; the declared policy ({}) allows {quota}",
                limits.join(", "),
                p.describe()
            ));
        }
        let windows = other(&s.advertised_window_s, window_s);
        if !windows.is_empty() {
            out.push(format!(
                "the headers advertise a window of {} s; the declared policy's is {window_s} s",
                windows.join(", ")
            ));
        }
    }
    let r = &s.remaining;
    if r.contradicted > 0 {
        out.push(format!(
            "{} of {} limited answers came although an earlier answer's remaining could not \
             have been used up by then (e.g. {}): remaining does not match the admits",
            r.contradicted,
            r.checked,
            r.example.as_deref().unwrap_or("?")
        ));
    }
    if r.limited_with_remaining > 0 {
        out.push(format!(
            "{} limited answers said remaining > 0",
            r.limited_with_remaining
        ));
    }
    if r.above_limit > 0 {
        out.push(format!(
            "{} answers said remaining above their own limit",
            r.above_limit
        ));
    }
    out.extend(crate::store::probes::findings(
        &s.retry_after_probes,
        s.with_headers > 0,
    ));
    out
}

#[cfg(test)]
mod tests;
