//! PNG charts (plotters, with an embedded DejaVu Sans so text renders the
//! same on any machine): admitted vs limit over time, the latency
//! percentile spectrum, per-replica admits and rejects, and over-admission
//! by arm.

use super::error::ReportError;
use hdrhistogram::Histogram;
use plotters::coord::ranged1d::AsRangedCoord;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use std::path::Path;
use std::sync::Once;

pub(super) const SIZE: (u32, u32) = (960, 480);
pub(super) const FONT: &str = "sans-serif";

/// One arm as the charts need it.
pub(crate) struct ArmData<'a> {
    pub name: &'a str,
    /// The busiest key's admits in a trailing window over the limit:
    /// (seconds, ratio).
    pub timeline: Vec<(f64, f64)>,
    /// The most a correct limiter may admit in that window, over the limit.
    pub band: Option<f64>,
    /// Each fault's window (seconds from the load's start), to shade.
    pub fault_windows: Vec<(f64, f64)>,
    /// Latency from the intended send time (µs).
    pub latency: &'a Histogram<u64>,
    /// Each replica's (admitted, rejected).
    pub per_replica: Vec<(u64, u64)>,
    pub over_admission: Option<f64>,
}

/// A chart written into the run folder.
pub(crate) struct Chart {
    pub file: &'static str,
    pub title: &'static str,
}

pub(crate) const CHARTS: [Chart; 4] = [
    Chart {
        file: "admitted-vs-limit.png",
        title: "Admitted vs limit over time",
    },
    Chart {
        file: "latency-spectrum.png",
        title: "Latency by percentile",
    },
    Chart {
        file: "per-replica.png",
        title: "Admitted and rejected per replica",
    },
    Chart {
        file: "over-admission.png",
        title: "Over-admission by arm",
    },
];

pub(super) fn fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
        let _ = register_font(FONT, FontStyle::Bold, dejavu::sans::bold());
    });
}

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

/// What a chart is drawn on: an RGB buffer of [`SIZE`].
pub(super) type Canvas<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

/// Draws a chart in memory and writes it as a PNG, whole or not at all
/// (`store::atomic`): a full disk leaves no half chart, and its error
/// names the file.
pub(super) fn save(
    path: &Path,
    draw: impl FnOnce(Canvas) -> Result<(), ReportError>,
) -> Result<(), ReportError> {
    let (w, h) = SIZE;
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    draw(BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area())?;
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    // Charts are mostly flat colour: a filter chosen per row keeps them small.
    encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
    encoder.set_compression(png::Compression::Best);
    let encoded = encoder
        .write_header()
        .and_then(|mut writer| writer.write_image_data(&rgb).and_then(|()| writer.finish()));
    encoded.map_err(|source| ReportError::Encode {
        path: path.to_path_buf(),
        source,
    })?;
    crate::store::atomic::replace(path, &bytes)?;
    Ok(())
}

/// A chart drawn on a [`Canvas`], its axes over `X` by `Y`.
pub(super) type Frame<'a, 'b, X, Y> = ChartContext<
    'a,
    BitMapBackend<'b>,
    Cartesian2d<<X as AsRangedCoord>::CoordDescType, <Y as AsRangedCoord>::CoordDescType>,
>;

/// The frame every chart is drawn in: `root` filled white, the title
/// above, the same margin and label areas, and axes over `x` by `y`.
pub(super) fn frame<'a, 'b, X: AsRangedCoord, Y: AsRangedCoord>(
    root: &'a Canvas<'b>,
    title: &str,
    x: X,
    y: Y,
) -> Result<Frame<'a, 'b, X, Y>, ReportError> {
    root.fill(&WHITE)?;
    let chart = ChartBuilder::on(root)
        .caption(title, (FONT, 24))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)?;
    Ok(chart)
}

pub(super) fn color(i: usize) -> RGBColor {
    const COLORS: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
    ];
    COLORS[i % COLORS.len()]
}

/// The most an axis reaches: the largest finite value (at least `floor`),
/// capped far beyond any real run's.
fn top(values: impl Iterator<Item = f64>, floor: f64) -> f64 {
    values
        .filter(|v| v.is_finite())
        .fold(floor, f64::max)
        .min(AXIS_CAP)
}

/// The largest axis a chart draws: a figure read back from a spoiled
/// folder may be anything, and plotters maps a coordinate far outside
/// its range past i32 (a panic, found by the spoiled-folder test).
const AXIS_CAP: f64 = 1e12;

