//! An arm's own schedule (`schedule = "bursts"` on the arm), read for
//! arms of the reference API and of an external target alike.

use crate::scenario::raw::RawArm;
use crate::scenario::validate::source::{Result, Source};
use reference_api::Policy;
use std::time::Duration;

/// An arm's own `schedule = "bursts"`: `burst` requests spread over
/// `burst_spread` (default 20 ms) around each edge of the arm's policy
/// window, in place of `[load]`'s schedule (its keys and timeout kept) —
/// so one scenario can send a steady load in one arm and bursts of each
/// key in another. Only bursts: every other schedule is `[load]`'s.
pub(super) fn arm_schedule(
    src: &Source,
    a: &RawArm,
    policy: &Policy,
) -> Result<Option<crate::load::schedule::Shape>> {
    let Some(schedule) = &a.schedule else {
        if let Some(b) = &a.burst {
            return Err(src.at(b, "burst goes with the arm's schedule = \"bursts\""));
        }
        if let Some(b) = &a.burst_spread {
            return Err(src.at(b, "burst_spread goes with the arm's schedule = \"bursts\""));
        }
        return Ok(None);
    };
    if schedule.get_ref() != "bursts" {
        return Err(src.at(
            schedule,
            format!(
                "an arm's schedule may be \"bursts\" (with burst and burst_spread); {:?} is \
                 [load]'s to set, for every arm",
                schedule.get_ref()
            ),
        ));
    }
    let Some(burst) = &a.burst else {
        return Err(src.at(
            schedule,
            "the arm's bursts schedule needs \"burst\" (requests per window edge)",
        ));
    };
    let per_edge = src.count(burst, "burst", 1, 1_000_000)? as u32;
    let spread = match &a.burst_spread {
        Some(d) => src.duration(d)?,
        None => Duration::from_millis(20),
    };
    Ok(Some(crate::load::schedule::Shape::Bursts {
        per_edge,
        spread,
        window: Duration::from_micros(crate::verify::window(policy).1.max(1) as u64),
    }))
}
