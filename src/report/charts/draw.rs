//! The four charts of a run folder, each drawn from the arms' figures:
//! admitted vs limit over time, the latency percentile spectrum, admits and
//! rejects per replica, over-admission by arm.

use super::canvas::{color, frame, legend, top, within, Canvas, FONT};
use super::files::{ArmData, CHARTS};
use crate::report::error::ReportError;
use plotters::prelude::*;

pub(crate) fn admitted_vs_limit(root: Canvas, arms: &[ArmData]) -> Result<(), ReportError> {
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

/// x is log10(1 / (1 - percentile)): 0 at 0%, 1 at 90%, 2 at 99%, ...
pub(crate) fn latency_spectrum(root: Canvas, arms: &[ArmData]) -> Result<(), ReportError> {
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

pub(crate) fn per_replica(root: Canvas, arms: &[ArmData]) -> Result<(), ReportError> {
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

pub(crate) fn over_admission(root: Canvas, arms: &[ArmData]) -> Result<(), ReportError> {
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
