//! Charts drawn with `plotters` into SVG on the server. plotters draws the geometry; labels
//! and the focusable points are plain SVG the page adds on top. Drawing on the server keeps
//! plotters out of the WASM bundle: a range change fetches a new drawing with its data.

use plotters::prelude::*;

use crate::model::{severity_colour, ChartPoint, HistoryDrawing, Severity, HEIGHT, WIDTH};
/// Left/right margins leave room for the score labels.
const LEFT: u32 = 44;
const RIGHT: u32 = 12;
const TOP: u32 = 10;
/// The score plot's share of the height; severities are stacked beneath.
const SCORE_HEIGHT: u32 = 220;
const GAP: u32 = 16;

const ACCENT: RGBColor = RGBColor(11, 107, 203);
const GRID: RGBColor = RGBColor(200, 208, 218);

fn hex(colour: &str) -> RGBColor {
    let v = u32::from_str_radix(colour.trim_start_matches('#'), 16).unwrap_or(0);
    RGBColor((v >> 16) as u8, (v >> 8) as u8, v as u8)
}

/// Score over time, with the severity counts of each scan stacked beneath.
pub fn draw_history(points: &[ChartPoint]) -> HistoryDrawing {
    let mut svg = String::new();
    let mut dots = Vec::with_capacity(points.len());
    let mut grid = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        let (t0, t1) = match (points.first(), points.last()) {
            (Some(a), Some(b)) if b.at > a.at => (a.at, b.at),
            (Some(a), _) => (a.at - 43_200_000, a.at + 43_200_000),
            _ => (0, 1),
        };
        let plot = root.margin(TOP, 0, LEFT, RIGHT);
        let (upper, lower) = plot.split_vertically(SCORE_HEIGHT);
        let lower = lower.margin(GAP, 0, 0, 0);
        if let Ok(mut chart) = ChartBuilder::on(&upper).build_cartesian_2d(t0..t1, 0f64..100f64) {
            for y in [0.0, 25.0, 50.0, 75.0, 100.0] {
                let _ =
                    chart.draw_series(LineSeries::new([(t0, y), (t1, y)], GRID.stroke_width(1)));
                grid.push((chart.backend_coord(&(t0, y)).1, y as u32));
            }
            let _ = chart.draw_series(LineSeries::new(
                points.iter().map(|p| (p.at, p.score)),
                ACCENT.stroke_width(2),
            ));
            dots.extend(points.iter().map(|p| chart.backend_coord(&(p.at, p.score))));
        }
        let most = points
            .iter()
            .map(|p| i64::try_from(p.severities.total()).unwrap_or(i64::MAX))
            .max()
            .unwrap_or(0)
            .max(1);
        if let Ok(mut bars) = ChartBuilder::on(&lower).build_cartesian_2d(t0..t1, 0i64..most) {
            let half = ((t1 - t0) / (points.len().max(1) as i64 * 3)).max(1);
            for p in points {
                let mut base = 0;
                for severity in Severity::ALL {
                    let count = i64::try_from(p.severities.get(severity)).unwrap_or(0);
                    if count > 0 {
                        let _ = bars.draw_series([Rectangle::new(
                            [(p.at - half, base), (p.at + half, base + count)],
                            hex(severity_colour(severity)).filled(),
                        )]);
                    }
                    base += count;
                }
            }
        }
        let _ = root.present();
    }
    HistoryDrawing { svg, dots, grid }
}

/// A small line of recent scores for a project card.
pub fn draw_sparkline(scores: &[f64], width: u32, height: u32) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        let n = scores.len().max(2) as i32;
        if let Ok(mut chart) =
            ChartBuilder::on(&root.margin(2, 2, 2, 2)).build_cartesian_2d(0..n - 1, 0f64..100f64)
        {
            let _ = chart.draw_series(LineSeries::new(
                scores.iter().enumerate().map(|(i, s)| (i as i32, *s)),
                ACCENT.stroke_width(2),
            ));
        }
        let _ = root.present();
    }
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(at: i64, score: f64) -> ChartPoint {
        ChartPoint {
            scan_id: format!("s{at}"),
            at,
            score,
            severities: crate::model::SeverityCounts {
                critical: 1,
                high: 2,
                medium: 0,
                low: 3,
            },
            gate: crate::model::GateStatus::None,
        }
    }

    #[test]
    fn every_point_gets_a_dot_inside_the_plot() {
        let points: Vec<ChartPoint> = (0..10).map(|i| point(i * 1000, 10.0 * i as f64)).collect();
        let drawing = draw_history(&points);
        assert_eq!(drawing.dots.len(), 10);
        assert!(drawing.svg.starts_with("<svg"), "{}", &drawing.svg[..40]);
        assert!(drawing.svg.contains("<polyline"), "the score line is drawn");
        // Higher scores sit higher (smaller y); time runs left to right.
        assert!(drawing.dots[9].1 < drawing.dots[0].1);
        assert!(drawing.dots[9].0 > drawing.dots[0].0);
        assert!(drawing
            .dots
            .iter()
            .all(|(x, y)| *x >= 0 && *x <= WIDTH as i32 && *y >= 0 && *y <= HEIGHT as i32));
        assert_eq!(drawing.grid.len(), 5);
    }

    #[test]
    fn a_single_scan_and_an_empty_history_draw_without_panicking() {
        assert_eq!(draw_history(&[point(5, 50.0)]).dots.len(), 1);
        assert!(draw_history(&[]).dots.is_empty());
        assert!(draw_sparkline(&[], 100, 24).starts_with("<svg"));
    }
}
