//! Settings → Audit log (admins): the account's changes, newest first, filtered by actor and
//! action through the URL, 50 a page. Ordinary links and a GET form: no JavaScript needed.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use super::{error_view, loading};
use crate::api::audit::load_audit;
use crate::links::query_value;
use crate::model::{AuditFilter, AuditPage};

/// The log itself, as Settings → Audit log shows it (`/settings/audit`).
#[component]
pub fn AuditLog() -> impl IntoView {
    let query = use_query_map();
    let filter = move || {
        let q = query.read();
        AuditFilter {
            actor: q.get("actor").filter(|a| !a.is_empty()),
            action: q.get("action").filter(|a| !a.is_empty()),
            page: q
                .get("page")
                .and_then(|p| p.parse().ok())
                .unwrap_or(0)
                .max(0),
        }
    };
    let page = Resource::new(filter, |f| load_audit(f.actor, f.action, f.page));
    view! {
        <Suspense fallback=loading>
            {move || Suspend::new(async move {
                let f = filter();
                match page.await {
                    Ok(p) => audit_section(p, f).into_any(),
                    Err(err) => error_view(err),
                }
            })}
        </Suspense>
    }
}

/// The URL of page `page` under the filter `f`.
fn link(f: &AuditFilter, page: i64) -> String {
    let mut parts = Vec::new();
    if let Some(a) = &f.actor {
        parts.push(format!("actor={}", query_value(a)));
    }
    if let Some(a) = &f.action {
        parts.push(format!("action={}", query_value(a)));
    }
    parts.push(format!("page={page}"));
    format!("/settings/audit?{}", parts.join("&"))
}

fn audit_section(p: AuditPage, f: AuditFilter) -> impl IntoView {
    let prev = (f.page > 0).then(|| link(&f, f.page - 1));
    let next = p.has_more.then(|| link(&f, f.page + 1));
    let empty = p.rows.is_empty();
    view! {
        <section class="card" aria-labelledby="audit-heading" data-testid="audit-log">
            <h2 id="audit-heading">"Audit log"</h2>
            <p class="muted small">
                "Every change an admin makes here and every operator command that changes data, "
                "with who, when, from which address, and what it was before and after. "
                "Nobody can edit or delete an entry."
            </p>
            <form method="get" class="filters" role="search" aria-label="Filter the audit log">
                <label for="audit-actor">
                    "Who"
                    <select name="actor" id="audit-actor">
                        <option value="">"Anyone"</option>
                        {p.actors.iter().map(|a| {
                            let selected = f.actor.as_deref() == Some(a.as_str());
                            view! { <option value=a.clone() selected=selected>{a.clone()}</option> }
                        }).collect_view()}
                    </select>
                </label>
                <label for="audit-action">
                    "What"
                    <select name="action" id="audit-action">
                        <option value="">"Any change"</option>
                        {p.actions.iter().map(|(name, label)| {
                            let selected = f.action.as_deref() == Some(name.as_str());
                            view! { <option value=name.clone() selected=selected>{label.clone()}</option> }
                        }).collect_view()}
                    </select>
                </label>
                <button type="submit" class="primary">"Apply"</button>
            </form>
            {if empty {
                view! { <p class="muted" data-testid="audit-empty">"No changes match."</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap" tabindex="0">
                        <table class="data" data-testid="audit-table">
                            <thead><tr>
                                <th scope="col">"When (UTC)"</th><th scope="col">"Who"</th>
                                <th scope="col">"From"</th><th scope="col">"What"</th>
                                <th scope="col">"On"</th><th scope="col">"Before"</th>
                                <th scope="col">"After"</th>
                            </tr></thead>
                            <tbody>
                                {p.rows.into_iter().map(|r| {
                                    let action = r.action.clone();
                                    view! {
                                    <tr data-testid="audit-row" data-action=action>
                                        <td data-label="When (UTC)"><time datetime=r.at.clone()>{r.at.replace('T', " ").replace('Z', "")}</time></td>
                                        <td data-label="Who">{r.actor}</td>
                                        <td data-label="From">{r.client_ip.unwrap_or_else(|| "–".to_owned())}</td>
                                        <td data-label="What" title=r.action>{r.action_label}</td>
                                        <td data-label="On"><code>{r.target}</code></td>
                                        <td data-label="Before">{r.before.unwrap_or_else(|| "–".to_owned())}</td>
                                        <td data-label="After">{r.after.unwrap_or_else(|| "–".to_owned())}</td>
                                    </tr>
                                }}).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
            <nav class="pager" aria-label="Audit log pages">
                {prev.map(|href| view! { <a href=href rel="prev">"← Newer"</a> })}
                <span class="muted">{format!("Page {}", f.page + 1)}</span>
                {next.map(|href| view! { <a href=href rel="next">"Older →"</a> })}
            </nav>
        </section>
    }
}
