//! Whether an arm record read back is one a run of rlbench could have
//! written: every figure that sizes or shifts anything within bounds, so
//! a spoiled folder cannot overflow or divide by zero downstream.

use super::arm::ArmRecord;
use crate::store::error::Implausible;
use reference_api::Policy;

/// The most replicas a trace can tell apart (its replica field).
const MAX_REPLICAS: usize = u16::MAX as usize + 1;
/// A day, in µs: no time rlbench records is longer.
const DAY_US: i64 = 86_400_000_000;
/// µs from the Unix epoch to the year 3000, about: no clock reads past it.
const EPOCH_BOUND_US: i64 = 32_503_680_000_000_000;

impl ArmRecord {
    /// Whether every figure that sizes or shifts anything is one a run of
    /// rlbench could have written; why not, in words.
    pub(crate) fn plausible(&self) -> Result<(), Implausible> {
        let within = |what: &'static str, value: i64, lo: i64, hi: i64| {
            (lo..=hi)
                .contains(&value)
                .then_some(())
                .ok_or(Implausible::Outside {
                    what,
                    value,
                    lo,
                    hi,
                })
        };
        if self.replicas > MAX_REPLICAS {
            return Err(Implausible::Replicas {
                replicas: self.replicas,
                most: MAX_REPLICAS,
            });
        }
        if self.witnesses > 100_000 {
            return Err(Implausible::Witnesses(self.witnesses));
        }
        within(
            "epoch_offset_us",
            self.epoch_offset_us,
            -EPOCH_BOUND_US,
            EPOCH_BOUND_US,
        )?;
        within("epoch_uncertainty_us", self.epoch_uncertainty_us, 0, DAY_US)?;
        within(
            "replenish_lateness_us",
            self.replenish_lateness_us,
            0,
            DAY_US,
        )?;
        within("request_timeout_us", self.request_timeout_us, 0, DAY_US)?;
        if let Some(t) = self.max_server_time_us {
            within("max_server_time_us", t, 0, DAY_US)?;
        }
        if let Some(r) = self.clock_resolution_us {
            within("clock_resolution_us", r, 0, DAY_US)?;
        }
        if let Some(s) = self.clock_skew_us {
            within("clock_skew_us", s, 0, DAY_US)?;
        }
        // Only a token bucket banks, and at most its capacity (what the
        // aspnetcore preset records): more would only loosen the verdict.
        let most_banked = match self.policy {
            Some(Policy::TokenBucket { capacity, .. }) => capacity.min(u32::MAX as u64) as i64,
            _ => 0,
        };
        within(
            "banked_tokens",
            self.banked_tokens.min(i64::MAX as u64) as i64,
            0,
            most_banked,
        )?;
        if let Some(m) = self.max_clock_uncertainty_us {
            within("max_clock_uncertainty_us", m, 0, DAY_US)?;
        }
        within(
            "simulated_clock_rate_ppm",
            self.simulated_clock_rate_ppm,
            -1_000_000,
            1_000_000,
        )?;
        if let Some(p) = self.declared_clock_rate_ppm {
            within("declared_clock_rate_ppm", p, 0, 1_000_000)?;
        }
        if self.agents.len() > 256 {
            return Err(Implausible::Agents(self.agents.len()));
        }
        for a in &self.agents {
            within("an agent's uncertainty_us", a.uncertainty_us, 0, DAY_US)?;
            within(
                "an agent's wall_offset_us",
                a.wall_offset_us,
                -DAY_US * 365,
                DAY_US * 365,
            )?;
            if a.of == 0 || a.of > 256 || a.segment >= a.of {
                return Err(Implausible::Segment {
                    segment: a.segment,
                    of: a.of,
                });
            }
        }
        if !(self.send_window_s.is_finite()
            && (0.0..=86_400.0 * 365.0).contains(&self.send_window_s))
        {
            return Err(Implausible::SendWindow(self.send_window_s));
        }
        if !(self.target_rps.is_finite() && self.target_rps >= 0.0) {
            return Err(Implausible::TargetRps(self.target_rps));
        }
        if let Some(p) = &self.policy {
            plausible_policy(p)?;
        }
        Ok(())
    }
}

/// The largest count a scenario's policy may state.
const MAX_POLICY_COUNT: u64 = u32::MAX as u64;
/// The longest window or period a record's policy may have: ten years.
const MAX_POLICY_US: u64 = 10 * 365 * DAY_US as u64;

/// A policy a scenario could have stated: counts from 1 (segments from 1,
/// a capacity or a burst from 0) to `u32::MAX`, windows and periods from
/// 1 µs to ten years — so the verifier's sums cannot overflow or divide by
/// zero on a record read back.
fn plausible_policy(p: &Policy) -> Result<(), Implausible> {
    let count = |what: &'static str, value: u64, lo: u64| {
        (lo..=MAX_POLICY_COUNT)
            .contains(&value)
            .then_some(())
            .ok_or(Implausible::PolicyCount {
                what,
                value,
                lo,
                hi: MAX_POLICY_COUNT,
            })
    };
    let span = |what: &'static str, value: u64| {
        (1..=MAX_POLICY_US)
            .contains(&value)
            .then_some(())
            .ok_or(Implausible::PolicySpan {
                what,
                value,
                hi: MAX_POLICY_US,
            })
    };
    match *p {
        Policy::SlidingLog { limit, window_us }
        | Policy::FixedWindow { limit, window_us }
        | Policy::SlidingCounter { limit, window_us } => {
            count("limit", limit, 1)?;
            span("window", window_us)
        }
        Policy::SlidingWindow {
            limit,
            window_us,
            segments,
        } => {
            count("limit", limit, 1)?;
            count("segments", segments, 1)?;
            span("window", window_us)
        }
        Policy::TokenBucket { capacity, refill } => {
            count("capacity", capacity, 0)?;
            count("refill count", refill.count, 1)?;
            span("refill period", refill.per_us)
        }
        Policy::Gcra { rate, burst } => {
            count("burst", burst, 0)?;
            count("rate count", rate.count, 1)?;
            span("rate period", rate.per_us)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kept fixture's record (a sliding log), with `edit` applied.
    fn record(edit: impl FnOnce(&mut serde_json::Value)) -> ArmRecord {
        let mut v: serde_json::Value = serde_json::from_str(include_str!(
            "../../../tests/fixtures/report-v1/events/local.json"
        ))
        .unwrap();
        edit(&mut v);
        serde_json::from_value(v).unwrap()
    }

    /// A declared skew is a distance of at most a day; tokens are banked
    /// only by a token bucket, and at most its capacity: a spoiled folder
    /// cannot loosen a verdict through either.
    #[test]
    fn a_skew_and_banked_tokens_read_back_are_bounded() {
        assert!(record(|v| v["clock_skew_us"] = 1_000.into())
            .plausible()
            .is_ok());
        for skew in [-1, DAY_US + 1] {
            assert!(record(|v| v["clock_skew_us"] = skew.into())
                .plausible()
                .is_err());
        }
        // A sliding log banks nothing.
        assert!(record(|v| v["banked_tokens"] = 1.into())
            .plausible()
            .is_err());
        let bucket = |banked: u64| {
            record(|v| {
                v["policy"] = serde_json::json!({
                    "algorithm": "token_bucket",
                    "capacity": 10,
                    "refill": {"count": 5, "per_us": 1_000_000}
                });
                v["banked_tokens"] = banked.into();
            })
            .plausible()
        };
        assert!(bucket(10).is_ok());
        assert!(bucket(11).is_err());
    }
}
