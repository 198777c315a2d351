//! The verifier's slack σ for an arm, from what its record states: the
//! limiter clock's resolution **plus** how far apart its deciders' clocks
//! may be (`verify::Options::slack_for`), each declared or defaulted, and
//! the words that say where each came from
//! (`σ 1.01 s = resolution 1 s + skew 10 ms`).
//!
//! Defaults (docs/verifier.md, "The slack"):
//! - resolution: 1 ms, a millisecond clock (`Date.now()`, most scripts);
//! - skew: 0 when one clock decides (`one_clock`: Redis `TIME` inside the
//!   script, one process that says so) or when rlbench started the
//!   deciders itself (the reference replicas read this host's clock; the
//!   skews it injects are the faults the run is there to show); otherwise
//!   [`EXTERNAL_SKEW_US`], for a limiter rlbench did not start, which may
//!   run several deciders on hosts kept in step by NTP.

use crate::store::records::ArmRecord;
use crate::verify;

/// The resolution assumed when none is declared: a millisecond clock.
const RESOLUTION_US: i64 = 1_000;

/// The skew assumed between the deciders of a limiter rlbench did not
/// start: 10 ms. NTP keeps hosts on one LAN within a millisecond of their
/// server and a cloud provider's time service within one (ntp.org: "better
/// than one millisecond accuracy in local area networks"; a host syncing
/// over the public Internet is within "tens of milliseconds", which a
/// scenario declares). Two hosts within 5 ms of the same source are within
/// 10 ms of each other.
pub(crate) const EXTERNAL_SKEW_US: i64 = 10_000;

/// Where the skew allowance came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SkewFrom {
    Declared,
    OneClock,
    /// rlbench's own replicas on this host.
    Ours,
    /// A limiter rlbench did not start.
    External,
}

/// σ and its parts (µs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slack {
    pub resolution_us: i64,
    pub resolution_declared: bool,
    pub skew_us: i64,
    pub skew_from: SkewFrom,
}

impl Slack {
    /// What the record states, within a day each (a hand-edited record
    /// cannot make it absurd).
    pub(crate) fn of(record: &ArmRecord) -> Slack {
        // A limiter whose history rlbench cannot know is one it did not
        // start; the rest are its replicas, started empty.
        Slack::new(
            record.clock_resolution_us,
            record.clock_skew_us,
            record.one_clock,
            !record.unknown_history,
        )
    }

    /// From the declared resolution and skew, whether one clock decides,
    /// and whether the deciders are rlbench's own replicas.
    pub(crate) fn new(
        resolution: Option<i64>,
        skew: Option<i64>,
        one_clock: bool,
        ours: bool,
    ) -> Slack {
        let (skew_us, skew_from) = match skew {
            Some(s) => (s, SkewFrom::Declared),
            None if one_clock => (0, SkewFrom::OneClock),
            None if ours => (0, SkewFrom::Ours),
            None => (EXTERNAL_SKEW_US, SkewFrom::External),
        };
        Slack {
            resolution_us: resolution.unwrap_or(RESOLUTION_US),
            resolution_declared: resolution.is_some(),
            skew_us,
            skew_from,
        }
    }

    /// The verifier's slack: the sum, floored at 1 ms.
    pub(crate) fn total_us(&self) -> i64 {
        verify::Options::slack_for(self.resolution_us, self.skew_us)
    }

    /// `σ 11 ms = resolution 1 ms + skew 10 ms (default: a limiter rlbench
    /// did not start)`, every part that is not the plain default named.
    pub(crate) fn words(&self) -> String {
        let total = self.total_us();
        let sum = self.resolution_us.max(0) + self.skew_us.max(0);
        let mut w = format!(
            "σ {} = resolution {}{} + skew {}",
            secs(total),
            secs(self.resolution_us),
            if self.resolution_declared {
                ""
            } else {
                " (default)"
            },
            secs(self.skew_us),
        );
        w.push_str(match self.skew_from {
            SkewFrom::Declared => "",
            SkewFrom::OneClock => " (one clock)",
            SkewFrom::Ours => " (rlbench's replicas, one host)",
            SkewFrom::External => {
                " (default for a limiter rlbench did not start: hosts on NTP; declare clock_skew)"
            }
        });
        if total > sum {
            w.push_str(", floored at 1 ms");
        }
        w
    }
}

/// A duration in the unit that reads best: `1.01 s`, `10 ms`, `300 µs`.
fn secs(us: i64) -> String {
    let trim = |x: f64| {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    match us.abs() {
        a if a >= 1_000_000 => format!("{} s", trim(us as f64 / 1e6)),
        a if a >= 1_000 => format!("{} ms", trim(us as f64 / 1e3)),
        0 => "0".to_string(),
        _ => format!("{us} µs"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(resolution: Option<i64>, skew: Option<i64>, one: bool, ours: bool) -> Slack {
        Slack::new(resolution, skew, one, ours)
    }

    /// The slack is resolution plus skew, never the larger alone; each
    /// part defaults by who decides, and the words say where each came
    /// from.
    #[test]
    fn the_slack_is_resolution_plus_skew_each_declared_or_defaulted() {
        let s = record(Some(1_000_000), Some(10_000), false, false);
        assert_eq!(s.total_us(), 1_010_000);
        assert_eq!(s.words(), "σ 1.01 s = resolution 1 s + skew 10 ms");
        // A limiter rlbench did not start: 10 ms of skew by default.
        let s = record(None, None, false, false);
        assert_eq!((s.skew_from, s.total_us()), (SkewFrom::External, 11_000));
        assert!(s
            .words()
            .starts_with("σ 11 ms = resolution 1 ms (default) + skew 10 ms (default"));
        // One clock, or rlbench's own replicas: no skew.
        let s = record(None, None, true, false);
        assert_eq!((s.skew_from, s.total_us()), (SkewFrom::OneClock, 1_000));
        let s = record(None, None, false, true);
        assert_eq!((s.skew_from, s.total_us()), (SkewFrom::Ours, 1_000));
        // A declared 0 is believed; a fine resolution is floored at 1 ms.
        let s = record(Some(10), Some(0), false, false);
        assert_eq!(s.total_us(), 1_000);
        assert!(s.words().ends_with("floored at 1 ms"), "{}", s.words());
        // A hand-edited record cannot make it absurd.
        let s = record(Some(i64::MAX), Some(-5), false, false);
        assert_eq!(s.total_us(), 86_400_000_000);
    }
}
