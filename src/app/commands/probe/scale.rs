//! Step 1, scale: one fixed caller at 20, then 100, then 500 requests/s
//! for a second until a fifth of the answers are limited.

use super::asked::{interrupted, Outcome};
use super::grid::observations_of;
use super::probing::{Probing, Step, Stop};
use super::send::Sent;
use super::tally::{counted, limited_list};
use crate::analyze::fit;
use crate::error::{Error, Exit};

/// Rates the scale step tries, requests per second.
const SCALE: &[f64] = &[20.0, 100.0, 500.0];

/// The phase that found a limit.
pub(super) struct Scaled {
    /// Its rate, requests per second.
    pub rate: f64,
    pub sent: Sent,
    /// A first look at its decisions ([`fit::glance`]).
    pub glance: Option<fit::Glance>,
}

/// Sends the scale phases until a fifth of one's answers are limited;
/// stops the probe when none was, or none got a decision.
pub(super) async fn scale(pr: &mut Probing<'_>) -> Step<Scaled> {
    for &rate in SCALE {
        let count = rate as u64;
        if !pr.budget.allows(count, rate) {
            break;
        }
        let (tag, no) = pr.next_tag();
        let phase = pr.phase(pr.sending(None, &tag, no, 1), rate, count, 1);
        let s = pr.send(phase, pr.origin).await;
        if s.interrupted {
            return Err(Stop::Concluded(interrupted()));
        }
        pr.say(&format!(
            "  scale: {} requests at {rate:.0}/s, one caller: {} limited, {} admitted",
            s.events.len(),
            s.limited(),
            s.admitted()
        ))?;
        if s.decided() == 0 {
            return Err(Error::environment(format!(
                "none of {} requests got a decision ({}): check the URL and the method, \
                 and --limited-status if the limiter answers other than {}",
                s.events.len(),
                counted(&pr.tally.statuses),
                limited_list(&pr.p.template.limited)
            ))
            .into());
        }
        if s.limited_share() >= 0.2 {
            let glance = fit::glance(&observations_of(&s.events));
            return Ok(Scaled {
                rate,
                sent: s,
                glance,
            });
        }
    }
    let line_text = format!(
        "nothing was limited: {} requests at up to {:.0}/s ({}); the URL may not be \
         behind the limiter, or its limit is above what the probe sends (--max-requests)",
        pr.tally.sent,
        SCALE[SCALE.len() - 1],
        counted(&pr.tally.statuses)
    );
    pr.say(&line_text)?;
    Err(Stop::Concluded(Outcome {
        exit: Exit::GateFailed,
        error: Some("the probe found no limit".into()),
    }))
}
