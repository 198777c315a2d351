//! What the probe has spent and seen: the budget left, the requests sent
//! and the statuses that came back, and those statuses in words.

use super::send::Sent;
use crate::events::Event;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tokio::time::Instant;

/// What is left of the budget.
pub(super) struct Budget {
    pub requests: u64,
    pub deadline: Instant,
    pub timeout: Duration,
}

impl Budget {
    /// Whether `count` requests at `rate` (and their answers) fit.
    pub(super) fn allows(&self, count: u64, rate: f64) -> bool {
        let time = Duration::from_secs_f64(count as f64 / rate) + self.timeout;
        count <= self.requests && Instant::now() + time <= self.deadline
    }

    pub(super) fn time_left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// What the probe has sent and what came back.
#[derive(Default)]
pub(super) struct Tally {
    pub sent: u64,
    pub statuses: BTreeMap<u16, u64>,
    /// The statuses of the limited answers.
    pub limited: BTreeSet<u16>,
}

pub(super) fn spend(budget: &mut Budget, s: &Sent, tally: &mut Tally) {
    budget.requests = budget.requests.saturating_sub(s.events.len() as u64);
    tally.sent += s.events.len() as u64;
    for (k, v) in status_counts(&s.events) {
        *tally.statuses.entry(k).or_default() += v;
    }
    tally.limited.extend(
        s.events
            .iter()
            .filter(|e| e.outcome == crate::events::Outcome::Rejected)
            .map(|e| e.status),
    );
}

pub(super) fn status_counts(events: &[Event]) -> BTreeMap<u16, u64> {
    let mut m = BTreeMap::new();
    for e in events {
        *m.entry(e.status).or_default() += 1;
    }
    m
}

/// `404 ×20, no answer ×3`.
pub(super) fn counted(statuses: &BTreeMap<u16, u64>) -> String {
    statuses
        .iter()
        .map(|(s, n)| match s {
            0 => format!("no answer ×{n}"),
            s => format!("{s} ×{n}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn limited_list(limited: &[u16]) -> String {
    limited
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(" or ")
}
