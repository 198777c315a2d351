//! The open loop on lanes, one per core. Each lane is a thread with a
//! single-threaded runtime of its own that owns a share of the schedule —
//! the requests whose index `i` has `i % lanes == lane` (of this machine's
//! segment, when load agents split the schedule: `Segment`), like k6's
//! execution segments: every lane walks the same deterministic schedule and
//! key picks, so the split changes who sends a request, never which key or
//! target it has or its `seq` (its index) — and its own connections.
//!
//! Within a lane nothing crosses threads per request: a precise timer
//! (`timer`) wakes the lane's pacer at each due time (at most once per
//! `tuning::GRAIN`, sending together what falls due within it), which hands
//! the request to a parked long-lived connection task of its target, or queues
//! it for the next one free (its lag, and so its latency, counting from
//! its intended time). A lane opens connections as its queue needs them
//! (see `Lane::grow`), never more than its share of `max_in_flight`, and
//! past that many pending requests the schedule waits and the lag shows.
//! Events are gathered per lane and sent to the writer in batches.

mod job;
mod lane;
mod pool;
mod scout;
mod shared;
mod tuning;

pub(crate) use lane::run;
pub(crate) use shared::{Outcome, Shared};
