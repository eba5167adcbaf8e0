//! `/admin/v1/events` and `/admin/v1/webhooks…`: what happened to licences, and the
//! endpoints (admin only) that hear it as signed webhooks, each licence's events in order.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::Json;
use serde::Deserialize;
use tidemark_domain::license_events::{parse_subscription, LicenseEvent};
use tidemark_domain::to_rfc3339;
use tidemark_domain::vendor::Permission;
use tidemark_domain::webhook::WebhookUrl;
use tidemark_services::vendor_events::{self, EventFilter, VendorWebhookRow};
use tidemark_services::ServiceError;
use tidemark_wire::admin::{
    CreateVendorWebhookRequest, CreatedVendorWebhook, VendorEvent, VendorEventPage, VendorWebhook,
    VendorWebhookList,
};
use tidemark_wire::ErrorBody;

use super::accounts::{cursor_of, invalid, limit_of, query};
use super::caller::caller;
use crate::http::body::read_json;
use crate::http::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct EventQuery {
    /// Only this licence's events (`lcn_…`).
    #[param(max_length = 64)]
    license_id: Option<String>,
    /// One event type (`license.suspended`).
    #[serde(rename = "type")]
    #[param(rename = "type", max_length = 64)]
    event_type: Option<String>,
    /// `next_cursor` of the previous page.
    #[param(max_length = 160)]
    cursor: Option<String>,
    /// 1 to 200; default 50.
    #[param(minimum = 1, maximum = 200)]
    limit: Option<i64>,
}

/// Licence events
///
/// Newest first, a page at a time; each exactly as the vendor's webhook endpoints receive it.
#[utoipa::path(
    get,
    path = "/admin/v1/events",
    tag = "events",
    security(("vendor_token" = [])),
    params(EventQuery),
    responses(
        (status = 200, description = "A page of events", body = VendorEventPage),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: an unknown parameter or type, a bad limit, or a cursor this API did not return", body = ErrorBody),
        (status = 429, description = "`rate_limit_exceeded`", body = ErrorBody),
    )
)]
pub async fn list_events(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<VendorEventPage>, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Read])?;
    let q: EventQuery = query(&uri)?;
    let limit = limit_of(q.limit)?;
    let cursor = cursor_of(q.cursor.as_deref(), "evt_")?;
    let event = q
        .event_type
        .as_deref()
        .map(|t| {
            LicenseEvent::parse(t).ok_or_else(|| {
                let known: Vec<&str> = LicenseEvent::ALL.iter().map(|e| e.as_str()).collect();
                invalid(format!("Unknown type {t:?}; known: {}.", known.join(", ")))
            })
        })
        .transpose()?;
    if q.license_id.as_ref().is_some_and(|l| l.len() > 64) {
        return Err(invalid("license_id must be lcn_…"));
    }
    let filter = EventFilter {
        license_id: q.license_id,
        event,
    };
    let page = vendor_events::page_events(&state.db, &filter, cursor.as_ref(), limit).await?;
    let events = page
        .events
        .iter()
        .map(|e| serde_json::from_str::<VendorEvent>(&e.body))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ApiError::Internal(anyhow::anyhow!("a stored licence event: {e}")))?;
    Ok(Json(VendorEventPage {
        events,
        next_cursor: page.next.map(|k| k.encode()),
    }))
}

fn webhook_view(w: &VendorWebhookRow) -> VendorWebhook {
    VendorWebhook {
        id: w.id.clone(),
        url: w.url_display.clone(),
        events: w.events.iter().map(|e| e.as_str().to_owned()).collect(),
        created_at: to_rfc3339(w.created_at),
        pending: w.pending,
        failed: w.failed,
    }
}

/// List vendor webhook endpoints
#[utoipa::path(
    get,
    path = "/admin/v1/webhooks",
    tag = "events",
    security(("vendor_token" = [])),
    responses(
        (status = 200, description = "The endpoints", body = VendorWebhookList),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 403, description = "`insufficient_role`: admin only", body = ErrorBody),
    )
)]
pub async fn list_webhooks(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Json<VendorWebhookList>, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Administer])?;
    let hooks = vendor_events::list_webhooks(&state.db).await?;
    Ok(Json(VendorWebhookList {
        webhooks: hooks.iter().map(webhook_view).collect(),
    }))
}

/// Add a vendor webhook endpoint
///
/// Its signing secret is in this answer only. From now on the endpoint receives the events
/// it names (default all), each licence's in order, signed with
/// `Tidemark-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, retried for a
/// day; `Tidemark-Event-Id` is the same on every retry.
#[utoipa::path(
    post,
    path = "/admin/v1/webhooks",
    tag = "events",
    security(("vendor_token" = [])),
    request_body(content = CreateVendorWebhookRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "The endpoint and its secret (shown here only)", body = CreatedVendorWebhook),
        (status = 400, description = "`invalid_json`", body = ErrorBody),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 403, description = "`insufficient_role`: admin only", body = ErrorBody),
        (status = 409, description = "`conflict`: the vendor has 10 endpoints already", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: an unknown field (named), a URL that may not receive webhooks, an unknown event", body = ErrorBody),
    )
)]
pub async fn create_webhook(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<CreatedVendorWebhook>), ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Administer])?;
    let request: CreateVendorWebhookRequest = read_json(&headers, body, 16 * 1024).await?;
    let url = WebhookUrl::parse(&request.url, state.config.webhooks.allow_private)
        .map_err(|e| invalid(format!("url: {e}")))?;
    let events = parse_subscription(request.events.as_deref()).map_err(invalid)?;
    let (row, secret) =
        vendor_events::create_webhook(&state.db, &state.webhook_secrets, &url, events, &who.audit)
            .await
            .map_err(|err| match err {
                ServiceError::Conflict(text) => ApiError::Conflict(text),
                other => other.into(),
            })?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedVendorWebhook {
            webhook: webhook_view(&row),
            secret: secret.expose().to_owned(),
        }),
    ))
}

/// Remove a vendor webhook endpoint
///
/// What was still to be sent to it is dropped.
#[utoipa::path(
    delete,
    path = "/admin/v1/webhooks/{webhook_id}",
    tag = "events",
    security(("vendor_token" = [])),
    params(("webhook_id" = String, Path, description = "`vwh_…`")),
    responses(
        (status = 204, description = "Removed"),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 403, description = "`insufficient_role`: admin only", body = ErrorBody),
        (status = 404, description = "`not_found`: no such endpoint", body = ErrorBody),
    )
)]
pub async fn delete_webhook(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Administer])?;
    vendor_events::delete_webhook(&state.db, &id, &who.audit)
        .await
        .map_err(|err| match err {
            ServiceError::NotFound => ApiError::Missing(format!("No endpoint {id:?}.")),
            other => other.into(),
        })?;
    Ok(StatusCode::NO_CONTENT)
}
