//! The open loop on lanes, one per core. Each lane is a thread with a
//! single-threaded runtime of its own and its own connections. Every lane
//! walks the same deterministic schedule and key picks (of this machine's
//! segment, when load agents split the schedule: `Segment`, like k6's
//! execution segments), and each request is sent by the lane that claims
//! it first at its due time (`Claims`), so a lane held off its core leaves
//! what falls due meanwhile to the others; who sends a request never
//! changes which key or target it has or its `seq` (its index).
//!
//! Within a lane nothing crosses threads per request but its claim (one
//! atomic compare-and-swap): a precise timer
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
