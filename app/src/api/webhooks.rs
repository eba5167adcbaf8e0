//! Webhooks in Settings (admins only): endpoints, their signing secrets (shown once), the
//! delivery log, Redeliver and "Send a test event".
// `create_webhook` takes one argument per field of its form (each event is a checkbox), so
// the form posts as it is, with or without the WASM; the server macro's client half, too.
#![allow(clippy::too_many_arguments)]

use leptos::prelude::*;

use crate::error::DashboardError;
use crate::model::{WebhookSecretShown, WebhooksView};

/// Deliveries the log shows.
pub const LOG_ROWS: i64 = 50;

/// What only the server can do for these functions: seal secrets under its master key, and
/// wake its webhook sender. `app` cannot depend on the server, so the server provides this
/// through the Leptos context.
#[cfg(feature = "ssr")]
pub trait WebhookOutbox: Send + Sync {
    fn seal(&self, plaintext: &[u8]) -> String;
    /// A delivery is due now: send it without waiting for the next poll.
    fn wake(&self);
}

#[cfg(feature = "ssr")]
#[derive(Clone)]
pub struct WebhookOutboxHandle(pub std::sync::Arc<dyn WebhookOutbox>);

#[cfg(feature = "ssr")]
fn outbox() -> Result<WebhookOutboxHandle, DashboardError> {
    use_context::<WebhookOutboxHandle>().map_or_else(
        || crate::error::unavailable("no webhook outbox in context"),
        Ok,
    )
}

#[cfg(feature = "ssr")]
fn well_formed_webhook(id: &str) -> Result<(), DashboardError> {
    if tidemark_domain::ids::is_webhook_id(id) {
        Ok(())
    } else {
        Err(DashboardError::NotFound)
    }
}

#[server(endpoint = "webhooks")]
pub async fn load_webhooks() -> Result<WebhooksView, DashboardError> {
    use super::ssr::*;
    use crate::model::{DeliveryRow, WebhookRow};
    use crate::time::format_time;
    let viewer = crate::auth::require_admin()?;
    let db = db();
    let account = &viewer.account_id;
    let endpoints = or_unavailable(tidemark_store::webhooks::list_webhooks(&db, account).await)?;
    let deliveries =
        or_unavailable(tidemark_store::webhooks::delivery_log(&db, account, LOG_ROWS).await)?;
    let projects = or_unavailable(tidemark_store::badges::account_badges(&db, account).await)?;
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
    use tidemark_domain::webhook::{EventSet, PayloadFormat, WebhookSecret, WebhookUrl};
    use tidemark_store::webhooks::{CreateOutcome, NewWebhook};
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
    let outbox = outbox()?;
    let secret = WebhookSecret::generate();
    let hook = NewWebhook {
        id: tidemark_domain::ids::new_webhook_id(),
        account_id: viewer.account_id.clone(),
        project_id,
        url_sealed: outbox.0.seal(url.as_str().as_bytes()),
        url_display: url.display(),
        format,
        events,
        secret_sealed: outbox.0.seal(secret.expose().as_bytes()),
        now: tidemark_domain::now_millis(),
    };
    let webhook_id = hook.id.clone();
    let audit = viewer.audit();
    let created = db()
        .detached(
            |db| async move { tidemark_store::webhooks::create_webhook(&db, &hook, &audit).await },
        )
        .await;
    match or_unavailable(created)? {
        CreateOutcome::Created => Ok(WebhookSecretShown {
            webhook_id,
            secret: secret.expose().to_owned(),
        }),
        CreateOutcome::NoSuchProject => not_found(),
        CreateOutcome::TooMany => Err(DashboardError::Conflict(format!(
            "An account can have {} webhook endpoints; remove one first.",
            tidemark_domain::webhook::MAX_ENDPOINTS
        ))),
    }
}

/// Gives the endpoint a new signing secret (admins only), shown once; the old one stops
/// signing at once.
#[server(endpoint = "rotate_webhook_secret")]
pub async fn rotate_webhook_secret(
    webhook_id: String,
) -> Result<WebhookSecretShown, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_admin()?;
    well_formed_webhook(&webhook_id)?;
    let secret = tidemark_domain::webhook::WebhookSecret::generate();
    let sealed = outbox()?.0.seal(secret.expose().as_bytes());
    let (account, id) = (viewer.account_id.clone(), webhook_id.clone());
    let audit = viewer.audit();
    let replaced = db()
        .detached(|db| async move {
            tidemark_store::webhooks::replace_secret(&db, &account, &id, &sealed, &audit).await
        })
        .await;
    match or_unavailable(replaced)? {
        true => Ok(WebhookSecretShown {
            webhook_id,
            secret: secret.expose().to_owned(),
        }),
        false => not_found(),
    }
}

/// Removes the endpoint and its delivery log (admins only).
#[server(endpoint = "delete_webhook")]
pub async fn delete_webhook(webhook_id: String) -> Result<(), DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_admin()?;
    well_formed_webhook(&webhook_id)?;
    let (account, audit) = (viewer.account_id.clone(), viewer.audit());
    let deleted = db()
        .detached(|db| async move {
            tidemark_store::webhooks::delete_webhook(&db, &account, &webhook_id, &audit).await
        })
        .await;
    match or_unavailable(deleted)? {
        true => {
            back_to_form("delete_webhook");
            Ok(())
        }
        false => not_found(),
    }
}

/// Sends the endpoint a `webhook.test` event now (admins only).
#[server(endpoint = "send_test_webhook")]
pub async fn send_test_webhook(webhook_id: String) -> Result<(), DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_admin()?;
    well_formed_webhook(&webhook_id)?;
    let outbox = outbox()?;
    let account = viewer.account_id.clone();
    let event_id = tidemark_domain::ids::new_event_id();
    let now = tidemark_domain::now_millis();
    let queued = db()
        .detached(|db| async move {
            tidemark_store::webhooks::enqueue_test_event(&db, &account, &webhook_id, &event_id, now)
                .await
        })
        .await;
    match or_unavailable(queued)? {
        true => {
            outbox.0.wake();
            back_to_form("send_test_webhook");
            Ok(())
        }
        false => not_found(),
    }
}

/// Sends a delivery again now, with a fresh day of retries (admins only).
#[server(endpoint = "redeliver_webhook")]
pub async fn redeliver_webhook(event_id: String, webhook_id: String) -> Result<(), DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_admin()?;
    well_formed_webhook(&webhook_id)?;
    if !tidemark_domain::ids::is_event_id(&event_id) {
        return not_found();
    }
    let outbox = outbox()?;
    let account = viewer.account_id.clone();
    let now = tidemark_domain::now_millis();
    let queued = db()
        .detached(|db| async move {
            tidemark_store::webhooks::redeliver(&db, &account, &event_id, &webhook_id, now).await
        })
        .await;
    match or_unavailable(queued)? {
        true => {
            outbox.0.wake();
            back_to_form("redeliver_webhook");
            Ok(())
        }
        false => not_found(),
    }
}
