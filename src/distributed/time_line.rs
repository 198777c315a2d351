//! One time line for several machines. Each agent, and the controller,
//! reads the coordinator's clock (Redis `TIME`) in round trips against its
//! own monotonic clock: an [`Anchor`] keeps the round trip with the least
//! RTT, so the coordinator's reading happened within half that RTT of the
//! round trip's midpoint. A [`Mapping`] through a machine's anchors turns
//! its local times into the coordinator's (and back), each with how far it
//! may be off: the anchors' own error, plus how far the two clocks' rate
//! may have changed between anchors (a second apart while the load runs).
//! The merge widens every request's `[sent, done]` by its agent's
//! uncertainty, so a decision still lies inside its interval on the one
//! time line, as the verifier assumes.

use crate::events::clock::{DEFAULT_REMOTE_CLOCK_RATE_PPM, MARGIN_PPM};
use serde::{Deserialize, Serialize};

/// One reading of the coordinator's clock: at local time `local_us`
/// (µs on this machine's monotonic clock from its origin) the
/// coordinator's clock read `coord_us` (µs since the Unix epoch), off by
/// at most `uncertainty_us`; this machine's wall clock read `wall_us`
/// then (what is shown as its offset; nothing is judged by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Anchor {
    pub local_us: i64,
    pub coord_us: i64,
    pub uncertainty_us: i64,
    pub wall_us: i64,
}

impl Anchor {
    /// The tightest of several round trips: `(before, coord, after)` local
    /// and coordinator readings, with this machine's wall clock at each.
    pub(crate) fn tightest(trips: &[(i64, i64, i64, i64)]) -> Option<Anchor> {
        trips
            .iter()
            .filter(|(before, _, after, _)| after >= before)
            .min_by_key(|(before, _, after, _)| after - before)
            .map(|&(before, coord, after, wall)| Anchor {
                local_us: before + (after - before) / 2,
                coord_us: coord,
                // Half the round trip, the rounding of the midpoint, and
                // TIME's own µs truncation.
                uncertainty_us: (after - before + 1) / 2 + 1,
                wall_us: wall,
            })
    }

    /// How far this machine's wall clock is behind the coordinator's (µs;
    /// negative: ahead).
    pub(crate) fn wall_offset_us(&self) -> i64 {
        self.coord_us - self.wall_us
    }
}

/// This host's monotonic clock (µs since boot; 0 if it cannot be read):
/// what `tokio::time::Instant` counts on, shared by the processes of one
/// host, so a controller can check an agent's placements on its own host.
pub(crate) fn monotonic_us() -> i64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map_or(0, |t| t.tv_sec() * 1_000_000 + t.tv_nsec() / 1_000)
}

/// How fast two clocks of different machines may run apart where no anchor
/// measures them (before the first, after the last): a slewing daemon's
/// bound plus the margin.
const UNMEASURED_PPM: i64 = DEFAULT_REMOTE_CLOCK_RATE_PPM + MARGIN_PPM;

/// A machine's local times onto the coordinator's clock, piecewise linear
/// through its anchors.
#[derive(Clone, Debug)]
pub(crate) struct Mapping {
    anchors: Vec<Anchor>,
}

impl Mapping {
    /// `None` without an anchor.
    pub(crate) fn new(mut anchors: Vec<Anchor>) -> Option<Mapping> {
        anchors.sort_by_key(|a| a.local_us);
        // Two readings at one local time: keep the tighter.
        anchors.dedup_by(|b, a| {
            if a.local_us == b.local_us {
                if b.uncertainty_us < a.uncertainty_us {
                    *a = *b;
                }
                true
            } else {
                false
            }
        });
        (!anchors.is_empty()).then_some(Mapping { anchors })
    }

