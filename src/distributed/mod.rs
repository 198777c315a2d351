//! Load from several machines, one verdict: `rlbench agent` on each load
//! machine and `rlbench run --agents N` as the controller, coordinated
//! through a Redis both reach. The controller splits each arm's schedule
//! into segments (`load::Segment`), fixes a common start on the
//! coordinator's clock, and merges what the agents stream back onto its
//! own time line with each agent's clock uncertainty (`clock`, `merge`),
//! so the one verdict stays sound across machines. Faults, probes and the
//! stack stay the controller's; the finish is the same as one machine's.

pub(crate) mod agent;
mod chain;
mod choose;
pub(crate) mod controller;
pub(crate) mod link;
mod merge;
mod outbox;
pub(crate) mod protocol;
pub(crate) mod seal;
mod streams;
mod takeover;
pub(crate) mod time_line;
mod voice;
mod work;