/// `v` inside `0..=max` (a non-finite value at 0).
fn within(v: f64, max: f64) -> f64 {
    if v.is_finite() {
        v.clamp(0.0, max)
    } else {
        0.0
    }
}

fn admitted_vs_limit(root: Canvas, arms: &[ArmData]) -> Result<(), ReportError> {
    let x_max = top(
        arms.iter().flat_map(|a| a.timeline.last().map(|p| p.0)),
        1.0,
    );
    let y_max = top(
        arms.iter()
            .flat_map(|a| a.timeline.iter().map(|p| p.1).chain(a.band)),
        1.0,
    ) * 1.15;
    let mut chart = frame(&root, CHARTS[0].title, 0f64..x_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("time since the load started (s)")
        .y_desc("admitted in trailing window ÷ limit (busiest key)")
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .draw()?;
    // Fault windows, shaded (arms run the same faults at the same times).
    // Shaded once each: the same fault differs between arms by a few ms.
    let mut windows: Vec<(f64, f64)> = Vec::new();
    for &(from, to) in arms.iter().flat_map(|a| &a.fault_windows) {
        let w = (within(from, x_max), within(to, x_max));
        if !windows
            .iter()
            .any(|o| (o.0 - w.0).abs() < 0.1 && (o.1 - w.1).abs() < 0.1)
        {
            windows.push(w);
        }
    }
    if !windows.is_empty() {
        let shade = RGBColor(255, 170, 60).mix(0.18).filled();
        chart
            .draw_series(
                windows
                    .iter()
                    .map(|&(from, to)| Rectangle::new([(from, 0.0), (to, y_max)], shade)),
            )?
            .label("fault")
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 24, y + 6)], shade));
    }
    chart
        .draw_series(DashedLineSeries::new(
            vec![(0.0, 1.0), (x_max, 1.0)],
            8,
            6,
            BLACK.stroke_width(2),
        ))?
        .label("limit")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], BLACK.stroke_width(2)));
    // What a correct limiter may reach when its windows' alignment is not
    // known (a fixed window: two windows' worth): a correct run stays under.
    let mut bands: Vec<f64> = arms
        .iter()
        .filter_map(|a| a.band)
        .map(|b| within(b, y_max))
        .collect();
    bands.sort_by(f64::total_cmp);
    bands.dedup();
    let grey = RGBColor(120, 120, 120);
    for (i, &b) in bands.iter().enumerate() {
        let drawn = chart.draw_series(DashedLineSeries::new(
            vec![(0.0, b), (x_max, b)],
            4,
            4,
            grey.stroke_width(2),
        ))?;
        if i == 0 {
            drawn
                .label("most a correct limiter may reach")
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 24, y)], grey.stroke_width(2))
                });
        }
    }
    for (i, arm) in arms.iter().enumerate() {
        let c = color(i);
        chart
            .draw_series(LineSeries::new(
                arm.timeline
                    .iter()
                    .map(|&(x, y)| (within(x, x_max), within(y, y_max))),
                c.stroke_width(2),
            ))?
            .label(arm.name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(3)));
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present()?;
    Ok(())
}

pub(super) fn legend<'a, 'b: 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, BitMapBackend<'b>, CT>,
    position: SeriesLabelPosition,
) -> Result<(), ReportError> {
    chart
        .configure_series_labels()
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(position)
        .draw()?;
    Ok(())
}

