//! The business at a glance (`/console/business`): each figure a chart with its table and a
//! CSV of that same table (`/console/business/{slug}.csv`), so what is drawn, read and
//! downloaded is one set of numbers.

use leptos::prelude::*;
use tidemark_services::business::{Business, EXPIRING_WITHIN_DAYS, FIELD_DAYS};
use tidemark_wire::Tier;

use super::charts::{self, Layout, FIRST, SECOND, TIER_COLOURS};
use crate::time::date;

/// One figure's numbers, as its table shows them and its CSV holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub slug: &'static str,
    pub title: &'static str,
    pub heads: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
}

fn month(ms: i64) -> String {
    date(ms)[..7].to_owned()
}

fn limit_words(limit: Option<i64>) -> String {
    limit.map_or("no limit".to_owned(), |l| l.to_string())
}

/// Every figure's table, in the page's order.
pub fn tables(b: &Business) -> Vec<Table> {
    let mut heads = vec!["Month"];
    heads.extend(Tier::ALL.iter().map(|t| t.as_str()));
    heads.push("Total");
    let last = b.in_force.len().saturating_sub(1);
    let in_force = b
        .in_force
        .iter()
        .enumerate()
        .map(|(i, (at, counts))| {
            let mut row = vec![if i == last {
                format!("now ({})", date(*at))
            } else {
                month(*at)
            }];
            row.extend(counts.iter().map(i64::to_string));
            row.push(counts.iter().sum::<i64>().to_string());
            row
        })
        .collect();
    let flow = b
        .flow
        .iter()
        .map(|f| vec![month(f.month), f.began.to_string(), f.ended.to_string()])
        .collect();
    let expiring = b
        .expiring
        .iter()
        .map(|l| {
            vec![
                l.id.clone(),
                l.email.clone(),
                l.tier.as_str().to_owned(),
                date(l.expires_at),
            ]
        })
        .collect();
    let days = b
        .days
        .iter()
        .rev()
        .map(|d| {
            vec![
                date(d.day),
                d.validations.to_string(),
                d.pushes.to_string(),
                d.machines.to_string(),
            ]
        })
        .collect();
    let clients = b
        .clients
        .iter()
        .map(|(client, n)| vec![client.clone(), n.to_string()])
        .collect();
    let seats = b
        .seats
        .iter()
        .map(|s| {
            vec![
                s.tier.as_str().to_owned(),
                s.licences.to_string(),
                s.held.to_string(),
                limit_words(s.limit),
            ]
        })
        .collect();
    vec![
        Table {
            slug: "in-force",
            title: "Licences in force by tier",
            heads,
            rows: in_force,
        },
        Table {
            slug: "flow",
            title: "Licences made and ended per month",
            heads: vec!["Month", "Made", "Ended"],
            rows: flow,
        },
        Table {
            slug: "expiring",
            title: "Expiring in the next 30 days",
            heads: vec!["Licence", "E-mail", "Tier", "Expires"],
            rows: expiring,
        },
        Table {
            slug: "days",
            title: "Validations, pushes and active machines per day",
            heads: vec!["Day", "Validations", "Pushes", "Active machines"],
            rows: days,
        },
        Table {
            slug: "clients",
            title: "Clients in the field",
            heads: vec!["Client", "Machines"],
            rows: clients,
        },
        Table {
            slug: "seats",
            title: "Seat use per tier",
            heads: vec!["Tier", "Licences in force", "Seats held", "Seat limit"],
            rows: seats,
        },
    ]
}

/// A table inside a disclosure, with its CSV link.
fn table_view(t: &Table, open: bool) -> AnyView {
    let csv = format!("/console/business/{}.csv", t.slug);
    let heads = t.heads.clone();
    let summary = format!("{} as a table ({} rows)", t.title, t.rows.len());
    let rows = t
        .rows
        .iter()
        .map(|row| {
            let cells = row
                .iter()
                .zip(heads.iter())
                .map(|(cell, head)| view! { <td data-label=*head>{cell.clone()}</td> })
                .collect_view();
            view! { <tr>{cells}</tr> }
        })
        .collect_view();
    let title = t.title;
    view! {
        <details class="figure-table" open=open>
            <summary>{summary}</summary>
            {super::data_table(title, &heads, rows.into_any())}
        </details>
        <p class="small"><a href=csv download="">{format!("Download {} (CSV)", title.to_lowercase())}</a></p>
    }
    .into_any()
}