    /// The coordinator's time at local time `local_us`, and how far it may
    /// be off. Between two anchors: the chord, off by the worse anchor's
    /// error, plus how far the two clocks' offset moved between them (a
    /// slew or a step in one direction keeps the truth between the ends'
    /// offsets, whatever its rate: these machines' wall clocks are at
    /// times slewed 0.5 %), plus [`MARGIN_PPM`] of the gap for a slew that
    /// turns within it; beyond them: the nearest anchor's offset, off by
    /// its error plus [`UNMEASURED_PPM`] of the distance.
    pub(crate) fn to_coord(&self, local_us: i64) -> (i64, i64) {
        let a = &self.anchors;
        let i = a.partition_point(|x| x.local_us <= local_us);
        if i == 0 || i == a.len() {
            let near = if i == 0 { a[0] } else { a[a.len() - 1] };
            let distance = (local_us - near.local_us).abs();
            let drift = ppm_of(distance, UNMEASURED_PPM);
            return (
                near.coord_us + (local_us - near.local_us),
                near.uncertainty_us + drift,
            );
        }
        let (lo, hi) = (a[i - 1], a[i]);
        let gap = hi.local_us - lo.local_us;
        let into = local_us - lo.local_us;
        let coord =
            lo.coord_us + ((hi.coord_us - lo.coord_us) as i128 * into as i128 / gap as i128) as i64;
        (coord, piece_error(lo, hi))
    }

    /// The local time at which the coordinator's clock reads `coord_us`,
    /// and how far it may be off (the inverse of [`Mapping::to_coord`],
    /// through the same pieces).
    pub(crate) fn to_local(&self, coord_us: i64) -> (i64, i64) {
        let a = &self.anchors;
        let i = a.partition_point(|x| x.coord_us <= coord_us);
        // Anchors whose coordinator readings run backwards (a step of
        // its clock) leave no piece: the nearest anchor answers.
        let piece =
            (i > 0 && i < a.len() && a[i].coord_us > a[i - 1].coord_us).then(|| (a[i - 1], a[i]));
        match piece {
            Some((lo, hi)) => {
                let span = hi.coord_us - lo.coord_us;
                let into = coord_us - lo.coord_us;
                let gap = hi.local_us - lo.local_us;
                let local = lo.local_us + (gap as i128 * into as i128 / span as i128) as i64;
                (local, piece_error(lo, hi))
            }
            None => {
                let near = *a
                    .iter()
                    .min_by_key(|x| (x.coord_us - coord_us).abs())
                    .unwrap_or(&a[0]);
                let distance = (coord_us - near.coord_us).abs();
                (
                    near.local_us + (coord_us - near.coord_us),
                    near.uncertainty_us + ppm_of(distance, UNMEASURED_PPM),
                )
            }
        }
    }

    /// The anchors, oldest first.
    pub(crate) fn anchors(&self) -> &[Anchor] {
        &self.anchors
    }
}

/// How far the chord between two anchors may be off anywhere between
/// them: the worse anchor's error, the offset's movement, the margin.
fn piece_error(lo: Anchor, hi: Anchor) -> i64 {
    let gap = hi.local_us - lo.local_us;
    let moved = ((hi.coord_us - lo.coord_us) - gap).abs();
    lo.uncertainty_us.max(hi.uncertainty_us) + moved + ppm_of(gap, MARGIN_PPM)
}

