//! Webhooks in Settings (admins only): endpoints, their signing secrets (shown once), the
//! delivery log, Redeliver and "Send a test event".
// `create_webhook` takes one argument per field of its form (each event is a checkbox), so
// the form posts as it is, with or without the WASM; the server macro's client half, too.
#![allow(clippy::too_many_arguments)]

use leptos::prelude::*;

use crate::error::DashboardError;
use crate::model::{WebhookSecretShown, WebhooksView};

#[cfg(feature = "ssr")]
fn services() -> tidemark_services::Services {
    expect_context::<tidemark_services::Services>()
}

#[cfg(feature = "ssr")]
fn shown(s: tidemark_services::webhooks::SecretShown) -> WebhookSecretShown {
    WebhookSecretShown {
        webhook_id: s.webhook_id,
        secret: s.secret.expose().to_owned(),
    }
}

#[server(endpoint = "webhooks")]
pub async fn load_webhooks() -> Result<WebhooksView, DashboardError> {
    use crate::model::{DeliveryRow, WebhookRow};
    use crate::time::format_time;
    let viewer = crate::auth::require_admin()?;
    let overview = match services().webhook_overview(&viewer.account_id).await {
        Ok(overview) => overview,
        Err(e) => return crate::error::refused(e),
    };
    let (endpoints, deliveries, projects) =
        (overview.endpoints, overview.deliveries, overview.projects);
    Ok(WebhooksView {
        endpoints: endpoints
            .into_iter()
            .map(|w| WebhookRow {
                id: w.id,
                url: w.url_display,
                project_label: w.project_id.map(|_| w.project_label.unwrap_or_default()),
                format: w.format.as_str().to_owned(),
                events: w
                    .events
                    .events()
                    .iter()
                    .map(|e| e.as_str().to_owned())
                    .collect(),
                created_at: format_time(w.created_at),
                secret_rotated_at: w.secret_rotated_at.map(format_time),
            })
            .collect(),
        deliveries: deliveries
            .into_iter()
            .map(|d| DeliveryRow {
                event_id: d.event_id,
                webhook_id: d.webhook_id,
                url: d.url_display,
                event: d.event,
                created_at: format_time(d.created_at),
                state: d.state,
                attempts: d.attempts,
                status_code: d.last_status,
                latency_ms: d.last_latency_ms,
                error: d.last_error,
                next_attempt_at: d.next_attempt_at.map(format_time),
            })
            .collect(),
        projects: projects
            .into_iter()
            .map(|p| (p.project_id, p.label))
            .collect(),
    })
}

/// Adds an endpoint (admins only) and shows its signing secret once.
#[server(endpoint = "create_webhook")]
pub async fn create_webhook(
    url: String,
    #[server(default)] project_id: String,
    #[server(default)] format: String,
    #[server(default)] scan_pushed: bool,
    #[server(default)] gate_failed: bool,
    #[server(default)] score_regressed: bool,
    #[server(default)] pr_gate_failed: bool,
    #[server(default)] posture_drifted: bool,
    #[server(default)] keys_rotated: bool,
) -> Result<WebhookSecretShown, DashboardError> {
    use super::ssr::*;
    use tidemark_domain::webhook::{EventSet, PayloadFormat, WebhookUrl};
    let viewer = crate::auth::require_admin()?;
    let config = expect_context::<crate::DashboardConfig>();
    let invalid =
        |e: tidemark_domain::webhook::WebhookError| DashboardError::Invalid(e.to_string());
    let url = WebhookUrl::parse(&url, config.webhook_allow_private).map_err(invalid)?;
    let format = PayloadFormat::parse(&format).map_err(invalid)?;
    let chosen = [
        (scan_pushed, "scan.pushed"),
        (gate_failed, "gate.failed"),
        (score_regressed, "score.regressed"),
        (pr_gate_failed, "pull_request.gate_failed"),
        (posture_drifted, "posture.drifted"),
        (keys_rotated, "keys.rotated"),
    ];
    let events = EventSet::parse(chosen.iter().filter(|(on, _)| *on).map(|(_, name)| *name))
        .map_err(invalid)?;
    let project_id = match project_id.trim() {
        "" => None,
        id => Some(parse_project_id(id)?),
    };
    let endpoint = tidemark_services::webhooks::NewEndpoint {
        url,
        project_id,
        format,
        events,
    };
    services()
        .create_webhook(&viewer.account_id, endpoint, &viewer.audit())
        .await
        .map(shown)
        .or_else(crate::error::refused)
}

/// Gives the endpoint a new signing secret (admins only), shown once; the old one stops
/// signing at once.
#[server(endpoint = "rotate_webhook_secret")]
pub async fn rotate_webhook_secret(
    webhook_id: String,
) -> Result<WebhookSecretShown, DashboardError> {
    let viewer = crate::auth::require_admin()?;
    services()
        .rotate_webhook_secret(&viewer.account_id, &webhook_id, &viewer.audit())
        .await
        .map(shown)
        .or_else(crate::error::refused)
}

/// Removes the endpoint and its delivery log (admins only).
#[server(endpoint = "delete_webhook")]
pub async fn delete_webhook(webhook_id: String) -> Result<(), DashboardError> {
    let viewer = crate::auth::require_admin()?;
    services()
        .delete_webhook(&viewer.account_id, &webhook_id, &viewer.audit())
        .await
        .inspect(|_| super::ssr::back_to_form("delete_webhook"))
        .or_else(crate::error::refused)
}

/// Sends the endpoint a `webhook.test` event now (admins only).
#[server(endpoint = "send_test_webhook")]
pub async fn send_test_webhook(webhook_id: String) -> Result<(), DashboardError> {
    let viewer = crate::auth::require_admin()?;
    services()
        .send_test_webhook(&viewer.account_id, &webhook_id)
        .await
        .inspect(|_| super::ssr::back_to_form("send_test_webhook"))
        .or_else(crate::error::refused)
}

/// Sends a delivery again now, with a fresh day of retries (admins only).
#[server(endpoint = "redeliver_webhook")]
pub async fn redeliver_webhook(event_id: String, webhook_id: String) -> Result<(), DashboardError> {
    let viewer = crate::auth::require_admin()?;
    services()
        .redeliver_webhook(&viewer.account_id, &event_id, &webhook_id)
        .await
        .inspect(|_| super::ssr::back_to_form("redeliver_webhook"))
        .or_else(crate::error::refused)
}
