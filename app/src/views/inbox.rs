//! The findings inbox (`/findings`): the account's findings across its projects with filters
//! (a plain GET form, so every view has an address to share), saved views per person, a
//! sticky bar that triages the ticked findings (its count and button kept by
//! `public/dashboard.js`; nothing ticked, the button stays disabled), a CSV of the view, and
//! keyset pages. Server-rendered, no island.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use super::{count_of, error_view, form_notice, loading};
use crate::api::inbox::{load_inbox, DeleteView, SaveView};
use crate::model::{InboxFilter, InboxRowView, InboxView, SavedViewLink};

/// The form the ticked findings are triaged with (boxes name it with `form=`).
const BULK_FORM: &str = "inbox-triage";

#[component]
pub fn InboxPage() -> impl IntoView {
    let query = use_query_map();
    let key = move || {
        let q = query.read();
        (InboxFilter::from_lookup(|k| q.get(k)), q.get("cursor"))
    };
    let data = Resource::new(key, |(filter, cursor)| load_inbox(filter, cursor));
    view! {
        <Title text="Findings · Tidemark"/>
        <section class="page-head">
            <h1>"Findings"</h1>
            <p class="muted">"Every project's open and set-aside findings in one list, most severe first, then oldest. Filter, save the view, tick findings and set them aside together."</p>
        </section>
        <Suspense fallback=loading>
            {move || Suspend::new(async move {
                match data.await {
                    Ok(v) => inbox(v),
                    Err(err) => error_view(err),
                }
            })}
        </Suspense>
    }
}

fn inbox(v: InboxView) -> AnyView {
    let query = v.filter.query();
    let here = if query.is_empty() {
        "/findings".to_owned()
    } else {
        format!("/findings?{query}")
    };
    let csv = if query.is_empty() {
        "/findings.csv".to_owned()
    } else {
        format!("/findings.csv?{query}")
    };
    let next = v.next_cursor.clone().map(|c| {
        let sep = if query.is_empty() { "?" } else { "&" };
        format!("{here}{sep}cursor={}", crate::links::query_value(&c))
    });
    let count = v.rows.len();
    view! {
        {triage_notice()}
        {form_notice(SaveView::PATH, "View saved.")}
        {form_notice(DeleteView::PATH, "View removed.")}
        {saved_views(&v.saved, &query)}
        {filters(&v)}
        <section class="card" aria-labelledby="inbox-heading">
            <h2 id="inbox-heading">{count_of(count as i64, "finding", "findings")}{if v.next_cursor.is_some() { " on this page" } else { "" }}</h2>
            <p class="small">
                <a href=csv download="">"Download this view as CSV"</a>
                {v.paged.then(|| view! { " · " <a href=here.clone()>"First page"</a> })}
            </p>
            {if v.rows.is_empty() {
                view! { <p class="muted" data-testid="inbox-empty">"No finding matches these filters."</p> }.into_any()
            } else {
                view! {
                    {bulk_bar(&here)}
                    {table(v.rows)}
                }.into_any()
            }}
            {next.map(|href| view! { <p><a href=href data-testid="inbox-next">"Next page"</a></p> })}
        </section>
    }
    .into_any()
}

/// What the triage form's redirect says (fixed codes and numbers only).
fn triage_notice() -> Option<AnyView> {
    let q = use_query_map();
    let q = q.read_untracked();
    let code = q.get("triaged")?;
    let n = |k: &str| q.get(k).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
    let text = match code.as_str() {
        "saved" => {
            let skipped = n("skipped");
            let mut t = format!("{} set aside.", count_of(n("count"), "finding", "findings"));
            if skipped > 0 {
                t.push_str(&format!(" {} already set aside by someone else were left as they were (an admin may change them).", count_of(skipped, "finding", "findings")));
            }
            t
        }
        "none" => "Tick the findings to set aside first.".to_owned(),
        "reason" => "Say why: a reason is required.".to_owned(),
        "expiry" => "The expiry must be a future date.".to_owned(),
        "state" => "Choose what they are: accepted risk, false positive or won't fix.".to_owned(),
        "forbidden" => {
            "Those findings are set aside already; only an admin may change that.".to_owned()
        }
        _ => return None,
    };
    let class = if code == "saved" {
        "notice"
    } else {
        "notice error"
    };
    Some(
        view! { <p class=class role="status" data-testid="inbox-triage-notice">{text}</p> }
            .into_any(),
    )
}

