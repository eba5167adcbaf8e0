//! A licence's page in the console: what it is, who holds its seats, who has access, how its
//! account uses it (counts, never content), and what happened to it.

use leptos::prelude::*;

use super::data_table;

/// Label and value rows of the licence's summary.
pub type Facts = Vec<(&'static str, String)>;

#[derive(Debug, Clone)]
pub struct MachineLine {
    pub name: String,
    /// The fingerprint, or "named only".
    pub fingerprint: String,
    pub activated: String,
    pub last_seen: String,
    /// "holds a seat", "released …", "offline until …"
    pub seat: String,
    pub live_keys: i64,
    /// The client it last validated with, or "not said".
    pub client: String,
}

#[derive(Debug, Clone)]
pub struct MemberLine {
    pub email: String,
    pub role: String,
    pub last_sign_in: String,
}

#[derive(Debug, Clone)]
pub struct ProjectLine {
    pub name: String,
    pub scans: i64,
    pub last_push: String,
}

#[derive(Debug, Clone)]
pub struct HistoryLine {
    pub at: String,
    pub what: String,
    pub who: String,
    pub detail: String,
}

#[derive(Debug, Clone)]
pub struct LicenseView {
    pub id: String,
    pub email: String,
    pub facts: Facts,
    pub machines: Vec<MachineLine>,
    pub members: Vec<MemberLine>,
    pub projects: Vec<ProjectLine>,
    pub events: Vec<HistoryLine>,
    pub audit: Vec<HistoryLine>,
    pub actions: super::actions::ActionsView,
    /// The last 90 days, oldest first.
    pub days: Vec<super::activity::DayUse>,
    /// What the action just confirmed did ("The tier is changed.").
    pub done: Option<String>,
}

fn empty_row(columns: usize, text: &'static str) -> AnyView {
    view! { <tr><td colspan=columns.to_string() class="muted">{text}</td></tr> }.into_any()
}

/// A history's table; vendor events name no one (the audit trail says who), so they have no
/// "Who" column.
fn history_table(
    caption: &'static str,
    lines: Vec<HistoryLine>,
    none: &'static str,
    with_who: bool,
) -> AnyView {
    let columns = if with_who { 4 } else { 3 };
    let rows = if lines.is_empty() {
        empty_row(columns, none)
    } else {
        lines
            .into_iter()
            .map(|l| {
                view! {
                    <tr>
                        <td data-label="When">{l.at}</td>
                        <td data-label="What">{l.what}</td>
                        {with_who.then(|| view! { <td data-label="Who">{l.who}</td> })}
                        <td data-label="Detail">{l.detail}</td>
                    </tr>
                }
            })
            .collect_view()
            .into_any()
    };
    let heads: &'static [&'static str] = if with_who {
        &["When", "What", "Who", "Detail"]
    } else {
        &["When", "What", "Detail"]
    };
    data_table(caption, heads, rows)
}

pub fn license_page(v: LicenseView) -> AnyView {
    let machines = if v.machines.is_empty() {
        empty_row(7, "No machine has activated this licence.")
    } else {
        v.machines
            .into_iter()
            .map(|m| {
                view! {
                    <tr>
                        <td data-label="Machine">{m.name}</td>
                        <td data-label="Fingerprint"><code>{m.fingerprint}</code></td>
                        <td data-label="Activated">{m.activated}</td>
                        <td data-label="Last seen">{m.last_seen}</td>
                        <td data-label="Seat">{m.seat}</td>
                        <td data-label="Live keys">{m.live_keys}</td>
                        <td data-label="Client">{m.client}</td>
                    </tr>
                }
            })
            .collect_view()
            .into_any()
    };
    let members = if v.members.is_empty() {
        empty_row(3, "No member.")
    } else {
        v.members
            .into_iter()
            .map(|m| {
                view! {
                    <tr>
                        <td data-label="E-mail">{m.email}</td>
                        <td data-label="Role">{m.role}</td>
                        <td data-label="Last sign-in">{m.last_sign_in}</td>
                    </tr>
                }
            })
            .collect_view()
            .into_any()
    };
    let projects = if v.projects.is_empty() {
        empty_row(3, "No project yet.")
    } else {
        v.projects
            .into_iter()
            .map(|p| {
                view! {
                    <tr>
                        <td data-label="Project">{p.name}</td>
                        <td data-label="Scans">{p.scans}</td>
                        <td data-label="Last push">{p.last_push}</td>
                    </tr>
                }
            })
            .collect_view()
            .into_any()
    };
    view! {
        <nav class="crumbs" aria-label="Breadcrumb"><a href="/console">"Find a customer"</a></nav>
        <section class="card">
            <h1>"Licence "<code>{v.id}</code></h1>
            <p class="lede">{v.email}</p>
            {v.done.map(|d| view! { <p class="notice" role="status" data-testid="done">{d}</p> })}
            <dl class="meta">
                {v.facts
                    .into_iter()
                    .map(|(label, value)| view! { <dt>{label}</dt><dd>{value}</dd> })
                    .collect_view()}
            </dl>
        </section>
        {super::actions::actions_section(v.actions)}
        {super::activity::activity_section(v.days)}
        <section class="card">
            <h2>"Seats"</h2>
            {data_table("Machines", &["Machine", "Fingerprint", "Activated", "Last seen", "Seat", "Live keys", "Client"], machines)}
        </section>
        <section class="card">
            <h2>"Members"</h2>
            {data_table("Members", &["E-mail", "Role", "Last sign-in"], members)}
        </section>
        <section class="card">
            <h2>"Projects"</h2>
            {data_table("Projects", &["Project", "Scans", "Last push"], projects)}
        </section>
        <section class="card">
            <h2>"Vendor events"</h2>
            {history_table("Vendor events", v.events, "No event yet.", false)}
        </section>
        <section class="card">
            <h2>"Audit trail"</h2>
            {history_table("Audit trail", v.audit, "Nothing recorded yet.", true)}
        </section>
    }
    .into_any()
}
