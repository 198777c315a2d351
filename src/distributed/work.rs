//! An arm's work as an agent does it: the load plan it builds from the
//! controller's `Work`, checked by this agent's own rules.

use super::protocol::Work;
use crate::error::Error;
use crate::load::{self, Segment};
use std::time::Duration;

/// The arm's load plan, built from the scenario as `run` builds it, with
/// the controller's targets and this agent's segment. Targets off this
/// machine's loopback only when this agent's command line allows them.
pub(super) fn plan_of(work: &Work, allow_remote: bool) -> Result<load::Plan, Error> {
    let mut scenario = crate::scenario::parse(&work.scenario_file, &work.scenario_text)?;
    if let Some(us) = work.duration_us {
        scenario.duration = Duration::from_micros(us);
    }
    let arm = scenario
        .arms
        .iter()
        .find(|a| a.name == work.arm)
        .ok_or_else(|| Error::input(format!("no arm {:?} in {}", work.arm, work.scenario_file)))?;
    let spec = crate::plan::from_scenario(&scenario, arm, &work.run)?;
    let mut plan = spec.plan;
    if !work.targets.is_empty() {
        plan.targets = work
            .targets
            .iter()
            .map(|t| crate::target::target_url(t, allow_remote))
            .collect::<Result<_, _>>()?;
    }
    // The scenario's own URLs: checked again here, by this agent's rule.
    for t in &plan.targets {
        crate::target::target_url(&t.to_string(), allow_remote)?;
    }
    if work.of == 0 || work.segment >= work.of {
        return Err(Error::input(format!(
            "segment {} of {} does not exist",
            work.segment, work.of
        )));
    }
    plan.segment = Segment {
        index: work.segment,
        of: work.of,
        from: Duration::ZERO,
    };
    // The agents together keep the scenario's bound on requests in flight.
    plan.max_in_flight = plan.max_in_flight.div_ceil(work.of).max(1);
    Ok(plan)
}