/// x is log10(1 / (1 - percentile)): 0 at 0%, 1 at 90%, 2 at 99%, ...
fn latency_spectrum(root: Canvas, arms: &[ArmData]) -> Result<(), ReportError> {
    let series: Vec<Vec<(f64, f64)>> = arms
        .iter()
        .map(|a| {
            let h = a.latency;
            if h.is_empty() {
                return Vec::new();
            }
            h.iter_quantiles(10)
                .map(|v| {
                    (
                        v.quantile_iterated_to(),
                        v.value_iterated_to() as f64 / 1_000.0,
                    )
                })
                .filter(|(q, _)| *q < 0.99999)
                .map(|(q, ms)| ((1.0 / (1.0 - q)).log10(), ms))
                .collect()
        })
        .collect();
    let y_max = top(series.iter().flatten().map(|p| p.1), 1.0) * 1.1;
    let series: Vec<Vec<(f64, f64)>> = series
        .into_iter()
        .map(|points| {
            points
                .into_iter()
                .map(|(x, y)| (within(x, 4.0), within(y, y_max)))
                .collect()
        })
        .collect();
    let mut chart = frame(&root, CHARTS[1].title, 0f64..4.0, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("percentile (log scale)")
        .y_desc("latency from intended send (ms)")
        .x_labels(5)
        .x_label_formatter(&|x| match x.round() as i64 {
            0 => "0%".to_string(),
            1 => "90%".to_string(),
            2 => "99%".to_string(),
            3 => "99.9%".to_string(),
            _ => "99.99%".to_string(),
        })
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .draw()?;
    for (i, (arm, points)) in arms.iter().zip(series).enumerate() {
        let c = color(i);
        chart
            .draw_series(LineSeries::new(points, c.stroke_width(2)))?
            .label(arm.name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(3)));
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present()?;
    Ok(())
}

fn per_replica(root: Canvas, arms: &[ArmData]) -> Result<(), ReportError> {
    let bars: Vec<(String, u64, u64)> = arms
        .iter()
        .flat_map(|a| {
            a.per_replica
                .iter()
                .enumerate()
                .map(move |(r, &(admitted, rejected))| {
                    (format!("{} r{r}", a.name), admitted, rejected)
                })
        })
        .collect();
    let y_max = bars.iter().map(|b| b.1 + b.2).max().unwrap_or(1).max(1) as f64 * 1.15;
    let names: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    let mut chart = frame(
        &root,
        CHARTS[2].title,
        (0..bars.len().max(1) - 1).into_segmented(),
        0f64..y_max,
    )?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(bars.len().max(1))
        .x_label_formatter(&|x| category(x, &names))
        .y_desc("requests")
        .label_style((FONT, if bars.len() > 8 { 11 } else { 14 }))
        .axis_desc_style((FONT, 16))
        .draw()?;
    let admitted = color(2);
    let rejected = color(1);
    chart
        .draw_series(
            bars.iter()
                .enumerate()
                .map(|(i, b)| bar(i, 0.0, b.1 as f64, admitted)),
        )?
        .label("admitted")
        .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], admitted.filled()));
    chart
        .draw_series(
            bars.iter()
                .enumerate()
                .map(|(i, b)| bar(i, b.1 as f64, (b.1 + b.2) as f64, rejected)),
        )?
        .label("rejected")
        .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], rejected.filled()));
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present()?;
    Ok(())
}

fn category(x: &SegmentValue<usize>, names: &[impl AsRef<str>]) -> String {
    match x {
        SegmentValue::CenterOf(i) => names
            .get(*i)
            .map(|n| n.as_ref().to_string())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

fn bar(i: usize, from: f64, to: f64, c: RGBColor) -> Rectangle<(SegmentValue<usize>, f64)> {
    let mut r = Rectangle::new(
        [
            (SegmentValue::Exact(i), from),
            (SegmentValue::Exact(i + 1), to),
        ],
        c.filled(),
    );
    r.set_margin(0, 0, 10, 10);
    r
}

fn over_admission(root: Canvas, arms: &[ArmData]) -> Result<(), ReportError> {
    let y_max = top(arms.iter().filter_map(|a| a.over_admission), 1.2) * 1.15;
    let values: Vec<f64> = arms
        .iter()
        .map(|a| within(a.over_admission.unwrap_or(0.0), y_max))
        .collect();
    let n = arms.len().max(1);
    let names: Vec<&str> = arms.iter().map(|a| a.name).collect();
    let mut chart = frame(
        &root,
        CHARTS[3].title,
        (0..n - 1).into_segmented(),
        0f64..y_max,
    )?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| category(x, &names))
        .y_desc("admitted ÷ allowed by the policy")
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .draw()?;
    chart.draw_series(
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| bar(i, 0.0, v, if v > 1.02 { color(1) } else { color(0) })),
    )?;
    chart.draw_series(values.iter().enumerate().map(|(i, &v)| {
        Text::new(
            format!("{v:.2}×"),
            (SegmentValue::CenterOf(i), v + y_max * 0.04),
            (FONT, 16)
                .into_font()
                .color(&BLACK)
                .pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Bottom,
                )),
        )
    }))?;
    chart
        .draw_series(DashedLineSeries::new(
            vec![(SegmentValue::Exact(0), 1.0), (SegmentValue::Exact(n), 1.0)],
            8,
            6,
            BLACK.stroke_width(2),
        ))?
        .label("the policy's limit (1.0)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], BLACK.stroke_width(2)));
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
