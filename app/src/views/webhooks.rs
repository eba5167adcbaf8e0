//! Settings' webhooks panel (admins): endpoints with their events, a form to add one, the
//! signing secret shown once, and the delivery log with Redeliver. Server-rendered with plain
//! forms, like every Settings section (see `settings::SettingsPanel`).

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use super::{form_error, form_notice, loading};
use crate::api::webhooks::{
    load_webhooks, CreateWebhook, DeleteWebhook, RedeliverWebhook, RotateWebhookSecret,
    SendTestWebhook,
};
use crate::model::{DeliveryRow, ShownOnce, WebhookRow, WebhookSecretShown};

/// Members do not see it (endpoints and their log are for admins).
#[component]
pub fn WebhooksPanel() -> impl IntoView {
    let hooks = Resource::new(|| (), |_| load_webhooks());
    // The secret of the endpoint just made or given a new secret, on the page that answered.
    let shown_once = ShownOnce::of_this_request();
    let gone = matches!(shown_once, Some(ShownOnce::Gone));
    let shown = match shown_once {
        Some(ShownOnce::WebhookSecret(s)) => Some(s),
        _ => None,
    };
    view! {
        <Suspense fallback=loading>
            {move || {
                let shown = shown.clone();
                Suspend::new(async move {
                match hooks.await {
                    Ok(v) => view! {
                        <section class="card" aria-labelledby="webhooks-heading" data-testid="webhooks">
                            <h2 id="webhooks-heading">"Webhooks"</h2>
                            <p class="muted small">
                                "Tidemark POSTs a JSON event to each endpoint when it happens, signed in the "
                                <code>"Tidemark-Signature"</code>
                                " header with the endpoint's secret (the documentation shows how to check it). "
                                "Failed deliveries are retried with growing pauses for a day."
                            </p>
                            {shown.map(secret_panel)}
                            {gone.then(|| super::shown_already("The endpoint's signing secret"))}
                            {form_error(CreateWebhook::PATH)}
                            {form_error(RotateWebhookSecret::PATH)}
                            {form_notice(DeleteWebhook::PATH, "Endpoint deleted, with its delivery log.")}
                            {form_notice(SendTestWebhook::PATH, "Test event queued: it shows in the log below.")}
                            {form_notice(RedeliverWebhook::PATH, "Queued for delivery again.")}
                            {endpoint_table(v.endpoints.clone())}
                            {add_form(v.projects.clone())}
                            {delivery_log(v.deliveries.clone())}
                        </section>
                    }
                    .into_any(),
                    // Members: nothing to show.
                    Err(err) => super::error_view(err),
                }
            })}}
        </Suspense>
    }
}

fn secret_panel(s: WebhookSecretShown) -> impl IntoView {
    view! {
        <div class="notice new-key" role="alert" data-testid="webhook-secret-panel">
            <p><strong>"Signing secret"</strong>" — shown once. Give it to the receiver, which uses it to check each delivery's signature."</p>
            <p><code data-testid="webhook-secret">{s.secret}</code></p>
        </div>
    }
}

