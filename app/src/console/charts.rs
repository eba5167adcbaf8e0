//! The console's charts: bars drawn with plotters into SVG on the server, with no text inside
//! (labels, legends and figures are HTML beside them, so they follow the page's colours and
//! are read by screen readers; each chart has its table).

use plotters::prelude::*;

pub const WIDTH: u32 = 720;
pub const HEIGHT: u32 = 120;

/// How a column's values stand: on top of each other, or side by side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Stacked,
    Grouped,
}

pub fn rgb(hex: u32) -> RGBColor {
    RGBColor((hex >> 16) as u8, (hex >> 8) as u8, hex as u8)
}

/// Tier colours, in `Tier::ALL`'s order (the stylesheet's `.swatch.tier-…` match them).
pub const TIER_COLOURS: [u32; 4] = [0x8b949e, 0x0b6bcb, 0xb35c00, 0x7b3fb2];
pub const FIRST: u32 = 0x0b6bcb;
pub const SECOND: u32 = 0xb35c00;

/// Columns of bars, one per entry of `columns`, each value coloured by its place; `None` when
/// every value is zero (the page says so instead of drawing an empty frame).
pub fn columns(columns: &[Vec<i64>], colours: &[u32], layout: Layout) -> Option<String> {
    let peak = columns
        .iter()
        .map(|c| match layout {
            Layout::Stacked => c.iter().sum::<i64>(),
            Layout::Grouped => c.iter().copied().max().unwrap_or(0),
        })
        .max()
        .unwrap_or(0);
    if peak <= 0 {
        return None;
    }
    let n = columns.len().max(1) as i64;
    let (w, h) = (i64::from(WIDTH), i64::from(HEIGHT));
    let x_of = |i: i64| (w * i / n) as i32;
    let y_of = |v: i64| (h - h * v / peak) as i32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        let _ = root.draw(&PathElement::new(
            vec![(0, HEIGHT as i32 - 1), (WIDTH as i32, HEIGHT as i32 - 1)],
            rgb(0x8b949e).stroke_width(1),
        ));
        for (i, values) in columns.iter().enumerate() {
            let (x0, x1) = (x_of(i as i64), x_of(i as i64 + 1));
            // A gap between columns: a fifth of a column, at least a pixel when there is room.
            let gap = ((x1 - x0) / 5).max(i32::from(x1 - x0 > 2));
            let (x0, x1) = (x0 + gap / 2, x1 - (gap - gap / 2));
            let mut base = 0;
            let slots = values.len().max(1) as i32;
            for (k, v) in values.iter().enumerate() {
                if *v <= 0 {
                    continue;
                }
                let colour = rgb(colours.get(k).copied().unwrap_or(FIRST));
                let rect = match layout {
                    Layout::Stacked => {
                        let r = [(x0, y_of(base + v)), (x1, y_of(base))];
                        base += v;
                        r
                    }
                    Layout::Grouped => {
                        let span = x1 - x0;
                        let (a, b) = (
                            x0 + span * k as i32 / slots,
                            x0 + span * (k as i32 + 1) / slots,
                        );
                        [(a, y_of(*v)), (b.max(a + 1), HEIGHT as i32)]
                    }
                };
                let _ = root.draw(&Rectangle::new(rect, colour.filled()));
            }
        }
        let _ = root.present();
    }
    Some(svg.replacen(
        "<svg ",
        "<svg shape-rendering=\"crispEdges\" aria-hidden=\"true\" ",
        1,
    ))
}

/// One horizontal bar of `value` out of `peak` (a row of a bar list).
pub fn bar(value: i64, peak: i64, colour: u32) -> String {
    const BAR_W: u32 = 240;
    const BAR_H: u32 = 14;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (BAR_W, BAR_H)).into_drawing_area();
        let width = if peak > 0 {
            (i64::from(BAR_W) * value.max(0) / peak) as i32
        } else {
            0
        };
        if width > 0 {
            let _ = root.draw(&Rectangle::new(
                [(0, 0), (width, BAR_H as i32)],
                rgb(colour).filled(),
            ));
        }
        let _ = root.present();
    }
    svg.replacen("<svg ", "<svg aria-hidden=\"true\" ", 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_to_draw_is_none_and_each_value_is_one_rectangle() {
        assert_eq!(
            columns(&[vec![0, 0], vec![0, 0]], &[FIRST, SECOND], Layout::Stacked),
            None
        );
        let svg = columns(
            &[vec![1, 2], vec![0, 3], vec![4, 0]],
            &[FIRST, SECOND],
            Layout::Grouped,
        )
        .expect("drawn");
        assert_eq!(svg.matches("<rect").count(), 4, "{svg}");
        let stacked = columns(&[vec![1, 2, 3, 0]], &TIER_COLOURS, Layout::Stacked).expect("drawn");
        assert_eq!(stacked.matches("<rect").count(), 3);
    }

    #[test]
    fn a_bar_is_as_long_as_its_share() {
        assert!(!bar(0, 10, FIRST).contains("<rect"));
        assert!(bar(5, 10, FIRST).contains("width=\"120\""));
    }
}
