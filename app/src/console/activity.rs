//! A licence's use over the last 90 days: validations and pushes per day, each a bar chart
//! drawn with plotters on the server (no script), with the days as a table beside it.

use leptos::prelude::*;
use plotters::prelude::*;

/// One day of use: its date ("2026-11-22"), validations and pushes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayUse {
    pub date: String,
    pub validations: i64,
    pub pushes: i64,
}

const WIDTH: u32 = 720;
const HEIGHT: u32 = 90;

/// Bars of `values` scaled to their peak, edge to edge; `None` when all are zero.
fn bars(values: &[i64], colour: RGBColor) -> Option<String> {
    let peak = values.iter().copied().max().unwrap_or(0);
    if peak <= 0 {
        return None;
    }
    let n = values.len().max(1) as i64;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        let x_of = |i: i64| (i64::from(WIDTH) * i / n) as i32;
        let y_of = |v: i64| (i64::from(HEIGHT) - i64::from(HEIGHT) * v / peak) as i32;
        let _ = root.draw(&PathElement::new(
            vec![(0, HEIGHT as i32 - 1), (WIDTH as i32, HEIGHT as i32 - 1)],
            RGBColor(139, 148, 158).stroke_width(1),
        ));
        for (i, v) in values.iter().enumerate() {
            if *v == 0 {
                continue;
            }
            let i = i as i64;
            // A one-pixel gap between days keeps a busy quarter readable.
            let _ = root.draw(&Rectangle::new(
                [
                    (x_of(i), y_of(*v)),
                    ((x_of(i + 1) - 1).max(x_of(i)), HEIGHT as i32),
                ],
                colour.filled(),
            ));
        }
        let _ = root.present();
    }
    Some(svg.replacen(
        "<svg ",
        "<svg shape-rendering=\"crispEdges\" aria-hidden=\"true\" ",
        1,
    ))
}

/// One panel: its heading with the total and the peak, and its bars (or a sentence).
fn panel(
    title: &'static str,
    values: &[i64],
    colour: RGBColor,
    first: &str,
    last: &str,
) -> AnyView {
    let total: i64 = values.iter().sum();
    let peak = values.iter().copied().max().unwrap_or(0);
    let drawing = bars(values, colour);
    let (first, last) = (first.to_owned(), last.to_owned());
    view! {
        <figure class="use-panel">
            <figcaption>
                <strong>{title}</strong>
                {(total > 0).then(|| view! {
                    <span class="muted small">{format!(" {total} in 90 days · busiest day {peak}")}</span>
                })}
            </figcaption>
            {match drawing {
                Some(svg) => view! {
                    <div class="chart-layer" inner_html=svg></div>
                    <div class="use-axis muted small" aria-hidden="true"><span>{first}</span><span>{last}</span></div>
                }
                .into_any(),
                None => view! { <p class="muted">"None in the last 90 days."</p> }.into_any(),
            }}
        </figure>
    }
    .into_any()
}

/// The card: both charts, then the days with any use as a table (newest first).
pub fn activity_section(days: Vec<DayUse>) -> AnyView {
    let validations: Vec<i64> = days.iter().map(|d| d.validations).collect();
    let pushes: Vec<i64> = days.iter().map(|d| d.pushes).collect();
    let first = days.first().map(|d| d.date.clone()).unwrap_or_default();
    let last = days.last().map(|d| d.date.clone()).unwrap_or_default();
    let busy: Vec<DayUse> = days
        .into_iter()
        .rev()
        .filter(|d| d.validations > 0 || d.pushes > 0)
        .collect();
    let busy_count = busy.len();
    let rows = busy
        .into_iter()
        .map(|d| {
            view! {
                <tr>
                    <td data-label="Day">{d.date}</td>
                    <td data-label="Validations" class="num">{d.validations}</td>
                    <td data-label="Pushes" class="num">{d.pushes}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="card" aria-labelledby="use-heading" data-testid="licence-use">
            <h2 id="use-heading">"Use over 90 days"</h2>
            {panel("Validations per day", &validations, RGBColor(11, 107, 203), &first, &last)}
            {panel("Pushes per day", &pushes, RGBColor(179, 92, 0), &first, &last)}
            <details>
                <summary>{match busy_count {
                    0 => "No day with any use".to_owned(),
                    1 => "The one day with any use, as a table".to_owned(),
                    n => format!("The {n} days with any use, as a table"),
                }}</summary>
                {super::data_table("Validations and pushes per day", &["Day", "Validations", "Pushes"], rows.into_any())}
            </details>
        </section>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_quarter_draws_no_bars() {
        assert_eq!(bars(&[0; 90], RGBColor(0, 0, 0)), None);
    }

    #[test]
    fn each_busy_day_is_one_bar_scaled_to_the_peak() {
        let mut values = vec![0; 90];
        values[10] = 5;
        values[89] = 10;
        let svg = bars(&values, RGBColor(1, 2, 3)).expect("drawn");
        assert_eq!(svg.matches("<rect").count(), 2, "{svg}");
        assert!(svg.starts_with("<svg shape-rendering=\"crispEdges\" aria-hidden=\"true\""));
    }
}
