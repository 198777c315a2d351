//! The scout: the schedule walked ahead of the pacer, counting per target
//! the lane's requests due soon, so connections are ready for a burst.

use super::shared::Shared;
use super::tuning::{FLOOR, LOOKAHEAD, MAX_READY};
use crate::load::pick::Picker;
use crate::load::plan::Segment;
use crate::load::schedule::Schedule;
use std::collections::VecDeque;
use std::time::Duration;

/// The schedule walked ahead of the pacer: this lane's requests due
/// within [`LOOKAHEAD`], counted per target.
pub(crate) struct Scout {
    pub(crate) schedule: Schedule,
    pub(crate) picker: Picker,
    /// The next index of the whole schedule to look at, and its offset.
    pub(crate) next: Option<(usize, Duration)>,
    pub(crate) index: usize,
    /// This lane's requests seen and not yet sent: (index, target).
    pub(crate) due: VecDeque<(usize, usize)>,
    pub(crate) per_target: Vec<usize>,
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
            per_key: s.binds.len(),
            calm: {
                let per_target = s.shape.target_rate(s.duration) * LOOKAHEAD.as_secs_f64()
                    / (s.lanes * s.routes().max(1)) as f64;
                (2.0 * per_target).ceil() as usize + FLOOR
            },
        }
    }

    /// Connections a target of this lane should have ready: one per request
    /// due soon in a burst; the floor otherwise (the growth rule serves a
    /// steady rate, which needs far fewer connections than it has requests
    /// due within the lookahead).
    pub(crate) fn ready(&self, target: usize) -> usize {
        match self.per_target[target] {
            due if due > self.calm => due.min(MAX_READY),
            due => due.min(FLOOR),
        }
    }

    /// Takes in every request due by `until` (trace offset).
    pub(crate) fn advance(&mut self, until: Duration, segment: Segment, lanes: usize, lane: usize) {
        while let Some((index, offset)) = self.next {
            if offset > until {
                return;
            }
            // Every pick drawn, in order, as the pacer draws them.
            let (key, target) = self.picker.pick_index(index as u64);
            if segment.sends(index, offset, lane, lanes) {
                let route = self.route(target, key);
                self.due.push_back((index, route));
                self.per_target[route] += 1;
            }
            self.index += 1;
            self.next = self.schedule.next().map(|d| (self.index, d));
        }
    }

    /// The pacer has sent (or given up) every request up to `index`.
    pub(crate) fn passed(&mut self, index: usize) {
        while let Some(&(i, target)) = self.due.front() {
            if i > index {
                return;
            }
            self.due.pop_front();
            self.per_target[target] -= 1;
        }
    }
}
