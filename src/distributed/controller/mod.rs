//! The controller's side of a distributed run (`rlbench run --agents N`):
//! wait (within a bound) for N agents, and for each arm hand each its
//! segment, wait until all are ready, fix a common start on the
//! coordinator's clock, then collect what they stream — event chunks
//! spooled to the run folder, anchors, how each ended — noticing an agent
//! whose heartbeat stops and handing the rest of its segment to a
//! survivor. At the end the spools are merged onto the controller's time
//! line (`merge`), each request once. Faults and probes stay the
//! controller's, on its own time line, as on one machine.
//!
//! The files, by job: `hold` gathers the agents and speaks to them,
//! `lease` keeps them the run's, `hearts` reads their heartbeats,
//! `prepare` makes an arm ready, `collect` follows its load (each agent's
//! state in `agent_state`; a lost one's segment handed on in `hand_over`),
//! `tally` merges what came into one report.

mod agent_state;
mod collect;
mod hand_over;
mod hearts;
mod hold;
mod lease;
mod prepare;
mod tally;

pub(crate) use collect::Destination;
pub(crate) use hold::{AgentsWanted, Controller};
pub(crate) use prepare::Prepared;
