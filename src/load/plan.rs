//! What a load is asked to do ([`Plan`]: targets, request template,
//! schedule, keys, bounds and retries) and the live counts it keeps while it runs.

use crate::load::pick::{Fanout, KeyDistribution};
use crate::load::request::Template;
use crate::load::schedule::Shape;
use hyper::Uri;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

pub(crate) struct Plan {
    pub targets: Vec<Uri>,
    /// Method, extra headers and the key's header.
    pub template: Template,
    pub shape: Shape,
    pub duration: Duration,
    pub keys: u32,
    /// Forged keys each key (a principal) sends under (`[load] spoof`);
    /// 0 or 1: none.
    pub forged: u32,
    pub key_distribution: KeyDistribution,
    pub fanout: Fanout,
    pub seed: u64,
    pub timeout: Duration,
    pub max_in_flight: usize,
    /// Callers that retry limited answers (`[load] retry`); `None`: never.
    pub retry: Option<crate::load::retry::Retry>,
    /// The share of the schedule this machine sends ([`Segment::WHOLE`]
    /// unless load agents split it).
    pub segment: Segment,
    /// The wall clock (µs) at trace time 0 that phases the schedule (its
    /// window-edge bursts), when another machine fixed it: an agent takes
    /// its controller's, so every segment walks the same schedule.
    /// `None`: this machine's own.
    pub phase_us: Option<i64>,
    /// How to reach `https://` targets (set up once for the run).
    pub tls: Option<crate::load::tls::Client>,
}

/// One load agent's share of a schedule, like k6's execution segments:
/// the requests whose index `i` has `i % of == index`. Every agent walks
/// the same deterministic schedule and key picks, so the segments of
/// `0..of` are disjoint and their union is exactly the schedule one
/// machine sends; an agent's lanes then split its segment the same way.
/// A segment taken over from a lost agent starts at `from`: its requests
/// due earlier were that agent's to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub index: usize,
    pub of: usize,
    /// Trace time from which its requests are this load's.
    pub from: Duration,
}

impl Segment {
    /// The whole schedule: one machine sends everything.
    pub(crate) const WHOLE: Segment = Segment {
        index: 0,
        of: 1,
        from: Duration::ZERO,
    };

    /// Whether request `i` of the schedule, due at `at`, is this segment's.
    pub(crate) fn holds(self, i: usize, at: Duration) -> bool {
        i % self.of == self.index && at >= self.from
    }

    /// Whether request `i` of the schedule, due at `at`, is in lane
    /// `lane`'s even share of this segment: what its scout expects it to
    /// claim (lanes claim requests as they fall due: `lanes::Claims`).
    pub(crate) fn sends(self, i: usize, at: Duration, lane: usize, lanes: usize) -> bool {
        self.holds(i, at) && (i / self.of) % lanes == lane
    }
}

#[cfg(test)]
mod tests {
    use super::Segment;
    use std::time::Duration;

    const ZERO: Duration = Duration::ZERO;

    /// Each index is sent by exactly one (agent, lane), for any split.
    #[test]
    fn segments_and_lanes_split_the_schedule_exactly_once() {
        for of in 1..=5 {
            for lanes in 1..=4 {
                for i in 0..500 {
                    let senders = (0..of)
                        .flat_map(|index| (0..lanes).map(move |lane| (index, lane)))
                        .filter(|&(index, lane)| {
                            Segment {
                                index,
                                of,
                                from: ZERO,
                            }
                            .sends(i, ZERO, lane, lanes)
                        })
                        .count();
                    assert_eq!(senders, 1, "request {i} with {of} agents of {lanes} lanes");
                }
            }
        }
        // One machine: the lanes stripe as they always did.
        assert!(Segment::WHOLE.sends(7, ZERO, 7 % 3, 3));
        assert!(!Segment::WHOLE.sends(7, ZERO, 0, 3));
    }

    /// A segment taken over at `from` and the lost agent's before it
    /// split that segment exactly once, the boundary going to the taker.
    #[test]
    fn a_segment_taken_over_holds_its_requests_from_then_on() {
        let from = Duration::from_millis(1_510);
        let taken = Segment {
            index: 1,
            of: 3,
            from,
        };
        let whole = Segment {
            from: ZERO,
            ..taken
        };
        for i in 0..300 {
            let at = Duration::from_millis(10 * i as u64);
            let before = whole.holds(i, at) && at < from;
            assert_eq!(
                u8::from(before) + u8::from(taken.holds(i, at)),
                u8::from(whole.holds(i, at)),
                "request {i} at {at:?}"
            );
        }
        assert!(taken.holds(151, from), "due at from: the taker's");
        assert!(!taken.holds(148, from - Duration::from_millis(30)));
        assert!(whole.holds(148, from - Duration::from_millis(30)));
        assert!(!taken.holds(150, from), "another segment's");
    }
}

/// Live counts, for progress lines and the live page while the load runs.
#[derive(Default)]
pub(crate) struct Counters {
    pub done: AtomicU64,
    pub admitted: AtomicU64,
    pub rejected: AtomicU64,
    pub failed: AtomicU64,
    /// Answered requests' latencies, from their intended send (not kept
    /// for load agents' requests: the controller gets only their counts).
    pub latency: crate::load::latency_counts::LatencyCounts,
}
