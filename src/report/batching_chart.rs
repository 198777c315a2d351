//! The batching trade in one chart: for each Redis arm of a run with
//! leases, Redis commands per decision (x) against its wrong decisions (y):
//! definite violations (admits proven beyond the policy: leases spent in
//! the window after the one they were leased in) and false rejects (a
//! replica refused while others held the window's admits in their leases).
//! Drawn only when the run has a `redis_batched` arm; whether each arm kept
//! within its bound is in the table and the `lease of` line.

use super::charts::canvas::{color, fonts, frame, legend, save, Canvas, FONT};
use super::charts::Chart;
use super::error::ReportError;
use crate::store::summary::Summary;
use plotters::prelude::*;
use std::path::Path;

pub(crate) const TRADE: Chart = Chart {
    file: "lease-trade.png",
    title: "Redis commands per decision against wrong decisions",
};

/// One Redis arm on the chart.
#[derive(Debug, PartialEq)]
pub(crate) struct Point<'a> {
    pub name: &'a str,
    pub commands: f64,
    pub violations: u64,
    pub false_rejects: u64,
}

/// One of a point's two figures.
type Figure = fn(&Point) -> u64;

/// The Redis arms that have both figures, when any arm is batched.
pub(crate) fn points(s: &Summary) -> Vec<Point<'_>> {
    if !s.arms.iter().any(|a| a.lease_bound.is_some()) {
        return Vec::new();
    }
    s.arms
        .iter()
        .filter_map(|a| {
            let commands = a.redis.as_ref()?.commands_per_decision;
            let c = a.correctness.as_ref()?;
            Some(Point {
                name: &a.name,
                commands,
                violations: c.definite_violations,
                false_rejects: c.false_rejects,
            })
        })
        .collect()
}

/// Writes the chart when the run has batched arms; says whether it did.
pub(crate) fn render(dir: &Path, s: &Summary) -> Result<bool, ReportError> {
    let points = points(s);
    if points.is_empty() {
        return Ok(false);
    }
    fonts();
    let x_max = points.iter().map(|p| p.commands).fold(1.0f64, f64::max) * 1.2;
    let y_max = points
        .iter()
        .map(|p| p.violations.max(p.false_rejects) as f64)
        .fold(10.0f64, f64::max)
        * 1.15;
    save(&dir.join(TRADE.file), |root| {
        draw(root, &points, x_max, y_max)
    })?;
    Ok(true)
}

fn draw(root: Canvas, points: &[Point], x_max: f64, y_max: f64) -> Result<(), ReportError> {
    let mut chart = frame(&root, TRADE.title, 0f64..x_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("Redis commands per decision")
        .y_desc("requests")
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .draw()?;
    let series: [(&str, Figure, RGBColor); 2] = [
        ("definite violations", |p| p.violations, color(1)),
        ("false rejects", |p| p.false_rejects, color(0)),
    ];
    for (label, value, c) in series {
        chart
            .draw_series(
                points
                    .iter()
                    .map(|p| Circle::new((p.commands, value(p) as f64), 6, c.filled())),
            )?
            .label(label)
            .legend(move |(x, y)| Circle::new((x + 12, y), 6, c.filled()));
    }
    // Each arm named once, beside the higher of its two points.
    chart.draw_series(points.iter().map(|p| {
        let y = p.violations.max(p.false_rejects) as f64;
        Text::new(
            p.name.to_string(),
            (p.commands + x_max * 0.015, y + y_max * 0.02),
            (FONT, 15).into_font().color(&BLACK),
        )
    }))?;
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::summary::{LeaseBound, RedisUse};

    fn fixture() -> Summary {
        serde_json::from_str(include_str!("../../tests/fixtures/report-v1/summary.json")).unwrap()
    }

    fn redis(commands_per_decision: f64) -> Option<RedisUse> {
        Some(RedisUse {
            nodes: Vec::new(),
            decisions: 100,
            commands_per_decision,
            cpu_us_per_decision: 10.0,
            bytes_per_key: 100,
        })
    }

    #[test]
    fn only_a_run_with_leases_gets_the_chart() {
        let mut s = fixture();
        s.arms[1].redis = redis(3.5);
        assert!(points(&s).is_empty(), "no batched arm");
        let dir = tempfile::tempdir().unwrap();
        assert!(!render(dir.path(), &s).unwrap());
        assert!(!dir.path().join(TRADE.file).exists());

        // Arm 0 leased (limit 5 on 3 replicas, leases of 3: 5 + 3·2 = 11).
        s.arms[0].redis = redis(0.4);
        s.arms[0].lease_bound = Some(LeaseBound {
            limit_per_window: 11,
            definite_violations: 0,
        });
        let p = points(&s);
        assert_eq!(
            p,
            vec![
                Point {
                    name: "local",
                    commands: 0.4,
                    violations: 43,
                    false_rejects: 0,
                },
                Point {
                    name: "lua",
                    commands: 3.5,
                    violations: 0,
                    false_rejects: 0,
                },
            ]
        );
        assert!(render(dir.path(), &s).unwrap());
        let png = std::fs::read(dir.path().join(TRADE.file)).unwrap();
        assert_eq!(&png[1..4], b"PNG");

        // An arm without Redis figures is not drawn.
        s.arms[1].redis = None;
        assert_eq!(points(&s).len(), 1);
    }
}
