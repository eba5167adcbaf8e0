//! Settings' trusted publishers panel (admins): the CI identities that push keyless, a form to
//! add one, and Remove. Server-rendered with plain forms, like every Settings section.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use super::{form_notice, loading};
use crate::api::publishers::{load_publishers, AddPublisher, RemovePublisher};
use crate::model::PublisherRow;

/// Members do not see it.
#[component]
pub fn PublishersPanel() -> impl IntoView {
    let list = Resource::new(|| (), |_| load_publishers());
    view! {
        <Suspense fallback=loading>
            {move || Suspend::new(async move {
                match list.await {
                    Ok(v) => view! {
                        <section class="card" aria-labelledby="publishers-heading" data-testid="publishers">
                            <h2 id="publishers-heading">"Trusted publishers"</h2>
                            <p class="muted small">
                                "CI jobs these identities run push with no stored key: the job's own OpenID Connect token, requested with the audience "
                                <code data-testid="oidc-audience">{v.audience.clone()}</code>
                                ", is exchanged for a push token that lasts 15 minutes. Repositories are matched by their numeric ids as well as their name, so a repository created again under the same name is not trusted. This account's id is "
                                <code>{v.account_id.to_string()}</code>
                                " (TIDEMARK_ACCOUNT, needed only when another account trusts the same repository). See docs/ci.md."
                            </p>
                            {form_notice(AddPublisher::PATH, "Publisher added: its CI jobs can push without a key.")}
                            {form_notice(RemovePublisher::PATH, "Publisher removed: its push tokens stopped working.")}
                            {publisher_table(v.publishers.clone())}
                            {add_form()}
                        </section>
                    }
                    .into_any(),
                    Err(err) => super::error_view(err),
                }
            })}
        </Suspense>
    }
}

fn publisher_table(rows: Vec<PublisherRow>) -> AnyView {
    if rows.is_empty() {
        return view! { <p class="muted">"No trusted publishers yet: CI pushes need an API key."</p> }
            .into_any();
    }
    view! {
        <table class="data" data-testid="publisher-list">
            <thead><tr>
                <th scope="col">"CI"</th><th scope="col">"Repository"</th><th scope="col">"Workflow"</th>
                <th scope="col">"Only"</th><th scope="col">"Projects"</th><th scope="col">"Last used"</th>
                <th scope="col"></th>
            </tr></thead>
            <tbody>
                {rows.into_iter().map(|p| {
                    let only: Vec<String> = p.environment.iter().map(|e| format!("environment {e}"))
                        .chain(p.ref_pattern.iter().cloned())
                        .collect();
                    view! {
                        <tr data-testid="publisher">
                            <td data-label="CI">{p.provider.clone()}<br/><span class="muted small">{p.issuer.clone()}</span></td>
                            <td data-label="Repository">{p.repository.clone()}<br/>
                                <span class="muted small">{p.ids.clone().map_or_else(
                                    || "ids pinned by the first job".to_owned(),
                                    |ids| format!("ids {ids}"),
                                )}</span>
                            </td>
                            <td data-label="Workflow">{p.workflow.clone().unwrap_or_else(|| "–".to_owned())}</td>
                            <td data-label="Only">{if only.is_empty() { "any ref".to_owned() } else { only.join(", ") }}</td>
                            <td data-label="Projects">{p.project.clone().unwrap_or_else(|| "All".to_owned())}</td>
                            <td data-label="Last used">{super::utc_time_or(p.last_used_at.clone(), "never")}</td>
                            <td>
                                <form method="post" action=RemovePublisher::PATH>
                                    <input type="hidden" name="publisher_id" value=p.id.clone()/>
                                    <button type="submit" class="danger" data-confirm=
                                        "Stop trusting this CI identity? Its push tokens stop working at once."
                                    >"Remove"</button>
                                </form>
                            </td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

fn add_form() -> impl IntoView {
    // Open again when the server refused what was sent, so that it can be corrected.
    let refused = matches!(super::form_outcome(AddPublisher::PATH), Some(Err(_)));
    view! {
        <details class="add-publisher" open=refused>
            <summary>"Add a trusted publisher"</summary>
            <form method="post" action=AddPublisher::PATH class="stacked" data-keep="">
                <label>"CI"
                    <select name="provider">
                        <option value="github">"GitHub Actions"</option>
                        <option value="gitlab">"GitLab CI"</option>
                        <option value="custom">"Custom OpenID Connect issuer"</option>
                    </select>
                </label>
                <label>"Issuer (empty: github.com or gitlab.com; GitHub Enterprise Server: https://HOST/_services/token)"
                    <input type="url" name="issuer" placeholder="https://token.actions.githubusercontent.com"/>
                </label>
                <label>"Repository (owner/name, or the GitLab project path)"
                    <input type="text" name="repository" placeholder="acme/api"/>
                </label>
                <label>"Workflow file (GitHub: under .github/workflows; GitLab: the CI configuration path)"
                    <input type="text" name="workflow" placeholder="ci.yml"/>
                </label>
                <label>"Environment (optional)"<input type="text" name="environment"/></label>
                <label>"Ref pattern (optional)"<input type="text" name="ref_pattern" placeholder="refs/heads/main"/></label>
                <label>"Project label (empty: every project)"<input type="text" name="project"/></label>
                <details>
                    <summary>"Repository ids and custom issuers"</summary>
                    <label>"Owner id (GitLab: namespace id; empty: pinned by the first job)"<input type="text" name="owner_id" inputmode="numeric"/></label>
                    <label>"Repository id (GitLab: project id)"<input type="text" name="repository_id" inputmode="numeric"/></label>
                    <label>"Subject (custom issuer: the exact sub)"<input type="text" name="subject"/></label>
                </details>
                <button type="submit" class="primary">"Add publisher"</button>
            </form>
        </details>
    }
}
