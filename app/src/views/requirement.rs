//! A requirement across the account's projects (`/requirements/<rule id>`): what the
//! published catalogue says of it, and every resource its rule judged in each live project's
//! latest default-branch scan, failing first, each open one linked to its finding's life.
//! Server-rendered, no island.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use super::{count_of, error_view, loading};
use crate::api::posture::load_requirement;
use crate::model::{RequirementPage, RequirementResourceView};

/// A requirement page's address (the rule id as one percent-encoded segment).
pub fn requirement_href(rule_id: &str) -> String {
    format!("/requirements/{}", crate::links::path_segment(rule_id))
}

#[component]
pub fn RequirementAcrossPage() -> impl IntoView {
    let params = use_params_map();
    let rule = move || {
        percent_encoding::percent_decode_str(&params.read().get("rule_id").unwrap_or_default())
            .decode_utf8_lossy()
            .into_owned()
    };
    let data = Resource::new(rule, load_requirement);
    view! {
        <Suspense fallback=loading>
            {move || Suspend::new(async move {
                match data.await {
                    Ok(v) => page(v),
                    Err(err) => error_view(err),
                }
            })}
        </Suspense>
    }
}

fn page(v: RequirementPage) -> AnyView {
    let heading = match &v.title {
        Some(t) => format!("{} {t}", v.rule_id),
        None => v.rule_id.clone(),
    };
    let summary = format!(
        "{} of {} fail it in their latest default-branch scan.",
        count_of(v.failing_projects as i64, "project", "projects"),
        v.projects
    );
    let failing = v.resources.iter().filter(|r| r.status == "failed").count();
    view! {
        <Title text=format!("{} · Requirements · Tidemark", v.rule_id)/>
        <nav class="crumbs" aria-label="Breadcrumb">
            <a href="/projects">"Projects"</a> " / " "Requirements" " /"
        </nav>
        <section class="page-head">
            <h1 data-testid="requirement-heading">{heading}</h1>
            <p class="headline" data-testid="requirement-summary">
                {summary}
                <span class="muted">{format!(" {} failing.", count_of(failing as i64, "resource", "resources"))}</span>
            </p>
            {v.framework_name.clone().map(|name| view! {
                <p class="muted small">
                    {name}
                    {v.section.clone().map(|s| format!(" · section {s}"))}
                    {v.manual.then_some(" · manual: no scan evaluates it")}
                </p>
            })}
            {v.description.clone().map(|d| view! { <p class="req-description">{d}</p> })}
            {v.framework.is_none().then(|| view! {
                <p class="muted small">"No published catalogue lists this rule: it is named as scans report it."</p>
            })}
        </section>
        <section class="card" aria-labelledby="resources-heading">
            <h2 id="resources-heading">"Resources across projects"</h2>
            {if v.resources.is_empty() {
                view! { <p class="muted" data-testid="no-resources">"No project's latest scan judged it."</p> }.into_any()
            } else {
                resource_table(v.resources).into_any()
            }}
        </section>
    }
    .into_any()
}

fn resource_table(rows: Vec<RequirementResourceView>) -> impl IntoView {
    view! {
        <div class="table-wrap" tabindex="0">
            <table data-testid="requirement-resources">
                <thead><tr>
                    <th scope="col">"Resource"</th><th scope="col">"Project"</th><th scope="col">"Status"</th>
                    <th scope="col">"Severity"</th><th scope="col">"Failing since"</th>
                </tr></thead>
                <tbody>
                    {rows.into_iter().map(|r| {
                        let resource = match &r.finding_id {
                            Some(id) => view! {
                                <a href=super::finding::finding_href(&r.project_id, id)><code>{r.resource.clone()}</code></a>
                            }.into_any(),
                            None => view! { <code>{r.resource.clone()}</code> }.into_any(),
                        };
                        view! {
                            <tr>
                                <th scope="row">{resource}
                                    {(!r.message.is_empty()).then(|| view! { <span class="muted small">{format!(" {}", r.message)}</span> })}
                                </th>
                                <td data-label="Project"><a href=format!("/projects/{}", r.project_id)>{r.project_label.clone()}</a></td>
                                <td data-label="Status">{super::posture::status_tag(&r.status)}
                                    {r.triage.clone().map(|t| view! { <span class="small triage-note">{format!(" {t}")}</span> })}</td>
                                <td data-label="Severity">{r.severity.clone()}</td>
                                <td data-label="Failing since">{super::utc_time_or(r.failing_since.clone(), "–")}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}
