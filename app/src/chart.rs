//! Charts drawn with `plotters` into SVG on the server. plotters draws the geometry; labels
//! and the focusable points are plain SVG the page adds on top. Drawing on the server keeps
//! plotters out of the WASM bundle: a range change fetches a new drawing with its data.

use plotters::prelude::*;

use crate::model::{severity_colour, ChartPoint, HistoryDrawing, Severity, HEIGHT, WIDTH};
/// Left/right margins leave room for the score labels.
const LEFT: u32 = 44;
const RIGHT: u32 = 12;
const TOP: u32 = 10;
/// Room under the bars for the dates (drawn at `model::DATE_BASELINE`).
const BOTTOM: u32 = 18;
/// The score plot's share of the height; severities are stacked beneath.
const SCORE_HEIGHT: u32 = 220;
const GAP: u32 = 16;

const ACCENT: RGBColor = RGBColor(11, 107, 203);
const GRID: RGBColor = RGBColor(200, 208, 218);
/// The gate's minimum score: the "bad" red, dashed.
const GATE: RGBColor = RGBColor(198, 40, 40);

fn hex(colour: &str) -> RGBColor {
    let v = u32::from_str_radix(colour.trim_start_matches('#'), 16).unwrap_or(0);
    RGBColor((v >> 16) as u8, (v >> 8) as u8, v as u8)
}

/// Score over time, with the severity counts of each scan stacked beneath.
/// The score axis: fitted to the scores and the gate's minimum with a margin of 5, on whole
/// tens, spanning a multiple of 20 (so its five grid lines fall on whole numbers), within
/// 0-100. A flat line at 90 shows 80-100, not a sliver at the top of 0-100.
pub fn score_axis(scores: &[f64], gate_min: Option<f64>) -> (f64, f64) {
    let values = scores.iter().copied().chain(gate_min);
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() {
        return (0.0, 100.0);
    }
    let lo = (((lo - 5.0) / 10.0).floor() * 10.0).clamp(0.0, 80.0);
    let hi = (((hi + 5.0) / 10.0).ceil() * 10.0).clamp(lo + 20.0, 100.0);
    let span = ((hi - lo) / 20.0).ceil() * 20.0;
    if lo + span <= 100.0 {
        (lo, lo + span)
    } else {
        (100.0 - span, 100.0)
    }
}

/// What a point of the score chart says, read by screen readers on focus and shown as its
/// tooltip: when, the score, the change against the previous scan, and the gate's verdict
/// with its reasons when it failed. Parts are joined with " · " (the tooltip puts each on a
/// line of its own).
pub fn point_label(when: &str, score: f64, delta: f64, gate: &crate::model::GateResult) -> String {
    let change = if delta > 0.0 {
        format!("up {delta:.1} since the previous scan")
    } else if delta < 0.0 {
        format!("down {:.1} since the previous scan", -delta)
    } else {
        "no change since the previous scan".to_owned()
    };
    let mut parts = vec![when.to_owned(), format!("score {score:.1}"), change];
    if gate.status == crate::model::GateStatus::Failed {
        parts.push(if gate.reasons.is_empty() {
            "quality gate failed".to_owned()
        } else {
            format!("quality gate failed: {}", gate.reasons.join("; "))
        });
    }
    parts.join(" · ")
}

