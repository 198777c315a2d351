//! An arm's own load (`schedule`, `rate`, `keys` on the arm), read for
//! arms of the reference API and of an external target alike.

use super::defaults::ArmDefaults;
use crate::scenario::raw::RawArm;
use crate::scenario::spec::KeySpec;
use crate::scenario::validate::load::rate_value;
use crate::scenario::validate::source::{Result, Source};
use reference_api::Policy;
use std::time::Duration;

/// The most keys a scenario sends (as `[load] keys`).
const MAX_KEYS: i64 = 10_000_000;

/// An arm's own schedule, in place of `[load]`'s (its timeout and where
/// the key goes kept) — so one scenario can send a steady load in one
/// arm, bursts of each key in another and many keys in a third:
///
/// - `schedule = "bursts"`: `burst` requests spread over `burst_spread`
///   (default 20 ms) around each edge of the arm's policy window;
/// - `schedule = "constant"`: `rate` requests a second.
///
/// Every other schedule is `[load]`'s, for every arm.
pub(super) fn arm_schedule(
    src: &Source,
    a: &RawArm,
    policy: &Policy,
) -> Result<Option<crate::load::schedule::Shape>> {
    let Some(schedule) = &a.schedule else {
        let stray = [
            a.burst.as_ref().map(|b| (b.span(), "burst", "bursts")),
            a.burst_spread
                .as_ref()
                .map(|b| (b.span(), "burst_spread", "bursts")),
            a.rate.as_ref().map(|r| (r.span(), "rate", "constant")),
        ];
        if let Some((span, key, kind)) = stray.into_iter().flatten().next() {
            return Err(src.error(
                Some(span),
                format!("{key} goes with the arm's schedule = \"{kind}\""),
            ));
        }
        return Ok(None);
    };
    match schedule.get_ref().as_str() {
        "bursts" => {
            if let Some(r) = &a.rate {
                return Err(src.at(r, "rate goes with the arm's schedule = \"constant\""));
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
        "constant" => {
            let stray = [
                a.burst.as_ref().map(|b| (b.span(), "burst")),
                a.burst_spread.as_ref().map(|b| (b.span(), "burst_spread")),
            ];
            if let Some((span, key)) = stray.into_iter().flatten().next() {
                return Err(src.error(
                    Some(span),
                    format!("{key} goes with the arm's schedule = \"bursts\""),
                ));
            }
            let Some(rate) = &a.rate else {
                return Err(src.at(
                    schedule,
                    "the arm's constant schedule needs \"rate\" (requests/s)",
                ));
            };
            Ok(Some(crate::load::schedule::Shape::Constant {
                rate: rate_value(src, rate, "rate", true)?,
            }))
        }
        other => Err(src.at(
            schedule,
            format!(
                "an arm's schedule may be \"bursts\" (with burst and burst_spread) or \
                 \"constant\" (with rate); {other:?} is [load]'s to set, for every arm"
            ),
        )),
    }
}

/// An arm's own `keys`, in place of `[load]`'s: any number a key's place
/// can carry (`[load] key`'s addresses are reserved for the most keys of
/// any arm; tokens are minted, and their count bounded, as the arm
/// starts). Principals (`[load] spoof`) are the scenario's, and a target
/// sent no key has one.
pub(super) fn arm_keys(src: &Source, a: &RawArm, defaults: &ArmDefaults) -> Result<Option<u32>> {
    let Some(k) = &a.keys else {
        return Ok(None);
    };
    let keys = src.count(k, "keys", 1, MAX_KEYS)? as u32;
    if defaults.spoofing {
        return Err(src.at(
            k,
            "under [load] principals the keys are the principals, the same in every arm: \
             drop the arm's keys",
        ));
    }
    let sends_no_key = defaults
        .external
        .is_some_and(|t| !t.template.sends_key() && *defaults.load_key == KeySpec::InTemplate);
    if sends_no_key && keys > 1 {
        return Err(src.at(
            k,
            "an external target without key_header sends no key: every request is one key \
             to the limiter, so give key_header or drop the arm's keys",
        ));
    }
    Ok(Some(keys))
}

/// An arm's own `key_distribution` (with its parameters), in place of
/// `[load]`'s: a sweep of many keys in one arm beside steady ones.
pub(super) fn arm_key_distribution(
    src: &Source,
    a: &RawArm,
) -> Result<Option<crate::load::pick::KeyDistribution>> {
    let given = crate::scenario::validate::load::Distribution {
        key_distribution: &a.key_distribution,
        zipf_s: &a.zipf_s,
        hot_share: &a.hot_share,
        sweep_block: &a.sweep_block,
    };
    if a.key_distribution.is_none() {
        let stray = [
            a.zipf_s.as_ref().map(|v| (v.span(), "zipf_s")),
            a.hot_share.as_ref().map(|v| (v.span(), "hot_share")),
            a.sweep_block.as_ref().map(|v| (v.span(), "sweep_block")),
        ];
        if let Some((span, key)) = stray.into_iter().flatten().next() {
            return Err(src.error(
                Some(span),
                format!("{key} goes with the arm's own key_distribution"),
            ));
        }
        return Ok(None);
    }
    crate::scenario::validate::load::distribution(src, &given).map(Some)
}