fn endpoint_table(endpoints: Vec<WebhookRow>) -> AnyView {
    if endpoints.is_empty() {
        return view! { <p class="muted">"No endpoints yet."</p> }.into_any();
    }
    view! {
        <div class="table-wrap" tabindex="0"><table class="data" data-testid="webhook-endpoints">
            <thead><tr>
                <th scope="col">"Endpoint"</th><th scope="col">"Projects"</th>
                <th scope="col">"Events"</th><th scope="col">"Format"</th><th scope="col"></th>
            </tr></thead>
            <tbody>
                {endpoints.into_iter().map(|w| {
                    let (id_test, id_rotate, id_delete) = (w.id.clone(), w.id.clone(), w.id.clone());
                    view! {
                        <tr data-testid="webhook-endpoint">
                            <td data-label="Endpoint"><code>{w.url.clone()}</code></td>
                            <td data-label="Projects">{w.project_label.clone().unwrap_or_else(|| "All".to_owned())}</td>
                            <td data-label="Events">{w.events.join(", ")}</td>
                            <td data-label="Format">{w.format.clone()}</td>
                            <td class="row-form">
                                <form method="post" action=SendTestWebhook::PATH>
                                    <input type="hidden" name="webhook_id" value=id_test/>
                                    <button type="submit" class="secondary">"Send a test event"</button>
                                </form>
                                <form method="post" action=RotateWebhookSecret::PATH>
                                    {super::once_field()}
                                    <input type="hidden" name="webhook_id" value=id_rotate/>
                                    <button type="submit" class="secondary" data-confirm=
                                        "Replace this endpoint's signing secret? Deliveries are signed with the new one at once."
                                    >"New secret"</button>
                                </form>
                                <form method="post" action=DeleteWebhook::PATH>
                                    <input type="hidden" name="webhook_id" value=id_delete/>
                                    <button type="submit" class="danger" data-confirm=
                                        "Delete this endpoint and its delivery log?"
                                    >"Delete"</button>
                                </form>
                            </td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table></div>
    }
    .into_any()
}

fn add_form(projects: Vec<(tidemark_wire::ids::ProjectId, String)>) -> impl IntoView {
    // Open again when the server refused what was sent, so that it can be corrected.
    let refused = matches!(super::form_outcome(CreateWebhook::PATH), Some(Err(_)));
    view! {
        <details class="add-webhook" open=refused>
            <summary>"Add an endpoint"</summary>
            <form method="post" action=CreateWebhook::PATH class="stacked" data-keep="">
                {super::once_field()}
                <label>"URL"<input type="url" name="url" required placeholder="https://example.com/tidemark-events"/></label>
                <label>"Projects"
                    <select name="project_id">
                        <option value="">"All projects"</option>
                        {projects.into_iter().map(|(id, label)| view! { <option value=id.to_string()>{label}</option> }).collect_view()}
                    </select>
                </label>
                <label>"Format"
                    <select name="format">
                        <option value="tidemark">"Tidemark JSON (signed)"</option>
                        <option value="slack">"Slack-compatible text"</option>
                    </select>
                </label>
                <fieldset>
                    <legend>"Events"</legend>
                    <label><input type="checkbox" name="scan_pushed" value="true" checked/>" scan.pushed"</label>
                    <label><input type="checkbox" name="gate_failed" value="true"/>" gate.failed"</label>
                    <label><input type="checkbox" name="score_regressed" value="true"/>" score.regressed"</label>
                    <label><input type="checkbox" name="pr_gate_failed" value="true"/>" pull_request.gate_failed"</label>
                    <label><input type="checkbox" name="posture_drifted" value="true"/>" posture.drifted"</label>
                    <label><input type="checkbox" name="keys_rotated" value="true"/>" keys.rotated"</label>
                </fieldset>
                <button type="submit" class="primary">"Add endpoint"</button>
            </form>
        </details>
    }
}

fn delivery_log(rows: Vec<DeliveryRow>) -> impl IntoView {
    let table = if rows.is_empty() {
        view! { <p class="muted">"No deliveries yet."</p> }.into_any()
    } else {
        view! {
            <div class="table-wrap" tabindex="0"><table class="data" data-testid="webhook-deliveries">
                <thead><tr>
                    <th scope="col">"Time"</th><th scope="col">"Event"</th><th scope="col">"Endpoint"</th>
                    <th scope="col">"Status"</th><th scope="col">"Response"</th>
                    <th scope="col" class="num">"Latency"</th><th scope="col" class="num">"Attempts"</th>
                    <th scope="col"></th>
                </tr></thead>
                <tbody>
                    {rows.into_iter().map(|d| {
                        let response = match (d.status_code, &d.error) {
                            (Some(code), _) => code.to_string(),
                            (None, Some(_)) => "no answer".to_owned(),
                            (None, None) => "–".to_owned(),
                        };
                        let state = match (d.state.as_str(), &d.next_attempt_at) {
                            ("pending", Some(at)) if d.attempts > 0 => format!("retrying at {at}"),
                            ("pending", _) => "pending".to_owned(),
                            ("failed", _) => "gave up".to_owned(),
                            (other, _) => other.to_owned(),
                        };
                        let class = format!("delivery {}", d.state);
                        view! {
                            <tr data-testid="webhook-delivery" data-state=d.state.clone()>
                                <td data-label="Time">{super::utc_time(d.created_at.clone())}</td>
                                <td data-label="Event">{d.event.clone()}</td>
                                <td data-label="Endpoint"><code>{d.url.clone()}</code></td>
                                <td data-label="Status"><span class=class title=d.error.clone().unwrap_or_default()>{state}</span></td>
                                <td data-label="Response">{response}</td>
                                <td data-label="Latency" class="num">{d.latency_ms.map(|ms| format!("{ms} ms")).unwrap_or_default()}</td>
                                <td data-label="Attempts" class="num">{d.attempts}</td>
                                <td>
                                    <form method="post" action=RedeliverWebhook::PATH>
                                        <input type="hidden" name="event_id" value=d.event_id.clone()/>
                                        <input type="hidden" name="webhook_id" value=d.webhook_id.clone()/>
                                        <button type="submit" class="link">"Redeliver"</button>
                                    </form>
                                </td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table></div>
        }
        .into_any()
    };
    view! {
        <div class="log-head">
            <h3>"Recent deliveries"</h3>
            // This page again: the log as it is now.
            <form method="get" action="/settings/webhooks"><button type="submit" class="secondary">"Refresh"</button></form>
        </div>
        {table}
    }
}
