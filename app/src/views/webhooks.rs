//! Settings' webhooks panel (admins): endpoints with their events, a form to add one, the
//! signing secret shown once, and the delivery log with Redeliver.

use leptos::prelude::*;

use super::{action_error, confirm_first, loading};
use crate::api::webhooks::{
    load_webhooks, CreateWebhook, DeleteWebhook, RedeliverWebhook, RotateWebhookSecret,
    SendTestWebhook,
};
use crate::error::DashboardError;
use crate::model::{DeliveryRow, WebhookRow, WebhookSecretShown};

/// Its own island: adding an endpoint or redelivering refreshes only this panel. Members
/// do not see it (endpoints and their log are for admins).
#[cfg_attr(feature = "hydrate", island(lazy))]
#[cfg_attr(not(feature = "hydrate"), island)]
pub fn WebhooksPanel() -> impl IntoView {
    let create = ServerAction::<CreateWebhook>::new();
    let rotate = ServerAction::<RotateWebhookSecret>::new();
    let delete = ServerAction::<DeleteWebhook>::new();
    let test = ServerAction::<SendTestWebhook>::new();
    let redeliver = ServerAction::<RedeliverWebhook>::new();
    let (refreshed, refresh) = signal(0u32);
    let hooks = Resource::new(
        move || {
            (
                create.version().get(),
                rotate.version().get(),
                delete.version().get(),
                test.version().get(),
                redeliver.version().get(),
                refreshed.get(),
            )
        },
        |_| load_webhooks(),
    );
    let actions = Actions {
        rotate,
        delete,
        test,
    };
    let form = NodeRef::<leptos::html::Form>::new();
    super::settings::clear_after_success(create, form);
    // The secret from the latest create or rotate, until another action runs.
    let shown = move || {
        let from = |v: Option<Result<WebhookSecretShown, DashboardError>>| v.and_then(Result::ok);
        from(rotate.value().get()).or_else(|| from(create.value().get()))
    };
    view! {
        <Suspense fallback=loading>
            {move || Suspend::new(async move {
                match hooks.await {
                    Ok(v) => view! {
                        <section class="card" aria-labelledby="webhooks-heading" data-testid="webhooks">
                            <h2 id="webhooks-heading">"Webhooks"</h2>
                            <p class="muted small">
                                "Tidemark POSTs a JSON event to each endpoint when it happens, signed in the "
                                <code>"Tidemark-Signature"</code>
                                " header with the endpoint's secret (the README shows how to check it). "
                                "Failed deliveries are retried with growing pauses for a day."
                            </p>
                            {move || shown().map(secret_panel)}
                            {endpoint_table(v.endpoints.clone(), actions)}
                            {add_form(v.projects.clone(), create, form)}
                            {delivery_log(v.deliveries.clone(), redeliver, refresh)}
                        </section>
                    }
                    .into_any(),
                    // Members: nothing to show.
                    Err(err) => super::error_view(err),
                }
            })}
        </Suspense>
        {action_error(create)}
        {action_error(rotate)}
        {action_error(delete)}
        {action_error(test)}
        {action_error(redeliver)}
    }
}

#[derive(Clone, Copy)]
struct Actions {
    rotate: ServerAction<RotateWebhookSecret>,
    delete: ServerAction<DeleteWebhook>,
    test: ServerAction<SendTestWebhook>,
}

fn secret_panel(s: WebhookSecretShown) -> impl IntoView {
    view! {
        <div class="notice new-key" role="alert" data-testid="webhook-secret-panel">
            <p><strong>"Signing secret"</strong>" — shown once. Give it to the receiver, which uses it to check each delivery's signature."</p>
            <p><code data-testid="webhook-secret">{s.secret}</code></p>
        </div>
    }
}

fn endpoint_table(endpoints: Vec<WebhookRow>, a: Actions) -> AnyView {
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
                            <td><code>{w.url.clone()}</code></td>
                            <td>{w.project_label.clone().unwrap_or_else(|| "All".to_owned())}</td>
                            <td>{w.events.join(", ")}</td>
                            <td>{w.format.clone()}</td>
                            <td class="row-form">
                                <ActionForm action=a.test>
                                    <input type="hidden" name="webhook_id" value=id_test/>
                                    <button type="submit" class="secondary">"Send a test event"</button>
                                </ActionForm>
                                <ActionForm action=a.rotate>
                                    <input type="hidden" name="webhook_id" value=id_rotate/>
                                    <button type="submit" class="secondary" on:click=confirm_first(
                                        "Replace this endpoint's signing secret? Deliveries are signed with the new one at once."
                                    )>"New secret"</button>
                                </ActionForm>
                                <ActionForm action=a.delete>
                                    <input type="hidden" name="webhook_id" value=id_delete/>
                                    <button type="submit" class="danger" on:click=confirm_first(
                                        "Delete this endpoint and its delivery log?"
                                    )>"Delete"</button>
                                </ActionForm>
                            </td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table></div>
    }
    .into_any()
}

fn add_form(
    projects: Vec<(String, String)>,
    create: ServerAction<CreateWebhook>,
    form: NodeRef<leptos::html::Form>,
) -> impl IntoView {
    view! {
        <details class="add-webhook">
            <summary>"Add an endpoint"</summary>
            <ActionForm action=create node_ref=form attr:class="stacked">
                <label>"URL"<input type="url" name="url" required placeholder="https://example.com/tidemark-events"/></label>
                <label>"Projects"
                    <select name="project_id">
                        <option value="">"All projects"</option>
                        {projects.into_iter().map(|(id, label)| view! { <option value=id>{label}</option> }).collect_view()}
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
                    <label><input type="checkbox" name="keys_rotated" value="true"/>" keys.rotated"</label>
                </fieldset>
                <button type="submit" class="primary">"Add endpoint"</button>
            </ActionForm>
        </details>
    }
}

fn delivery_log(
    rows: Vec<DeliveryRow>,
    redeliver: ServerAction<RedeliverWebhook>,
    refresh: WriteSignal<u32>,
) -> impl IntoView {
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
                                <td>{d.created_at.clone()}</td>
                                <td>{d.event.clone()}</td>
                                <td><code>{d.url.clone()}</code></td>
                                <td><span class=class title=d.error.clone().unwrap_or_default()>{state}</span></td>
                                <td>{response}</td>
                                <td class="num">{d.latency_ms.map(|ms| format!("{ms} ms")).unwrap_or_default()}</td>
                                <td class="num">{d.attempts}</td>
                                <td>
                                    <ActionForm action=redeliver>
                                        <input type="hidden" name="event_id" value=d.event_id.clone()/>
                                        <input type="hidden" name="webhook_id" value=d.webhook_id.clone()/>
                                        <button type="submit" class="link">"Redeliver"</button>
                                    </ActionForm>
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
            <button type="button" class="secondary" on:click=move |_| refresh.update(|n| *n += 1)>"Refresh"</button>
        </div>
        {table}
    }
}