fn saved_views(saved: &[SavedViewLink], query: &str) -> AnyView {
    view! {
        <section class="card saved-views" aria-labelledby="views-heading">
            <h2 id="views-heading">"Saved views"</h2>
            {if saved.is_empty() {
                view! { <p class="muted small">"None yet: filter below, then save the view by name. Its address works for anyone in the account."</p> }.into_any()
            } else {
                view! {
                    <ul class="view-list" data-testid="saved-views">
                        {saved.iter().map(|s| {
                            let href = if s.query.is_empty() { "/findings".to_owned() } else { format!("/findings?{}", s.query) };
                            view! {
                                <li>
                                    <a href=href>{s.name.clone()}</a>
                                    <form method="post" action=DeleteView::PATH class="inline">
                                        <input type="hidden" name="view_id" value=s.id.clone()/>
                                        <button type="submit" class="link" aria-label=format!("Remove the view {}", s.name)>"Remove"</button>
                                    </form>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }.into_any()
            }}
            <form method="post" action=SaveView::PATH class="row-form" data-keep="" data-testid="save-view">
                <input type="hidden" name="query" value=query.to_owned()/>
                <label>"Name" <input type="text" name="name" required maxlength="80" placeholder="Critical on prod"/></label>
                <button type="submit">"Save this view"</button>
            </form>
        </section>
    }
    .into_any()
}

fn select(
    name: &'static str,
    label: &'static str,
    current: &str,
    options: &[(&'static str, &'static str)],
) -> AnyView {
    let current = current.to_owned();
    view! {
        <label>{label}
            <select name=name>
                {options.iter().map(|(value, text)| view! {
                    <option value=*value selected=current == *value>{*text}</option>
                }).collect_view()}
            </select>
        </label>
    }
    .into_any()
}

fn filters(v: &InboxView) -> AnyView {
    let f = &v.filter;
    let project_options = v
        .projects
        .iter()
        .map(|(id, label)| {
            let selected = f.project == *id || f.project == *label;
            view! { <option value=label.clone() selected=selected>{label.clone()}</option> }
        })
        .collect_view();
    view! {
        <form method="get" action="/findings" class="card filters" data-testid="inbox-filters" aria-label="Filters">
            <label>"Project"
                <select name="project">
                    <option value="">"All projects"</option>
                    {project_options}
                </select>
            </label>
            <label>"Branch" <input type="text" name="branch" value=f.branch.clone() placeholder="default (* for all)"/></label>
            <label>"Framework" <input type="text" name="framework" value=f.framework.clone() placeholder="cis-aws-2.0"/></label>
            <label>"Requirement" <input type="text" name="rule_id" value=f.rule_id.clone() placeholder="cis-aws-2.0-2.1.4"/></label>
            <label>"Cloud account" <input type="text" name="cloud_account" value=f.cloud_account.clone()/></label>
            {select("severity", "Severity", &f.severity, &[("", "Any"), ("critical", "Critical"), ("high", "High"), ("medium", "Medium"), ("low", "Low")])}
            {select("state", "Status", &f.state, &[("", "Open and set aside"), ("open", "Open"), ("triaged", "Set aside"), ("fixed", "Fixed")])}
            {select("triage", "Triage", &f.triage, &[("", "Any"), ("none", "Not triaged"), ("accepted_risk", "Accepted risk"), ("false_positive", "False positive"), ("wont_fix", "Won't fix"), ("lapsed", "Lapsed")])}
            {select("older_than_days", "Age", &f.older_than_days, &[("", "Any"), ("7", "Older than 7 days"), ("30", "Older than 30 days"), ("90", "Older than 90 days")])}
            <button type="submit" class="primary">"Apply"</button>
            {(!f.is_empty()).then(|| view! { <a href="/findings">"Clear"</a> })}
        </form>
    }
    .into_any()
}

/// The sticky bar: the count of ticked findings, and how to set them aside.
fn bulk_bar(back: &str) -> AnyView {
    view! {
        <form method="post" action="/findings/triage" id=BULK_FORM class="bulk-bar" data-bulk-bar="" data-testid="bulk-bar">
            <input type="hidden" name="back" value=back.to_owned()/>
            <span class="bulk-count" data-bulk-count="" aria-live="polite">"0 selected"</span>
            <label>"Set aside as"
                <select name="state">
                    <option value="accepted_risk">"accepted risk"</option>
                    <option value="false_positive">"false positive"</option>
                    <option value="wont_fix">"won't fix"</option>
                </select>
            </label>
            <label>"Reason" <input type="text" name="reason" maxlength="1000" placeholder="Why"/></label>
            <label>"Until" <input type="date" name="expires"/></label>
            <button type="submit" class="primary" data-bulk-submit="">"Set aside"</button>
        </form>
    }
    .into_any()
}

fn table(rows: Vec<InboxRowView>) -> AnyView {
    view! {
        <div class="table-wrap" tabindex="0">
            <table class="findings" data-testid="inbox-table">
                <thead><tr>
                    <th scope="col" class="select">
                        <input type="checkbox" data-select-all=BULK_FORM aria-label="Select every finding on this page"/>
                    </th>
                    <th scope="col">"Severity"</th><th scope="col">"Finding"</th><th scope="col">"Project"</th>
                    <th scope="col">"Status"</th><th scope="col">"First seen"</th>
                </tr></thead>
                <tbody>
                    {rows.into_iter().map(|r| {
                        let label = format!("Select {} on {}", r.rule_id, r.resource);
                        let branch = r.branch.clone().map(|b| format!(" · {b}")).unwrap_or_default();
                        view! {
                            <tr>
                                <td class="select" data-label="Select">
                                    <input type="checkbox" name="finding" value=r.finding_id.clone() form=BULK_FORM aria-label=label/>
                                </td>
                                <td data-label="Severity"><span class=format!("sev {}", r.severity)>{r.severity.clone()}</span></td>
                                <th scope="row">
                                    <a href=super::finding::finding_href(&r.project_id, &r.finding_id)><code>{r.resource.clone()}</code></a>
                                    " " <a class="small" href=super::requirement::requirement_href(&r.rule_id)><code>{r.rule_id.clone()}</code></a>
                                </th>
                                <td data-label="Project"><a href=format!("/projects/{}", r.project_id)>{r.project_label.clone()}</a><span class="muted small">{branch}</span></td>
                                <td data-label="Status">{r.state.clone()}
                                    {r.triage.clone().map(|t| view! { <div class="small triage-note">{t}</div> })}</td>
                                <td data-label="First seen"><span title=r.first_seen.clone()>{r.age.clone()}</span></td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}