/// Score over time (on [`score_axis`], or 0-100 when `full_scale`, with the gate's minimum
/// as a dashed line), with the severity counts of each scan stacked beneath.
pub fn draw_history(
    points: &[ChartPoint],
    gate_min: Option<f64>,
    full_scale: bool,
) -> HistoryDrawing {
    let mut svg = String::new();
    let mut dots = Vec::with_capacity(points.len());
    let mut grid = Vec::new();
    let mut x_ticks = Vec::new();
    let mut bar_ticks = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        let (t0, t1) = match (points.first(), points.last()) {
            (Some(a), Some(b)) if b.at > a.at => (a.at, b.at),
            (Some(a), _) => (a.at - 43_200_000, a.at + 43_200_000),
            _ => (0, 1),
        };
        let plot = root.margin(TOP, BOTTOM, LEFT, RIGHT);
        let (upper, lower) = plot.split_vertically(SCORE_HEIGHT);
        let lower = lower.margin(GAP, 0, 0, 0);
        let scores: Vec<f64> = points.iter().map(|p| p.score).collect();
        let (lo, hi) = if full_scale {
            (0.0, 100.0)
        } else {
            score_axis(&scores, gate_min)
        };
        if let Ok(mut chart) = ChartBuilder::on(&upper).build_cartesian_2d(t0..t1, lo..hi) {
            for i in 0..5 {
                let y = lo + (hi - lo) * f64::from(i) / 4.0;
                let _ =
                    chart.draw_series(LineSeries::new([(t0, y), (t1, y)], GRID.stroke_width(1)));
                grid.push((chart.backend_coord(&(t0, y)).1, y.round() as u32));
            }
            if let Some(min) = gate_min {
                let _ = chart.draw_series(DashedLineSeries::new(
                    [(t0, min), (t1, min)],
                    6,
                    4,
                    GATE.stroke_width(2),
                ));
            }
            let _ = chart.draw_series(LineSeries::new(
                points.iter().map(|p| (p.at, p.score)),
                ACCENT.stroke_width(2),
            ));
            dots.extend(points.iter().map(|p| chart.backend_coord(&(p.at, p.score))));
            if !points.is_empty() {
                x_ticks = time_ticks(t0, t1, 6)
                    .into_iter()
                    .map(|(at, label)| (chart.backend_coord(&(at, 0.0)).0, label))
                    .collect();
            }
        }
        let most = points
            .iter()
            .map(|p| i64::try_from(p.severities.total()).unwrap_or(i64::MAX))
            .max()
            .unwrap_or(0)
            .max(1);
        if let Ok(mut bars) = ChartBuilder::on(&lower).build_cartesian_2d(t0..t1, 0i64..most) {
            let mut scale = vec![0, most / 2, most];
            scale.dedup();
            bar_ticks = scale
                .into_iter()
                .map(|v| {
                    (
                        bars.backend_coord(&(t0, v)).1,
                        u64::try_from(v).unwrap_or(0),
                    )
                })
                .collect();
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
    HistoryDrawing {
        svg,
        dots,
        grid,
        x_ticks,
        bar_ticks,
    }
}

/// Tick instants for a time axis from `t0` to `t1` (milliseconds, UTC): at most `max`, on
/// whole hours or whole days (UTC midnight) at the smallest step that keeps them apart, with
/// labels such as "Nov 20" (or "Nov 20 14:00" when the step is under a day, "2026-11-20"
/// when the range spans more than about a year).
pub fn time_ticks(t0: i64, t1: i64, max: usize) -> Vec<(i64, String)> {
    use tidemark_domain::time::{DAY_MS as DAY, HOUR_MS as HOUR};
    const STEPS: [i64; 15] = [
        HOUR,
        2 * HOUR,
        3 * HOUR,
        6 * HOUR,
        12 * HOUR,
        DAY,
        2 * DAY,
        7 * DAY,
        14 * DAY,
        30 * DAY,
        60 * DAY,
        91 * DAY,
        182 * DAY,
        365 * DAY,
        730 * DAY,
    ];
    let span = (t1 - t0).max(1);
    let max = i64::try_from(max.max(1)).unwrap_or(1);
    let step = STEPS
        .into_iter()
        .find(|s| span / s < max)
        .unwrap_or(span / max + 1);
    let format = if step < DAY {
        "%b %-d %H:%M"
    } else if span > 400 * DAY {
        "%Y-%m-%d"
    } else {
        "%b %-d"
    };
    // Weeks start on Mondays (the epoch was a Thursday).
    let offset = if step % (7 * DAY) == 0 { 4 * DAY } else { 0 };
    let from = t0 - offset;
    let first =
        from.div_euclid(step) * step + if from.rem_euclid(step) == 0 { 0 } else { step } + offset;
    (0..)
        .map(|i| first + i * step)
        .take_while(|t| *t <= t1)
        .filter_map(|t| {
            chrono::DateTime::from_timestamp_millis(t).map(|d| (t, d.format(format).to_string()))
        })
        .collect()
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

/// One framework's share passing over `t0..t1` (every framework on the same time axis, so the
/// small multiples compare), on 0-100 % with grid lines at 0, 50 and 100; a dot on each scan
/// when there are few, so one scan still shows.
pub fn draw_share_trend(points: &[(i64, f64)], t0: i64, t1: i64) -> String {
    use crate::model::{TREND_HEIGHT, TREND_WIDTH};
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (TREND_WIDTH, TREND_HEIGHT)).into_drawing_area();
        let t1 = t1.max(t0 + 1);
        if let Ok(mut chart) =
            ChartBuilder::on(&root.margin(4, 4, 4, 4)).build_cartesian_2d(t0..t1, 0f64..100f64)
        {
            for y in [0.0, 50.0, 100.0] {
                let _ =
                    chart.draw_series(LineSeries::new([(t0, y), (t1, y)], GRID.stroke_width(1)));
            }
            let line = points.iter().map(|&(at, share)| (at, share * 100.0));
            let _ = chart.draw_series(LineSeries::new(line.clone(), ACCENT.stroke_width(2)));
            if points.len() <= 30 {
                let _ = chart.draw_series(
                    line.map(|p| Circle::new(p, 3, ShapeStyle::from(ACCENT).filled())),
                );
            }
        }
        let _ = root.present();
    }
    svg
}