/// `ppm` millionths of `us`, rounded up.
fn ppm_of(us: i64, ppm: i64) -> i64 {
    ((us.unsigned_abs() as i128 * ppm as i128 + 999_999) / 1_000_000) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchor(local_us: i64, coord_us: i64, uncertainty_us: i64) -> Anchor {
        Anchor {
            local_us,
            coord_us,
            uncertainty_us,
            wall_us: coord_us,
        }
    }

    #[test]
    fn the_tightest_round_trip_is_kept() {
        let a = Anchor::tightest(&[(0, 500, 1_000, 7), (2_000, 2_600, 2_200, 8), (5, 9, 3, 9)])
            .unwrap();
        // 200 µs round trip: the midpoint, off by half of it and 1 µs.
        assert_eq!(
            (a.local_us, a.coord_us, a.uncertainty_us),
            (2_100, 2_600, 101)
        );
        assert_eq!(a.wall_offset_us(), 2_600 - 8);
        assert_eq!(Anchor::tightest(&[]), None);
    }

    #[test]
    fn between_anchors_the_chord_and_its_bound() {
        // The coordinator is 250 ms ahead and gains 1 000 ppm.
        let m = Mapping::new(vec![
            anchor(1_000_000, 1_251_000, 40),
            anchor(0, 250_000, 30),
        ])
        .unwrap();
        let (c, u) = m.to_coord(500_000);
        assert_eq!(c, 750_500);
        // The worse anchor, the 1 ms the offset moved, and 100 ppm of the
        // 1 s gap.
        assert_eq!(u, 40 + 1_000 + 100);
        // At an anchor, the piece after it answers: still the worse one.
        assert_eq!(m.to_coord(0), (250_000, 1_140));
        // Back again through the same piece.
        let (l, u) = m.to_local(750_500);
        assert_eq!((l, u), (500_000, 1_140));
    }

    #[test]
    fn beyond_the_anchors_the_bound_grows_at_the_unmeasured_rate() {
        let m = Mapping::new(vec![anchor(0, 10_000, 5)]).unwrap();
        // 2 s after the only anchor: 600 ppm of 2 s.
        assert_eq!(m.to_coord(2_000_000), (2_010_000, 5 + 1_200));
        assert_eq!(m.to_coord(-1_000_000), (-990_000, 5 + 600));
        assert_eq!(m.to_local(2_010_000), (2_000_000, 5 + 1_200));
        assert!(Mapping::new(Vec::new()).is_none());
    }

    /// Soundness, the property the verifier leans on: whatever the true
    /// offset does between anchors — within the rate assumption — the
    /// truth lies within the bound.
    #[test]
    fn the_truth_is_within_the_bound_when_the_rate_wanders_within_the_margin() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for _ in 0..200 {
            // A true offset (µs) starting anywhere, drifting at a base rate
            // up to 5 000 ppm (a wall clock slewed 0.5 %) that wanders by
            // up to ±100 ppm around its mean.
            let base: f64 = rng.random_range(-5_000.0..5_000.0);
            let start: f64 = rng.random_range(-1e6..1e6);
            let truth = |t: f64, wobble: f64| start + t * base / 1e6 + wobble;
            let mut anchors = Vec::new();
            let mut wobbles = Vec::new();
            let mut w = 0.0f64;
            for i in 0..6 {
                let local = i * 1_000_000;
                wobbles.push(w);
                let err: i64 = rng.random_range(0..200);
                let off: i64 = rng.random_range(-err..=err);
                anchors.push(anchor(
                    local,
                    local + truth(local as f64, w) as i64 + off,
                    err + 1,
                ));
                // The wobble moves by at most 100 ppm of a second.
                w += rng.random_range(-50.0..50.0);
            }
            let m = Mapping::new(anchors).unwrap();
            for i in 0..5usize {
                for step in 0..10 {
                    let into = step as f64 / 10.0;
                    let local = ((i as f64 + into) * 1e6) as i64;
                    // A wobble path that strays from the chord by up to
                    // 100 ppm of the second between the anchors.
                    let stray: f64 = rng.random_range(-99.0..99.0);
                    let w = wobbles[i] + (wobbles[i + 1] - wobbles[i]) * into + stray;
                    let true_coord = local as f64 + truth(local as f64, w);
                    let (c, u) = m.to_coord(local);
                    assert!(
                        (c as f64 - true_coord).abs() <= u as f64 + 1.0,
                        "at {local}: mapped {c} ± {u}, truth {true_coord}"
                    );
                }
            }
        }
    }
}
