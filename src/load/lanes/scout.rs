//! The scout: the schedule walked ahead of the pacer, counting per target
//! the lane's requests due soon, so connections are ready for a burst. A
//! lane's requests are those it will claim (`Claims`), which it cannot
//! know ahead: the scout counts every `lanes`-th, its even share.

use super::shared::Shared;
use super::tuning::{FLOOR, LOOKAHEAD, MAX_READY};
use crate::load::pick::Picker;
use crate::load::plan::Segment;
use crate::load::schedule::Schedule;
use std::collections::VecDeque;
use std::time::Duration;

/// How many connections a target should have: parked (ready for a burst)
/// or open at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ready {
    Parked(usize),
    Open(usize),
}

/// The schedule walked ahead of the pacer: this lane's requests due
/// within [`LOOKAHEAD`], counted per target.
pub(crate) struct Scout {
    pub(crate) schedule: Schedule,
    pub(crate) picker: Picker,
    /// The next index of the whole schedule to look at, and its offset.
    pub(crate) next: Option<(usize, Duration)>,
    pub(crate) index: usize,
    /// This lane's requests seen and not yet sent: (index, target, due).
    pub(crate) due: VecDeque<(usize, usize, Duration)>,
    pub(crate) per_target: Vec<usize>,
    /// Of those, the first `overdue` are due already (the pacer is behind
    /// them), counted per target in `late`: they are a backlog that the
    /// queue and the growth rule serve, not a burst to come.
    pub(crate) overdue: usize,
    pub(crate) late: Vec<usize>,
    /// Keys with addresses of their own (0: none): routes per target.
    pub(crate) per_key: usize,
    /// What a [`LOOKAHEAD`] of the average rate brings a target of this
    /// lane, twice over, and the floor: more than that is a burst.
    pub(crate) calm: usize,
}

impl Scout {
    pub(crate) fn route(&self, target: usize, key: usize) -> usize {
        match self.per_key {
            0 => target,
            per => target * per + key,
        }
    }
    pub(crate) fn new(s: &Shared) -> Self {
        let mut schedule = Schedule::new(&s.shape, s.duration, s.seed, s.epoch_offset_us);
        let next = schedule.next().map(|d| (0, d));
        Scout {
            schedule,
            picker: Picker::new(
                s.keys,
                s.key_distribution,
                s.targets.len(),
                s.fanout,
                s.seed,
            )
            .forging(s.forged),
            next,
            index: 0,
            due: VecDeque::new(),
            per_target: vec![0; s.routes()],
            overdue: 0,
            late: vec![0; s.routes()],
            per_key: s.binds.len(),
            calm: {
                let per_target = s.shape.target_rate(s.duration) * LOOKAHEAD.as_secs_f64()
                    / (s.lanes * s.routes().max(1)) as f64;
                (2.0 * per_target).ceil() as usize + FLOOR
            },
        }
    }

    /// Connections a target of this lane should have: in a burst, one
    /// parked per request due soon; otherwise the floor, open (the growth
    /// rule serves a steady rate, which needs far fewer connections than
    /// it has requests due within the lookahead).
    pub(crate) fn ready(&self, target: usize) -> Ready {
        match self.coming(target) {
            due if due > self.calm => Ready::Parked(due.min(MAX_READY)),
            due => Ready::Open(due.min(FLOOR)),
        }
    }

    /// This lane's requests for `target` due within the lookahead and not
    /// late.
    pub(crate) fn coming(&self, target: usize) -> usize {
        self.per_target[target] - self.late[target]
    }

    /// Takes in every request due by `now` + [`LOOKAHEAD`] (trace offsets),
    /// and counts those due by `now` as late.
    pub(crate) fn advance(&mut self, now: Duration, segment: Segment, lanes: usize, lane: usize) {
        self.take_in(now + LOOKAHEAD, segment, lanes, lane);
        while let Some(&(_, route, at)) = self.due.get(self.overdue) {
            if at > now {
                break;
            }
            self.late[route] += 1;
            self.overdue += 1;
        }
    }

    fn take_in(&mut self, until: Duration, segment: Segment, lanes: usize, lane: usize) {
        while let Some((index, offset)) = self.next {
            if offset > until {
                return;
            }
            // Every pick drawn, in order, as the pacer draws them.
            let (key, target) = self.picker.pick_index(index as u64);
            if segment.sends(index, offset, lane, lanes) {
                let route = self.route(target, key);
                self.due.push_back((index, route, offset));
                self.per_target[route] += 1;
            }
            self.index += 1;
            self.next = self.schedule.next().map(|d| (self.index, d));
        }
    }

