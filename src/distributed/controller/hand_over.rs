//! A lost agent's segment handed over: the lost agent told to stop (it
//! may yet be alive), and the open agent that took over fewest told to
//! take the rest of the segment on beside its own.

use super::agent_state::AgentState;
use super::hold::Controller;
use crate::distributed::protocol::ToAgent;
use std::time::Duration;

impl Controller {
    /// Hands lost agent `lost`'s segment, from `from` on, to the open
    /// agent that took over fewest (first stopping the lost one, which may
    /// yet be alive): the agent it was handed to, when there is one.
    pub(super) async fn hand_over(
        &mut self,
        arm: &str,
        lost: usize,
        from: Duration,
        states: &[AgentState],
    ) -> Option<(usize, u64)> {
        let load = |j: usize| {
            states
                .iter()
                .filter_map(|s| s.handed)
                .filter(|(t, _)| *t == j)
                .count()
        };
        let taker = (0..states.len())
            .filter(|&j| j != lost && states[j].is_open())
            .min_by_key(|&j| (load(j), j))?;
        let (run, arm) = (self.run.clone(), arm.to_string());
        let name = self.agents[lost].name.clone();
        let stop = ToAgent::Stop {
            run: run.clone(),
            arm: arm.clone(),
        };
        let _ = self.tell(&name, &stop).await;
        let from_us = from.as_micros() as u64;
        let take = ToAgent::Take {
            run,
            arm: arm.clone(),
            segment: self.agents[lost].segment,
            from_us,
        };
        let to = self.agents[taker].name.clone();
        match self.tell(&to, &take).await {
            Ok(()) => {
                tracing::warn!(
                    "arm {arm}: agent {to} takes over segment {} of {} from {:.1} s",
                    self.agents[lost].segment,
                    states.len(),
                    from.as_secs_f64()
                );
                Some((taker, from_us))
            }
            Err(e) => {
                tracing::warn!("arm {arm}: cannot hand segment over to {to}: {e}");
                None
            }
        }
    }
}
