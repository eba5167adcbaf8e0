//! Settings' storage section: each project's share of the database and the housekeeping
//! policy, for every member. Server-rendered only: nothing here needs the browser.

use leptos::prelude::*;

use super::{error_view, loading};
use crate::api::storage::load_storage;
use crate::model::StorageView;

#[component]
pub fn StoragePanel() -> impl IntoView {
    let data = Resource::new(|| (), |_| load_storage());
    view! {
        <Suspense fallback=loading>
            {move || Suspend::new(async move {
                match data.await {
                    Ok(view) => storage(view).into_any(),
                    Err(err) => error_view(err),
                }
            })}
        </Suspense>
    }
}

fn storage(view: StorageView) -> impl IntoView {
    let StorageView {
        total,
        measured,
        own_policy,
        policy,
        projects,
    } = view;
    view! {
        <section class="card" aria-labelledby="storage-heading" data-testid="storage">
            <h2 id="storage-heading">"Storage"</h2>
            <p>"This account's data takes about " <strong data-testid="storage-total">{total}</strong> "."</p>
            {measured.map(|ago| view! {
                <p class="muted" data-testid="storage-measured">
                    "Sizes are measured in the background within a minute of a push; the oldest here is from " {ago} "."
                </p>
            })}
            <div class="table-wrap" tabindex="0">
                <table>
                    <thead>
                        <tr>
                            <th scope="col">"Project"</th>
                            <th scope="col">"Scans"</th>
                            <th scope="col">"Findings removed"</th>
                            <th scope="col">"Size"</th>
                        </tr>
                    </thead>
                    <tbody>
                        {projects.into_iter().map(|p| view! {
                            <tr data-testid="storage-row">
                                <th scope="row"><a href=format!("/projects/{}", p.project_id)>{p.label}</a></th>
                                <td data-label="Scans">{p.scans}</td>
                                <td data-label="Findings removed">{if p.scans_thinned == 0 { "none".to_owned() } else { super::count_of(p.scans_thinned, "scan", "scans") }}</td>
                                <td data-label="Size">{p.size}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
        </section>
        <section class="card" aria-labelledby="housekeeping-heading">
            <h2 id="housekeeping-heading">"Housekeeping"</h2>
            {match policy {
                Some(lines) => view! {
                    <p class="muted">{if own_policy { "This account has a policy of its own:" } else { "The installation's policy:" }}</p>
                    <ul data-testid="housekeeping-policy">
                        {lines.into_iter().map(|l| view! { <li>{l}</li> }).collect_view()}
                    </ul>
                }.into_any(),
                None => view! { <p>"Housekeeping is off: every scan keeps its findings."</p> }.into_any(),
            }}
        </section>
    }
}
