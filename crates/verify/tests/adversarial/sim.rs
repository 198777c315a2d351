//! The event simulation: requests with intervals on the client clock,
//! each decided by a replica at one instant of its own clock.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    At(i64),
    /// The adversary asks a copy of the limiter at `sent`: an answer it
    /// wants early is decided there, any other at `done` (admits late and
    /// rejects early when `admits_late`, the reverse otherwise).
    Probe {
        admits_late: bool,
    },
    /// Never decided (lost before the limiter).
    Never,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Req {
    pub(crate) sent: i64,
    pub(crate) done: i64,
    /// The client got the answer; otherwise the trace says `Unknown` (an
    /// error or a timeout, `done` the moment the client gave up).
    pub(crate) answered: bool,
    pub(crate) plan: Plan,
    pub(crate) decider: usize,
    /// Stamp-then-lock: the replica read its clock this many ‰ of the way
    /// back from the decision towards `sent`...
    pub(crate) lag: i64,
    /// ...but at most this many µs before it.
    pub(crate) max_stale: i64,
}

/// The replicas' clocks.
#[derive(Clone, Debug)]
pub(crate) struct Clock {
    /// Wall µs at trace time 0 (what epoch-aligned windows are aligned to).
    pub(crate) epoch: i64,
    /// The limiter reads whole steps of this many µs (truncated): 1 for a
    /// µs clock, 1,000 for `Date.now()`, coarser for whole seconds.
    pub(crate) resolution: i64,
    /// Each replica's offset from the true wall clock.
    pub(crate) offsets: Vec<i64>,
    /// Parts per million the replicas' clock gains on the trace's (a wall
    /// clock being slewed; negative: it loses), from trace time 0.
    pub(crate) rate_ppm: i64,
}

impl Clock {
    pub(crate) fn exact(epoch: i64) -> Clock {
        Clock {
            epoch,
            resolution: 1,
            offsets: vec![0],
            rate_ppm: 0,
        }
    }

    pub(crate) fn read(&self, t: i64, decider: usize) -> i64 {
        let gained = (t as i128 * self.rate_ppm as i128).div_euclid(1_000_000) as i64;
        let wall = t + gained + self.epoch + self.offsets[decider];
        wall.div_euclid(self.resolution) * self.resolution
    }
}

/// One decision: true instant, the clock reading it used, the answer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Decision {
    pub(crate) at: i64,
    pub(crate) reading: i64,
    pub(crate) answer: Answer,
}

pub(crate) struct Run {
    pub(crate) obs: Vec<Obs>,
    pub(crate) witnesses: Vec<(u32, u32)>,
    /// Per request, warm-up ones first.
    pub(crate) decisions: Vec<Option<Decision>>,
}

impl Run {
    pub(crate) fn admitted(&self) -> u64 {
        self.obs
            .iter()
            .filter(|o| o.decided == Decided::Admitted)
            .count() as u64
    }
}

/// Runs `warm` (before trace time 0, not recorded) and `reqs` through a
/// copy of `lim`, each decision at its planned instant, in time order.
pub(crate) fn simulate(lim: &Sim, clock: &Clock, warm: &[Req], reqs: &[Req]) -> Run {
    let mut lim = lim.clone();
    let all: Vec<&Req> = warm.iter().chain(reqs).collect();
    let mut queue = BinaryHeap::new();
    for (i, r) in all.iter().enumerate() {
        match r.plan {
            Plan::At(d) => queue.push(Reverse((d, i, false))),
            Plan::Probe { .. } => queue.push(Reverse((r.sent, i, true))),
            Plan::Never => {}
        }
    }
    let mut decisions = vec![None; all.len()];
    while let Some(Reverse((at, i, probe))) = queue.pop() {
        let r = all[i];
        let stale = ((at - r.sent) * r.lag / 1_000).min(r.max_stale);
        let reading = clock.read(at - stale, r.decider);
        if let (true, Plan::Probe { admits_late }) = (probe, r.plan) {
            let a = lim.clone().decide(reading, i);
            if a.admitted == admits_late && r.done > r.sent {
                queue.push(Reverse((r.done, i, false)));
                continue;
            }
        }
        let answer = lim.decide(reading, i);
        decisions[i] = Some(Decision {
            at,
            reading,
            answer,
        });
    }
    let mut obs = Vec::with_capacity(reqs.len());
    let mut witnesses = Vec::new();
    for (j, r) in reqs.iter().enumerate() {
        let d = decisions[warm.len() + j];
        let decided = match (r.answered, d) {
            (true, Some(d)) if d.answer.admitted => Decided::Admitted,
            (true, Some(_)) => Decided::Rejected,
            _ => Decided::Unknown,
        };
        if let (true, Some(d)) = (r.answered, d) {
            if d.answer.remaining > 0 {
                witnesses.push((j as u32, d.answer.remaining.min(u32::MAX as u64) as u32));
            }
        }
        obs.push(Obs {
            sent: r.sent,
            done: r.done,
            decided,
        });
    }
    Run {
        obs,
        witnesses,
        decisions,
    }
}
