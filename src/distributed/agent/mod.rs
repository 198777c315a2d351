//! `rlbench agent`: a load agent. It claims its name and registers with
//! the coordinator, beating every second; for each arm a controller that
//! leased it hands it (signed with the token they share, fresh, for a run
//! it has not served), it builds the arm's load plan from the scenario
//! exactly as `run` does (`app::plan`), takes its segment of the schedule,
//! anchors its clock to the coordinator's, starts at the common instant
//! and runs the same load code as one machine (`load::run`), streaming its
//! events back in signed, deflated chunks (`outbox`) with an anchor every
//! quarter second (and, asked to, a lost agent's segment beside its own:
//! `takeover`), then
//! says how its load ended. It stops its load within 2 s of
//! its controller's last beat, and every wait is bounded; a coordinator
//! that restarts or refuses writes is tried again for a while.
//!
//! The files, by job: `args` what it was asked, `registration` its name
//! and heartbeat, `inbox` what comes to it (checked), `dead_man` its
//! controller's life as it watches it, `serve` the loop over runs, `arm`
//! one arm's stages, `beside` what runs beside the load.

mod args;
mod arm;
mod beside;
mod dead_man;
mod inbox;
mod registration;
mod serve;

pub(crate) use args::AgentArgs;
pub(super) use registration::host_name;
pub(crate) use serve::serve;