fn drawing(svg: Option<String>, empty: &'static str) -> AnyView {
    match svg {
        Some(svg) => view! { <div class="chart-layer" inner_html=svg></div> }.into_any(),
        None => view! { <p class="muted">{empty}</p> }.into_any(),
    }
}

fn legend(items: Vec<(&'static str, &'static str)>) -> AnyView {
    view! {
        <ul class="legend" aria-hidden="true">
            {items
                .into_iter()
                .map(|(class, label)| view! { <li><span class=format!("swatch {class}")></span>{label}</li> })
                .collect_view()}
        </ul>
    }
    .into_any()
}

/// Horizontal bars, a row per item: its label, its bar, its figure.
fn bar_list(items: Vec<(String, i64, String)>, colour: u32, empty: &'static str) -> AnyView {
    let peak = items.iter().map(|i| i.1).max().unwrap_or(0);
    if items.is_empty() {
        return view! { <p class="muted">{empty}</p> }.into_any();
    }
    view! {
        <div class="bar-list" aria-hidden="true">
            {items
                .into_iter()
                .map(|(label, value, figure)| view! {
                    <span class="bar-label">{label}</span>
                    <span class="bar" inner_html=charts::bar(value, peak, colour)></span>
                    <span class="bar-figure">{figure}</span>
                })
                .collect_view()}
        </div>
    }
    .into_any()
}

fn figure(
    id: &'static str,
    title: &'static str,
    lede: String,
    body: AnyView,
    table: AnyView,
) -> AnyView {
    let heading = format!("{id}-heading");
    let labelled_by = heading.clone();
    view! {
        <section class="card" aria-labelledby=labelled_by data-testid=id>
            <h2 id=heading>{title}</h2>
            <p class="muted small">{lede}</p>
            {body}
            {table}
        </section>
    }
    .into_any()
}

/// The clients in the field and the seats per tier, as bar lists.
fn bar_lists(b: &Business) -> (AnyView, AnyView) {
    let clients = bar_list(
        b.clients
            .iter()
            .map(|(c, n)| (c.clone(), *n, n.to_string()))
            .collect(),
        FIRST,
        "No machine holding a seat was seen in the last 30 days.",
    );
    let seat_peak_items = b
        .seats
        .iter()
        .map(|s| {
            (
                s.tier.as_str().to_owned(),
                s.held,
                if s.licences == 0 {
                    "no licence in force".to_owned()
                } else {
                    format!("{} held of {}", s.held, limit_words(s.limit))
                },
            )
        })
        .collect();
    let seats = bar_list(seat_peak_items, FIRST, "");
    (clients, seats)
}

/// The licences expiring soon: a column per day of the next 30 (how many expire that day),
/// then each linked to its page, soonest first.
fn expiring_body(b: &Business) -> AnyView {
    use tidemark_domain::client_version::day_of;
    let today = day_of(b.now);
    let per_day: Vec<Vec<i64>> = (0..EXPIRING_WITHIN_DAYS)
        .map(|d| {
            let day = today + d * tidemark_domain::time::DAY_MS;
            vec![b
                .expiring
                .iter()
                .filter(|l| day_of(l.expires_at) == day)
                .count() as i64]
        })
        .collect();
    let chart = charts::columns(&per_day, &[SECOND], Layout::Stacked);
    let links = b
        .expiring
        .iter()
        .map(|l| {
            let href = format!("/console/licenses/{}", l.id);
            view! {
                <li><a href=href>{l.email.clone()}</a>" · "{l.tier.as_str()}" · expires "{date(l.expires_at)}</li>
            }
        })
        .collect_view();
    view! {
        {drawing(chart, "None expires in the next 30 days.")}
        <ol class="act-list">{links}</ol>
    }
    .into_any()
}

