//! The busiest key's admits against the band a correct limiter stays
//! inside, sampled over the run, for the page's "admits in the span"
//! chart and the PNG beside it.

use crate::store::page_json::WindowSeries;
use crate::verify::{self, Decided, Obs};
use reference_api::Policy;

/// The busiest key's admits whose whole `[sent, done]` lies in a trailing
/// span shorter than the window, at 50 to 600 evenly spaced times, with
/// the most a correct limiter may admit there (`verify::band`): each of
/// them was decided inside the span, so a correct run stays in the band.
pub(super) fn series(
    policy: &Policy,
    opts: &verify::Options,
    key: &str,
    obs: &[Obs],
) -> Option<WindowSeries> {
    let band = verify::band(policy, opts)?;
    let span = band.span_us;
    let mut admits: Vec<(i64, i64)> = obs
        .iter()
        .filter(|o| o.decided == Decided::Admitted)
        .map(|o| (o.done, o.sent))
        .collect();
    admits.sort_unstable();
    let end = obs.iter().map(|o| o.done).max().unwrap_or(0);
    if end <= 0 {
        return None;
    }
    // Twenty samples a span, at least 50 over the run, at most 600.
    let step = (span / 20).min(end / 50).max(end / 600).max(1);
    let (mut first, mut last) = (0usize, 0usize);
    let (mut t_s, mut admitted) = (Vec::new(), Vec::new());
    let mut t = 0i64;
    while t <= end {
        while last < admits.len() && admits[last].0 <= t {
            last += 1;
        }
        while first < last && admits[first].0 <= t - span {
            first += 1;
        }
        let inside = admits[first..last]
            .iter()
            .filter(|(_, sent)| *sent > t - span)
            .count();
        t_s.push(t as f64 / 1e6);
        admitted.push(inside as u64);
        t += step;
    }
    Some(WindowSeries {
        key: key.to_string(),
        span_s: span as f64 / 1e6,
        limit: band.limit,
        most: band.most,
        why: band.why,
        t: t_s,
        admitted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(sent_ms: i64, done_ms: i64, decided: Decided) -> Obs {
        Obs {
            sent: sent_ms * 1_000,
            done: done_ms * 1_000,
            decided,
        }
    }

    #[test]
    fn only_admits_wholly_inside_the_span_are_counted() {
        let policy = Policy::FixedWindow {
            limit: 2,
            window_us: 1_000_000,
        };
        let trace = [
            obs(0, 10, Decided::Admitted),
            obs(20, 30, Decided::Admitted),
            obs(40, 50, Decided::Rejected),
            // Inside the span that ends at 1.05 s (sent after 0.05 s).
            obs(55, 1_040, Decided::Admitted),
            // Sent before that span began: not counted in it.
            obs(45, 1_045, Decided::Admitted),
            obs(1_000, 1_010, Decided::Admitted),
            obs(2_400, 2_410, Decided::Admitted),
            obs(3_000, 3_010, Decided::Rejected),
        ];
        let exact = verify::Options {
            slack_us: 0,
            ..verify::Options::default()
        };
        let w = series(&policy, &exact, "k", &trace).unwrap();
        assert_eq!((w.limit, w.most), (2, 4), "two fixed windows, 2 each");
        assert_eq!(w.key, "k");
        let at = |t: f64| {
            let i = w.t.iter().position(|&x| (x - t).abs() < 1e-9).unwrap();
            w.admitted[i]
        };
        assert_eq!(at(0.0), 0);
        assert_eq!(at(0.05), 2);
        assert_eq!(at(1.05), 2, "0.055→1.04 and 1.0→1.01; not 0.045→1.045");
        assert_eq!(at(2.45), 1);
        assert!(w.admitted.iter().all(|&n| n <= w.most));
    }

    #[test]
    fn no_admits_or_no_time_give_no_series() {
        let policy = Policy::SlidingLog {
            limit: 2,
            window_us: 1_000_000,
        };
        assert_eq!(series(&policy, &verify::Options::default(), "k", &[]), None);
    }
}
