//! Settings → Frameworks: the account's custom frameworks with their controls and the rules
//! each maps, for every member; admins on a licence with the feature upload a YAML or JSON
//! file (refused with the API's messages, naming the field) and remove one. Server-rendered
//! with plain forms, like every Settings section; `public/dashboard.js` reads a chosen file
//! into the form (`data-file-into`).

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use super::{form_notice, loading};
use crate::api::frameworks::{load_frameworks, RemoveFramework, UploadFramework};
use crate::model::{CustomFrameworkView, FrameworksView};

#[component]
pub fn CustomFrameworksPanel() -> impl IntoView {
    let frameworks = Resource::new(|| (), |_| load_frameworks());
    view! {
        <Suspense fallback=loading>
            {move || Suspend::new(async move {
                match frameworks.await {
                    Ok(v) => panel(v).into_any(),
                    Err(err) => super::error_view(err),
                }
            })}
        </Suspense>
    }
}

fn panel(v: FrameworksView) -> AnyView {
    let may_change = v.is_admin && v.available;
    let refusal = (!v.available).then(|| {
        let tier = v.tier.clone().unwrap_or_else(|| "no".to_owned());
        view! {
            <p class="notice" role="note" data-testid="frameworks-tier">
                {format!(
                    "Custom frameworks are part of the {} tier and above; this license is on the {tier} tier.",
                    v.needed_tier
                )}
            </p>
        }
    });
    let empty = v.frameworks.is_empty();
    view! {
        <section class="card" aria-labelledby="frameworks-heading" data-testid="custom-frameworks">
            <h2 id="frameworks-heading">"Custom frameworks"</h2>
            <p class="muted small">
                "Your own control sets, each control mapped to rule ids your scans report. A control passes when every rule mapped to it passed; "
                "posture counts it as " <code>"custom:<id>"</code> " from the latest scan of each branch on. "
                "The same documents as " <code>"PUT /v1/frameworks/{id}"</code> " and " <code>"tidemark frameworks set"</code> "."
            </p>
            {refusal}
            {form_notice(UploadFramework::PATH, "Framework saved: the latest scans are judged by it.")}
            {form_notice(RemoveFramework::PATH, "Framework removed, with the posture kept for it.")}
            {empty.then(|| view! { <p class="muted" data-testid="no-frameworks">"No custom frameworks yet."</p> })}
            {(!empty).then(|| framework_table(&v.frameworks, may_change))}
            {v.frameworks.into_iter().map(controls).collect_view()}
            {may_change.then(upload_form)}
        </section>
    }
    .into_any()
}

fn framework_table(frameworks: &[CustomFrameworkView], may_change: bool) -> AnyView {
    view! {
        <div class="table-wrap" tabindex="0">
            <table data-testid="frameworks">
                <thead><tr>
                    <th scope="col">"Framework"</th><th scope="col">"Controls"</th>
                    <th scope="col">"Updated"</th><th scope="col">"By"</th>
                    {may_change.then(|| view! { <th scope="col"><span class="visually-hidden">"Actions"</span></th> })}
                </tr></thead>
                <tbody>
                    {frameworks.iter().map(|f| {
                        let id = f.id.clone();
                        view! {
                            <tr>
                                <td data-label="Framework">
                                    <a href=format!("#fw-{}", f.id)>{f.title.clone()}</a>
                                    " " <code class="small">{f.posture_name.clone()}</code>
                                </td>
                                <td data-label="Controls">{f.controls.len()}</td>
                                <td data-label="Updated">{super::utc_time(f.updated_at.clone())}</td>
                                <td data-label="By">{f.updated_by.clone()}</td>
                                {may_change.then(|| view! {
                                    <td>
                                        <form method="post" action=RemoveFramework::PATH>
                                            <input type="hidden" name="framework_id" value=id.clone()/>
                                            <button type="submit" class="link danger-text"
                                                aria-label=format!("Remove framework {id}")
                                                data-confirm=format!("Remove the framework {id}? Its posture goes with it; scans are kept.")
                                            >"Remove"</button>
                                        </form>
                                    </td>
                                })}
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

/// A framework's controls and the rules each maps, folded until opened.
fn controls(f: CustomFrameworkView) -> AnyView {
    let heading = format!("{} — {} controls", f.title, f.controls.len());
    view! {
        <details class="framework-controls" id=format!("fw-{}", f.id) data-testid="framework-controls">
            <summary>{heading}</summary>
            {f.description.map(|d| view! { <p class="muted small">{d}</p> })}
            <div class="table-wrap" tabindex="0">
                <table>
                    <thead><tr>
                        <th scope="col">"Control"</th><th scope="col">"Title"</th><th scope="col">"Rules"</th>
                    </tr></thead>
                    <tbody>
                        {f.controls.into_iter().map(|c| view! {
                            <tr>
                                <td data-label="Control"><code>{c.id}</code></td>
                                <td data-label="Title">{c.title}</td>
                                <td data-label="Rules">
                                    {c.rules.into_iter().map(|r| view! { <code class="rule">{r}</code>" " }).collect_view()}
                                </td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
        </details>
    }
    .into_any()
}

fn upload_form() -> AnyView {
    view! {
        <form method="post" action=UploadFramework::PATH class="stacked" data-keep="" data-testid="upload-framework">
            <h3>"Upload a framework"</h3>
            <label>"File (YAML or JSON, at most 256 KiB)"
                <input type="file" accept=".yaml,.yml,.json,application/json,application/yaml"
                    data-file-into="framework-document" data-file-name="framework-file-name"/>
            </label>
            <input type="hidden" name="file_name" id="framework-file-name"/>
            <label>"Id (when the document has none)"
                <input type="text" name="framework_id" maxlength="64" placeholder="acme-baseline"/>
            </label>
            <label>"Document"
                <textarea name="document" id="framework-document" rows="8" required
                    placeholder="id: acme-baseline\ntitle: Acme baseline\ncontrols:\n  - id: AC.1\n    title: No public buckets\n    rules: [cis-aws-2.0-2.1.4]"></textarea>
            </label>
            <button type="submit" class="primary">"Save framework"</button>
        </form>
    }
    .into_any()
}
