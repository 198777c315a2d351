//! `[checks]`: the Retry-After probes, the witnesses kept, how long a
//! server may still decide, and a clock rate declared.

use super::source::{Result, Source};
use crate::scenario::raw::RawChecks;

pub(super) fn checks(src: &Source, raw: RawChecks) -> Result<crate::scenario::spec::Checks> {
    let mut c = crate::scenario::spec::Checks::default();
    if let Some(n) = &raw.retry_after_probes {
        c.retry_after_probes = src.count(n, "retry_after_probes", 0, 100)? as u32;
    }
    if let Some(w) = &raw.retry_after_max_wait {
        c.retry_after_max_wait = src.duration(w)?;
    }
    if let Some(n) = &raw.witnesses {
        c.witnesses = src.count(n, "witnesses", 0, 1_000)? as usize;
    }
    if let Some(t) = &raw.max_server_time {
        c.max_server_time = Some(src.duration(t)?);
    }
    if let Some(r) = &raw.clock_rate_ppm {
        c.clock_rate_ppm = Some(src.count(
            r,
            "clock_rate_ppm",
            0,
            crate::scenario::spec::MAX_CLOCK_RATE_PPM,
        )? as i64);
    }
    Ok(c)
}
