//! What every chart is drawn with: the canvas and its size, the embedded
//! font, the frame and its legend, the colours, axes kept to finite
//! figures, and a chart saved as a PNG whole or not at all.

use crate::report::error::ReportError;
use plotters::coord::ranged1d::AsRangedCoord;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use std::path::Path;
use std::sync::Once;

pub(crate) const SIZE: (u32, u32) = (960, 480);

pub(crate) const FONT: &str = "sans-serif";

pub(crate) fn fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
        let _ = register_font(FONT, FontStyle::Bold, dejavu::sans::bold());
    });
}

/// What a chart is drawn on: an RGB buffer of [`SIZE`].
pub(crate) type Canvas<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

/// Draws a chart in memory and writes it as a PNG, whole or not at all
/// (`store::atomic`): a full disk leaves no half chart, and its error
/// names the file.
pub(crate) fn save(
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
pub(crate) type Frame<'a, 'b, X, Y> = ChartContext<
    'a,
    BitMapBackend<'b>,
    Cartesian2d<<X as AsRangedCoord>::CoordDescType, <Y as AsRangedCoord>::CoordDescType>,
>;

/// The frame every chart is drawn in: `root` filled white, the title
/// above, the same margin and label areas, and axes over `x` by `y`.
pub(crate) fn frame<'a, 'b, X: AsRangedCoord, Y: AsRangedCoord>(
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

pub(crate) fn color(i: usize) -> RGBColor {
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

pub(crate) fn legend<'a, 'b: 'a, CT: CoordTranslate>(
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

/// The most an axis reaches: the largest finite value (at least `floor`),
/// capped far beyond any real run's.
pub(crate) fn top(values: impl Iterator<Item = f64>, floor: f64) -> f64 {
    values
        .filter(|v| v.is_finite())
        .fold(floor, f64::max)
        .min(AXIS_CAP)
}

/// The largest axis a chart draws: a figure read back from a spoiled
/// folder may be anything, and plotters maps a coordinate far outside
/// its range past i32 (a panic, found by the spoiled-folder test).
pub(crate) const AXIS_CAP: f64 = 1e12;

/// `v` inside `0..=max` (a non-finite value at 0).
pub(crate) fn within(v: f64, max: f64) -> f64 {
    if v.is_finite() {
        v.clamp(0.0, max)
    } else {
        0.0
    }
}