    /// The pacer has sent (or given up) every request up to `index`.
    pub(crate) fn passed(&mut self, index: usize) {
        while let Some(&(i, target, _)) = self.due.front() {
            if i > index {
                return;
            }
            self.due.pop_front();
            self.per_target[target] -= 1;
            if self.overdue > 0 {
                self.overdue -= 1;
                self.late[target] -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::pick::{Fanout, KeyDistribution};
    use crate::load::schedule::Shape;

    const SECOND: Duration = Duration::from_secs(1);
    const MS: Duration = Duration::from_millis(1);

    /// One lane's scout of a constant `rate` over `targets`, round robin.
    fn scout(rate: f64, targets: usize, calm: usize) -> Scout {
        let shape = Shape::Constant { rate };
        let mut schedule = Schedule::new(&shape, SECOND, 1, 0);
        let next = schedule.next().map(|d| (0, d));
        Scout {
            schedule,
            picker: Picker::new(1, KeyDistribution::Uniform, targets, Fanout::RoundRobin, 1),
            next,
            index: 0,
            due: VecDeque::new(),
            per_target: vec![0; targets],
            overdue: 0,
            late: vec![0; targets],
            per_key: 0,
            calm,
        }
    }

    /// The schedule's requests due by `until`, counted independently.
    fn due_by(rate: f64, until: Duration) -> usize {
        Schedule::new(&Shape::Constant { rate }, SECOND, 1, 0)
            .take_while(|&at| at <= until)
            .count()
    }

    #[test]
    fn a_steady_rate_wants_the_floor_open() {
        let mut s = scout(1_000.0, 1, 116);
        s.advance(Duration::ZERO, Segment::WHOLE, 1, 0);
        assert_eq!(s.per_target[0], due_by(1_000.0, LOOKAHEAD));
        assert_eq!(s.late[0], due_by(1_000.0, Duration::ZERO));
        assert_eq!(s.coming(0), s.per_target[0] - s.late[0]);
        assert_eq!(s.ready(0), Ready::Open(FLOOR));
    }

    #[test]
    fn a_backlog_behind_the_pacer_is_late_not_a_burst() {
        // The pacer stalled for 100 ms: 100 requests are overdue, 50 due
        // within the lookahead. Counted together they would look like a
        // burst (more than `calm`) and open a connection for each.
        let mut s = scout(1_000.0, 1, 116);
        s.advance(100 * MS, Segment::WHOLE, 1, 0);
        let late = due_by(1_000.0, 100 * MS);
        assert_eq!(s.per_target[0], due_by(1_000.0, 150 * MS));
        assert_eq!(s.late[0], late);
        assert!(s.per_target[0] > 116);
        assert_eq!(s.ready(0), Ready::Open(FLOOR));
        // The pacer catches up: the late ones leave the count first.
        s.passed(late - 1);
        assert_eq!(s.late[0], 0);
        assert_eq!(s.overdue, 0);
        assert_eq!(s.coming(0), s.per_target[0]);
        // Half of them only: the rest are still late.
        let mut s = scout(1_000.0, 1, 116);
        s.advance(100 * MS, Segment::WHOLE, 1, 0);
        s.passed(late / 2 - 1);
        assert_eq!(s.late[0], late - late / 2);
        assert_eq!(s.coming(0), due_by(1_000.0, 150 * MS) - late);
    }

    #[test]
    fn a_burst_to_come_wants_a_parked_connection_per_request_up_to_the_cap() {
        let mut s = scout(1_000.0, 2, 10);
        s.advance(Duration::ZERO, Segment::WHOLE, 1, 0);
        // Round robin over two targets: each has half of what is coming.
        let coming = s.coming(0);
        assert!(coming > 10 && coming <= MAX_READY, "{coming}");
        assert_eq!(s.ready(0), Ready::Parked(coming));
        assert_eq!(
            s.coming(0) + s.coming(1),
            s.per_target.iter().sum::<usize>() - 1
        );
        let mut s = scout(100_000.0, 1, 10);
        s.advance(Duration::ZERO, Segment::WHOLE, 1, 0);
        assert_eq!(s.ready(0), Ready::Parked(MAX_READY));
    }

    #[test]
    fn a_lane_counts_only_its_own_share() {
        let mut lane0 = scout(1_000.0, 1, 116);
        let mut lane1 = scout(1_000.0, 1, 116);
        lane0.advance(Duration::ZERO, Segment::WHOLE, 2, 0);
        lane1.advance(Duration::ZERO, Segment::WHOLE, 2, 1);
        assert_eq!(
            lane0.per_target[0] + lane1.per_target[0],
            due_by(1_000.0, LOOKAHEAD)
        );
        assert!(lane0.due.iter().all(|&(i, _, _)| i % 2 == 0));
        assert!(lane1.due.iter().all(|&(i, _, _)| i % 2 == 1));
    }
}