pub fn business_page(b: Business) -> AnyView {
    let tables = tables(&b);
    let table = |slug: &str, open: bool| {
        tables
            .iter()
            .find(|t| t.slug == slug)
            .map(|t| table_view(t, open))
    };
    let tier_legend = || {
        legend(vec![
            ("tier-individual", "individual"),
            ("tier-team", "team"),
            ("tier-agency", "agency"),
            ("tier-enterprise", "enterprise"),
        ])
    };
    let in_force_now: i64 = b.in_force.last().map_or(0, |(_, c)| c.iter().sum());
    let in_force = charts::columns(
        &b.in_force
            .iter()
            .map(|(_, c)| c.to_vec())
            .collect::<Vec<_>>(),
        &TIER_COLOURS,
        Layout::Stacked,
    );
    let flow = charts::columns(
        &b.flow
            .iter()
            .map(|f| vec![f.began, f.ended])
            .collect::<Vec<_>>(),
        &[FIRST, SECOND],
        Layout::Grouped,
    );
    let validations = charts::columns(
        &b.days
            .iter()
            .map(|d| vec![d.validations])
            .collect::<Vec<_>>(),
        &[FIRST],
        Layout::Stacked,
    );
    let machines = charts::columns(
        &b.days.iter().map(|d| vec![d.machines]).collect::<Vec<_>>(),
        &[SECOND],
        Layout::Stacked,
    );
    let (clients, seats) = bar_lists(&b);
    let expiring_count = b.expiring.len();
    let days_first = b.days.first().map(|d| date(d.day)).unwrap_or_default();
    view! {
        <nav class="crumbs" aria-label="Breadcrumb"><a href="/console">"Find a customer"</a></nav>
        <section class="card">
            <h1>"The business"</h1>
            <p class="lede">{format!("{in_force_now} licences in force now · as of {}", crate::time::format_time(b.now))}</p>
        </section>
        {figure(
            "expiring",
            "Expiring in the next 30 days",
            format!("{expiring_count} licences in force expire by {}: a list to act on.", date(b.now + EXPIRING_WITHIN_DAYS * tidemark_domain::time::DAY_MS)),
            expiring_body(&b),
            table("expiring", false).into_any(),
        )}
        {figure(
            "in-force",
            "Licences in force by tier",
            "At the start of each of the last twelve months, and now (the last column).".to_owned(),
            view! { {tier_legend()}{drawing(in_force, "No licence was in force in the last year.")} }.into_any(),
            table("in-force", false).into_any(),
        )}
        {figure(
            "flow",
            "Made and ended per month",
            "Ended: expired or suspended that month.".to_owned(),
            view! {
                {legend(vec![("first", "made"), ("second", "ended")])}
                {drawing(flow, "No licence was made or ended in the last year.")}
            }.into_any(),
            table("flow", false).into_any(),
        )}
        {figure(
            "days",
            "Validations and active machines per day",
            format!("The last 90 days from {days_first}; a machine is active on a day it validated naming its fingerprint."),
            view! {
                <h3 class="small">"Validations"</h3>
                {drawing(validations, "No validation in the last 90 days.")}
                <h3 class="small">"Active machines"</h3>
                {drawing(machines, "No machine was active in the last 90 days.")}
            }.into_any(),
            table("days", false).into_any(),
        )}
        {figure(
            "clients",
            "Clients in the field",
            format!("Machines holding a seat seen in the last {FIELD_DAYS} days, by the client their User-Agent named."),
            clients,
            table("clients", false).into_any(),
        )}
        {figure(
            "seats",
            "Seat use per tier",
            "Among the licences in force; a tier's limit is the sum of its licences' (none once one is unlimited).".to_owned(),
            seats,
            table("seats", true).into_any(),
        )}
    }
    .into_any()
}
