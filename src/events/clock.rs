//! This machine's wall clock against the generator's monotonic clock, as
//! sampled during an arm's load, and how fast one ran against the other.
//! Limiters on this machine keep time by the wall clock (the replicas,
//! Redis' `TIME`, most libraries), the trace by the monotonic one; while
//! NTP slews the wall clock (0.5 % has been measured on these machines),
//! every window a limiter counts is that much shorter or longer on the
//! trace's time line. The verifier widens its rules by the rate measured
//! here, plus [`MARGIN_PPM`].

use serde::{Deserialize, Serialize};

/// One paired reading: the wall clock (µs since the Unix epoch) at trace
/// time `trace_us`, off by at most `uncertainty_us` (the two clocks were
/// read that far apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ClockSample {
    pub trace_us: i64,
    pub wall_us: i64,
    pub uncertainty_us: i64,
}

/// The rate assumed for a clock rlbench cannot sample (another host's)
/// when `[checks] clock_rate_ppm` is not given: ntpd slews by at most
/// 500 ppm (chrony may go faster when told to correct quickly).
pub(crate) const DEFAULT_REMOTE_CLOCK_RATE_PPM: i64 = 500;

/// Added to the measured rate: the slew may change between two samples a
/// second apart, and a reading's own error is counted on top.
pub(crate) const MARGIN_PPM: i64 = 100;

/// The largest rate (ppm, either way) at which the wall clock may have run
/// against the trace's clock between consecutive samples, each pair's
/// reading error counted in the clock's disfavour; `None` with fewer than
/// two samples a little apart.
pub(crate) fn measured_ppm(samples: &[ClockSample]) -> Option<i64> {
    let mut sorted = samples.to_vec();
    sorted.sort_by_key(|s| s.trace_us);
    sorted
        .windows(2)
        .filter_map(|w| {
            let (a, b) = (w[0], w[1]);
            let span = b.trace_us - a.trace_us;
            // Pairs closer than 100 ms say more about their error than the rate.
            (span >= 100_000).then(|| {
                let gained = (b.wall_us - a.wall_us) - span;
                let err = a.uncertainty_us.max(0) + b.uncertainty_us.max(0);
                let worst = gained.unsigned_abs() as i128 + err as i128;
                ((worst * 1_000_000 + span as i128 - 1) / span as i128) as i64
            })
        })
        .max()
}

/// What the verifier allows for: the rate measured on this machine (0 when
/// too few samples), what a simulated replica clock adds, plus the margin;
/// at least what the scenario declares for clocks rlbench cannot sample.
pub(crate) fn allowed_ppm(
    measured: Option<i64>,
    simulated_ppm: i64,
    declared_ppm: Option<i64>,
) -> i64 {
    let here = measured.unwrap_or(0) + simulated_ppm.abs() + MARGIN_PPM;
    here.max(declared_ppm.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(trace_us: i64, wall_us: i64) -> ClockSample {
        ClockSample {
            trace_us,
            wall_us,
            uncertainty_us: 1,
        }
    }

    #[test]
    fn a_wall_clock_gaining_five_ms_a_second_runs_at_5000_ppm() {
        let base = 1_800_000_000_000_000;
        let s = [
            at(0, base),
            at(1_000_000, base + 1_005_000),
            at(2_000_000, base + 2_010_000),
        ];
        // 5 000 ppm, plus 2 µs of reading error over a second.
        assert_eq!(measured_ppm(&s), Some(5_002));
        let slow = [at(0, base), at(1_000_000, base + 995_000)];
        assert_eq!(measured_ppm(&slow), Some(5_002));
    }

    #[test]
    fn the_fastest_stretch_counts_and_close_or_lone_samples_say_nothing() {
        let base = 1_800_000_000_000_000;
        let s = [
            at(0, base),
            at(1_000_000, base + 1_000_000),
            at(2_000_000, base + 2_000_300),
            at(2_050_000, base + 2_060_000),
        ];
        assert_eq!(measured_ppm(&s), Some(302), "the 50 ms pair is skipped");
        assert_eq!(measured_ppm(&s[..1]), None);
        assert_eq!(allowed_ppm(None, 0, None), MARGIN_PPM);
        assert_eq!(allowed_ppm(Some(302), -5_000, None), 5_402);
        assert_eq!(allowed_ppm(Some(302), 0, Some(10_000)), 10_000);
    }
}
