//! PNG charts (plotters, with an embedded DejaVu Sans so text renders the
//! same on any machine): admitted vs limit over time, the latency
//! percentile spectrum, per-replica admits and rejects, and over-admission
//! by arm.

pub(crate) mod canvas;
mod draw;
mod files;

pub(crate) use files::{ArmData, Chart, CHARTS};

use super::error::ReportError;
use canvas::{fonts, save};
use draw::{admitted_vs_limit, latency_spectrum, over_admission, per_replica};
use std::path::Path;

pub(crate) fn render_all(dir: &Path, arms: &[ArmData]) -> Result<(), ReportError> {
    fonts();
    save(&dir.join(CHARTS[0].file), |root| {
        admitted_vs_limit(root, arms)
    })?;
    save(&dir.join(CHARTS[1].file), |root| {
        latency_spectrum(root, arms)
    })?;
    save(&dir.join(CHARTS[2].file), |root| per_replica(root, arms))?;
    save(&dir.join(CHARTS[3].file), |root| over_admission(root, arms))
}

#[cfg(test)]
mod tests {
    use super::canvas::{top, within};
    use super::*;
    use hdrhistogram::Histogram;

    #[test]
    fn a_run_with_no_finished_arm_still_gets_its_charts() {
        let dir = tempfile::tempdir().unwrap();
        render_all(dir.path(), &[]).unwrap();
        for chart in &CHARTS {
            let bytes = std::fs::read(dir.path().join(chart.file)).unwrap();
            assert_eq!(&bytes[1..4], b"PNG", "{}", chart.file);
        }
    }

    /// Figures a spoiled folder may carry: every chart is still drawn.
    #[test]
    fn absurd_figures_are_drawn_inside_the_axes_not_past_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut latency = Histogram::<u64>::new(2).unwrap();
        latency.record(1_000).unwrap();
        let arms = [ArmData {
            name: "spoiled",
            timeline: vec![(-1e300, 3.0), (0.5, f64::INFINITY), (1e300, f64::NAN)],
            band: Some(1e300),
            fault_windows: vec![(-1e300, 1e300), (f64::NAN, 2.0)],
            latency: &latency,
            per_replica: vec![(1, 2)],
            over_admission: Some(-1e300),
        }];
        render_all(dir.path(), &arms).unwrap();
        for chart in &CHARTS {
            assert!(dir.path().join(chart.file).is_file(), "{}", chart.file);
        }
        assert_eq!(within(-5.0, 2.0), 0.0);
        assert_eq!(within(f64::NAN, 2.0), 0.0);
        assert_eq!(within(7.0, 2.0), 2.0);
        assert_eq!(top([f64::INFINITY, 3.0].into_iter(), 1.0), 3.0);
    }
}