/// The drawing's size (its overlay uses the same view box).
pub const DAYS_WIDTH: u32 = 880;
pub const DAYS_HEIGHT: u32 = 190;
/// Room left of the bars for the counts, and under them for the dates.
const DAYS_LEFT: i32 = 44;
const DAYS_BOTTOM: i32 = 24;
const DAYS_TOP: i32 = 8;
const DAYS_RIGHT: i32 = 8;

/// Open findings by severity per day, stacked (critical at the bottom): the bars, the axes'
/// ticks, one column per day for its values on hover and focus, and the text alternative
/// (in words and as a table of the days the counts changed).
pub fn draw_severity_days(days: &[(i64, [i64; 4])]) -> crate::model::SeverityDays {
    use crate::model::{DayColumn, SeverityDays};
    let peak = days
        .iter()
        .map(|(_, c)| c.iter().sum::<i64>())
        .max()
        .unwrap_or(0);
    if peak == 0 {
        // Nothing to stack: the page says so instead of an empty frame.
        return SeverityDays {
            summary: format!(
                "No open findings on the default branches in the last {} days.",
                days.len()
            ),
            ..SeverityDays::default()
        };
    }
    let n = days.len().max(1) as i32;
    let plot_w = DAYS_WIDTH as i32 - DAYS_LEFT - DAYS_RIGHT;
    let plot_h = DAYS_HEIGHT as i32 - DAYS_TOP - DAYS_BOTTOM;
    let x_of = |i: i32| DAYS_LEFT + plot_w * i / n;
    let y_of = |v: i64| DAYS_TOP + plot_h - (plot_h as i64 * v / peak) as i32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (DAYS_WIDTH, DAYS_HEIGHT)).into_drawing_area();
        let grid = hex("#8b949e").mix(0.35);
        for v in [peak / 2, peak] {
            let y = y_of(v);
            let _ = root.draw(&PathElement::new(
                vec![(DAYS_LEFT, y), (DAYS_LEFT + plot_w, y)],
                grid.stroke_width(1),
            ));
        }
        let baseline = DAYS_TOP + plot_h;
        let _ = root.draw(&PathElement::new(
            vec![(DAYS_LEFT, baseline), (DAYS_LEFT + plot_w, baseline)],
            hex("#8b949e").stroke_width(1),
        ));
        for (i, (_, counts)) in days.iter().enumerate() {
            let (x0, x1) = (x_of(i as i32), x_of(i as i32 + 1));
            let mut base = 0;
            for (severity, count) in Severity::ALL.iter().zip(counts) {
                if *count == 0 {
                    continue;
                }
                let colour = hex(severity_colour(*severity));
                let _ = root.draw(&Rectangle::new(
                    [(x0, y_of(base + count)), (x1, y_of(base))],
                    colour.filled(),
                ));
                base += count;
            }
        }
        let _ = root.present();
    }
    // Bars meet edge to edge: without crisp edges the scaled drawing shows seams between days.
    let svg = svg.replacen("<svg ", "<svg shape-rendering=\"crispEdges\" ", 1);
    let label = |at: i64, c: &[i64; 4]| {
        format!(
            "{} · {} open · {} critical · {} high · {} medium · {} low",
            crate::time::date(at),
            c.iter().sum::<i64>(),
            c[0],
            c[1],
            c[2],
            c[3]
        )
    };
    let columns = days
        .iter()
        .enumerate()
        .map(|(i, (at, counts))| {
            let (x0, x1) = (x_of(i as i32), x_of(i as i32 + 1));
            DayColumn {
                x: x0,
                width: (x1 - x0).max(1),
                top: y_of(counts.iter().sum()),
                at: *at,
                label: label(*at, counts),
            }
        })
        .collect::<Vec<_>>();
    // A date every two weeks or so, the last day always.
    let step = (days.len() / 6).max(1);
    let x_ticks = days
        .iter()
        .enumerate()
        .filter(|(i, _)| (days.len() - 1 - i).is_multiple_of(step))
        .map(|(i, (at, _))| {
            let mid = (x_of(i as i32) + x_of(i as i32 + 1)) / 2;
            (mid, crate::time::date(*at)[5..].to_owned())
        })
        .collect();
    let y_ticks = [0, peak / 2, peak]
        .into_iter()
        .filter(|v| *v == 0 || *v != peak / 2 || peak >= 2)
        .map(|v| (y_of(v), v))
        .collect();
    // The table: the first day, each day the counts changed, and the last day.
    let rows = days
        .iter()
        .enumerate()
        .filter(|(i, (_, c))| *i == 0 || *i == days.len() - 1 || days[i - 1].1 != *c)
        .map(|(_, (at, c))| (crate::time::date(*at), *c))
        .collect();
    let summary = match days.last() {
        Some((_, [c, h, m, l])) => format!(
            "Open findings by severity, the last {} days across the default branches: today {c} critical, {h} high, {m} medium, {l} low; at most {peak} on one day.",
            days.len()
        ),
        None => "No scans yet.".to_owned(),
    };
    SeverityDays {
        svg,
        summary,
        columns,
        x_ticks,
        y_ticks,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(at: i64, score: f64) -> ChartPoint {
        ChartPoint {
            scan_id: tidemark_wire::ids::ScanId::trusted(format!("s{at}")),
            at,
            score,
            label: String::new(),
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
    fn the_score_axis_fits_the_scores_and_the_gate() {
        assert_eq!(score_axis(&[], None), (0.0, 100.0));
        assert_eq!(score_axis(&[90.0, 91.0], None), (80.0, 100.0));
        assert_eq!(score_axis(&[64.5, 79.0], None), (50.0, 90.0));
        // The gate's line stays on the chart.
        assert_eq!(score_axis(&[90.0], Some(60.0)), (40.0, 100.0));
        assert_eq!(score_axis(&[0.0, 100.0], None), (0.0, 100.0));
        assert_eq!(score_axis(&[2.0], None), (0.0, 20.0));
        for (lo, hi) in [
            score_axis(&[33.3, 47.1], Some(40.0)),
            score_axis(&[99.0], None),
        ] {
            assert!((0.0..=100.0).contains(&lo) && hi <= 100.0 && hi - lo >= 20.0);
            assert_eq!((hi - lo) % 20.0, 0.0, "{lo}-{hi}");
        }
    }

    #[test]
    fn open_findings_stack_by_day_or_say_there_are_none() {
        let none = draw_severity_days(&[(0, [0; 4]), (1, [0; 4])]);
        assert!(none.svg.is_empty() && none.columns.is_empty());
        assert_eq!(
            none.summary,
            "No open findings on the default branches in the last 2 days."
        );
        const DAY: i64 = 86_400_000;
        let days = [
            (0, [1, 0, 0, 0]),
            (DAY, [1, 0, 0, 0]),
            (2 * DAY, [1, 2, 0, 3]),
        ];
        let d = draw_severity_days(&days);
        // One rectangle per non-zero count: 1 on each of the first two days, 3 on the third.
        assert_eq!(d.svg.matches("<rect").count(), 5, "{}", d.svg);
        assert!(
            d.summary
                .contains("today 1 critical, 2 high, 0 medium, 3 low; at most 6 on one day"),
            "{}",
            d.summary
        );
        // Each day's values, for hover and focus; the tallest bar reaches the top.
        assert_eq!(d.columns.len(), 3);
        assert_eq!(
            d.columns[2].label,
            "1970-01-03 · 6 open · 1 critical · 2 high · 0 medium · 3 low"
        );
        assert_eq!(d.columns[2].top, DAYS_TOP);
        assert!(d.columns[0].top > d.columns[2].top);
        // Counts on the left axis from 0 to the peak; the last day is always dated.
        assert_eq!(
            d.y_ticks.iter().map(|(_, v)| *v).collect::<Vec<_>>(),
            vec![0, 3, 6]
        );
        assert_eq!(d.x_ticks.last().map(|(_, l)| l.as_str()), Some("01-03"));
        // The table: the first day, the days that changed, the last (the unchanged second
        // day is left out).
        assert_eq!(
            d.rows,
            vec![
                ("1970-01-01".to_owned(), [1, 0, 0, 0]),
                ("1970-01-03".to_owned(), [1, 2, 0, 3]),
            ]
        );
    }

    #[test]
    fn the_gates_minimum_is_drawn_dashed() {
        let points: Vec<ChartPoint> = (0..3).map(|i| point(i * 1000, 70.0)).collect();
        let with = draw_history(&points, Some(60.0), false).svg;
        let without = draw_history(&points, None, false).svg;
        // Dashes are short segments across the whole width: dozens of them.
        let lines = |svg: &str| svg.matches("<polyline").count();
        assert!(
            lines(&with) > lines(&without) + 20,
            "{} vs {}",
            lines(&with),
            lines(&without)
        );
    }

    #[test]
    fn a_point_says_when_its_score_its_change_and_why_the_gate_failed() {
        use crate::model::{GateResult, GateStatus};
        let passed = GateResult {
            status: GateStatus::Passed,
            reasons: vec![],
        };
        assert_eq!(
            point_label("2026-11-25 14:03 UTC", 82.0, 2.5, &passed),
            "2026-11-25 14:03 UTC · score 82.0 · up 2.5 since the previous scan"
        );
        assert_eq!(
            point_label("t", 80.0, 0.0, &passed),
            "t · score 80.0 · no change since the previous scan"
        );
        let failed = GateResult {
            status: GateStatus::Failed,
            reasons: vec![
                "score 72 is below the gate's minimum of 80".into(),
                "2 new".into(),
            ],
        };
        assert_eq!(
            point_label("t", 72.0, -10.25, &failed),
            "t · score 72.0 · down 10.2 since the previous scan · quality gate failed: \
             score 72 is below the gate's minimum of 80; 2 new"
        );
    }

    #[test]
    fn the_full_scale_spans_0_to_100_whatever_the_scores() {
        let points: Vec<ChartPoint> = (0..3).map(|i| point(i * 1000, 90.0 + i as f64)).collect();
        let labels = |full| {
            draw_history(&points, None, full)
                .grid
                .iter()
                .map(|&(_, v)| v)
                .collect::<Vec<_>>()
        };
        assert_eq!(labels(false), [80, 85, 90, 95, 100]);
        assert_eq!(labels(true), [0, 25, 50, 75, 100]);
        // On 0-100 the same scores sit higher up the plot (smaller y) than on 80-100.
        let low_dot = |full| draw_history(&points, None, full).dots[0].1;
        assert!(low_dot(true) < low_dot(false));
    }

    #[test]
    fn every_point_gets_a_dot_inside_the_plot() {
        let points: Vec<ChartPoint> = (0..10).map(|i| point(i * 1000, 10.0 * i as f64)).collect();
        let drawing = draw_history(&points, None, false);
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
        assert_eq!(
            drawing.bar_ticks.iter().map(|t| t.1).collect::<Vec<_>>(),
            [0, 3, 6],
            "a scale up to the most findings of any scan"
        );
        assert!(
            drawing.bar_ticks[2].0 < drawing.bar_ticks[0].0,
            "more is higher"
        );
    }

    #[test]
    fn the_time_axis_has_a_few_dated_ticks_inside_the_range() {
        let day = 86_400_000;
        let t0 = 1_795_000_000_000; // 2026-11-18T…
        let ticks = time_ticks(t0, t0 + 30 * day, 6);
        assert!((3..=6).contains(&ticks.len()), "{ticks:?}");
        assert!(ticks.iter().all(|(t, _)| *t >= t0 && *t <= t0 + 30 * day));
        assert!(ticks.iter().all(|(t, _)| t % day == 0), "on UTC midnights");
        // Weekly, on Mondays: 2026-11-23 is the first Monday after the 18th.
        assert_eq!(ticks[0].1, "Nov 23", "{ticks:?}");
        assert_eq!(ticks[2].1, "Dec 7", "{ticks:?}");
        let hours = time_ticks(t0, t0 + day / 2, 6);
        assert!(hours[0].1.contains(':'), "{hours:?}");
        let years = time_ticks(t0, t0 + 900 * day, 6);
        assert!(years[0].1.starts_with("20"), "{years:?}");
        assert!(time_ticks(t0, t0, 6).len() <= 1);
    }

    #[test]
    fn the_chart_labels_its_dates_where_the_points_are() {
        let day = 86_400_000;
        let points: Vec<ChartPoint> = (0..8)
            .map(|i| point(1_795_000_000_000 + i * day, 50.0))
            .collect();
        let drawing = draw_history(&points, None, false);
        assert!(!drawing.x_ticks.is_empty());
        let (first, last) = (drawing.dots[0].0, drawing.dots[7].0);
        assert!(drawing
            .x_ticks
            .iter()
            .all(|(x, _)| *x >= first && *x <= last));
    }

    #[test]
    fn a_single_scan_and_an_empty_history_draw_without_panicking() {
        assert_eq!(draw_history(&[point(5, 50.0)], None, false).dots.len(), 1);
        assert!(draw_history(&[], None, false).dots.is_empty());
        assert!(draw_sparkline(&[], 100, 24).starts_with("<svg"));
    }
}
