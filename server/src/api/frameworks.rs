//! `/v1/frameworks…`: an account's custom frameworks (issue 47), its own control sets mapped to
//! rule ids of scanned frameworks. Setting one needs a licence with `custom_frameworks` and
//! the API key; reading and removing one need only a dashboard licence, so an account that
//! moved to a lower tier can still see and remove what it set.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use tidemark_domain::frameworks::{Format, ValidFramework, MAX_BYTES};
use tidemark_domain::{now_millis, to_rfc3339};
use tidemark_services::frameworks::{self, StoredFramework};
use tidemark_services::ServiceError;
use tidemark_store::licenses::KeyOwner;
use tidemark_wire::frameworks::{CustomFramework, FrameworkDocument, FrameworkList, FrameworkSet};
use tidemark_wire::{ErrorBody, Feature};

use super::extract::{authenticate, ensure_dashboard_license, json_error, read_body};
use super::findings::writer_audit;
use crate::http::error::ApiError;
use crate::state::AppState;

fn view(stored: StoredFramework) -> CustomFramework {
    let posture_name = stored.framework.posture_name();
    let document = stored.framework.document().clone();
    CustomFramework {
        id: stored.framework.id().to_owned(),
        posture_name,
        title: document.title,
        description: document.description,
        controls: document.controls,
        created_at: to_rfc3339(stored.created_at),
        updated_at: to_rfc3339(stored.updated_at),
        updated_by: stored.updated_by,
    }
}

fn no_framework(id: &str) -> ApiError {
    ApiError::Missing(format!(
        "No custom framework {id:?} in this account. `GET /v1/frameworks` lists them."
    ))
}

/// The document's format from its Content-Type: JSON, or YAML (`application/yaml`,
/// `application/x-yaml`, `text/yaml`); anything else is 415.
/// A use case's "not found" as this framework's `not_found`.
fn missing(err: ServiceError, id: &str) -> ApiError {
    match err {
        ServiceError::NotFound => no_framework(id),
        other => other.into(),
    }
}

fn document_format(headers: &HeaderMap) -> Result<Format, ApiError> {
    let media = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_default();
    match media.as_str() {
        "application/json" => Ok(Format::Json),
        "application/yaml" | "application/x-yaml" | "text/yaml" | "text/x-yaml" => Ok(Format::Yaml),
        _ => Err(ApiError::UnsupportedMediaType),
    }
}

async fn dashboard_owner(state: &AppState, headers: &HeaderMap) -> Result<KeyOwner, ApiError> {
    let owner = authenticate(&state.db, headers).await?;
    ensure_dashboard_license(&owner.license)?;
    Ok(owner)
}

/// Set a custom framework
///
/// Creates or replaces the account's framework `framework_id` from a JSON or YAML document:
/// a title, and controls each mapped to rule ids as scans report them. A control passes when
/// every rule mapped to it passed in the scan; fails when one failed; is triaged when none
/// failed and one is set aside; otherwise it is not evaluated. Posture names the framework
/// `custom:<id>` and counts its controls by section (a control id up to its first dot). Every
/// push after this is judged against it, and so, at once, is the latest scan of each of the
/// account's branches and pull requests (with triage as it holds now). Needs a licence with
/// `custom_frameworks` (Agency tier or above). In the audit log as `framework.set`.
#[utoipa::path(
    put,
    path = "/v1/frameworks/{framework_id}",
    tag = "frameworks",
    security(("api_key" = [])),
    params(("framework_id" = String, Path, description = "1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit")),
    request_body(content(
        (FrameworkDocument = "application/json"),
        (FrameworkDocument = "application/yaml"),
    )),
    responses(
        (status = 200, description = "Replaced", body = FrameworkSet),
        (status = 201, description = "Created", body = FrameworkSet),
        (status = 400, description = "`invalid_json`: the body is not JSON (or YAML)", body = ErrorBody),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier` (custom frameworks need the Agency tier or above), `license_inactive`, or `api_key_required`", body = ErrorBody),
        (status = 413, description = "`payload_too_large`: over 256 KiB", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`: neither JSON nor YAML", body = ErrorBody),
        (status = 422, description = "`invalid_request`: an unknown field, an id that is not one, a control without rules, a control id given twice, or an `id` that differs from the path's", body = ErrorBody),
    )
)]
pub async fn put_framework(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(framework_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let owner = dashboard_owner(&state, &headers).await?;
    let license = &owner.license;
    if !license.features().contains(&Feature::CustomFrameworks) {
        return Err(ApiError::FeatureNotInTier {
            feature: Feature::CustomFrameworks,
            tier: license.tier,
        });
    }
    let audit = writer_audit(&state, &owner, peer, &headers)?;
    let format = document_format(&headers)?;
    let bytes = read_body(body, MAX_BYTES).await.map_err(|e| match e {
        ApiError::PayloadTooLarge(_) => ApiError::PayloadTooLarge(format!(
            "A framework document is at most {} KiB.",
            MAX_BYTES / 1024
        )),
        other => other,
    })?;
    let framework = ValidFramework::parse(&framework_id, &bytes, format).map_err(json_error)?;
    let set = frameworks::set(
        &state.db,
        &license.account_id,
        framework,
        &audit,
        now_millis(),
    )
    .await
    .map_err(|err| missing(err, &framework_id))?;
    let status = if set.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let answer = FrameworkSet {
        framework: view(set.stored),
        created: set.created,
        judged_scans: set.judged_scans,
    };
    Ok((status, Json(answer)).into_response())
}

/// List the account's custom frameworks
#[utoipa::path(
    get,
    path = "/v1/frameworks",
    tag = "frameworks",
    security(("api_key" = []), ("ci_push_token" = [])),
    responses(
        (status = 200, description = "By id", body = FrameworkList),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier` or `license_inactive`", body = ErrorBody),
    )
)]
pub async fn list_custom_frameworks(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<FrameworkList>, ApiError> {
    let owner = dashboard_owner(&state, &headers).await?;
    let listed = frameworks::list(&state.db, &owner.license.account_id).await?;
    Ok(Json(FrameworkList {
        frameworks: listed.into_iter().map(view).collect(),
    }))
}

/// A custom framework
#[utoipa::path(
    get,
    path = "/v1/frameworks/{framework_id}",
    tag = "frameworks",
    security(("api_key" = []), ("ci_push_token" = [])),
    params(("framework_id" = String, Path, description = "The framework's id")),
    responses(
        (status = 200, description = "The framework", body = CustomFramework),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier` or `license_inactive`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such framework in the key's account", body = ErrorBody),
    )
)]
pub async fn get_framework(
    State(state): State<AppState>,
    Path(framework_id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<CustomFramework>, ApiError> {
    let owner = dashboard_owner(&state, &headers).await?;
    frameworks::find(&state.db, &owner.license.account_id, &framework_id)
        .await
        .map(|f| Json(view(f)))
        .map_err(|err| missing(err, &framework_id))
}

/// Remove a custom framework
///
/// Removes it and the posture kept for it. In the audit log as `framework.deleted`.
#[utoipa::path(
    delete,
    path = "/v1/frameworks/{framework_id}",
    tag = "frameworks",
    security(("api_key" = [])),
    params(("framework_id" = String, Path, description = "The framework's id")),
    responses(
        (status = 204, description = "Removed"),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier`, `license_inactive`, or `api_key_required`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such framework in the key's account", body = ErrorBody),
    )
)]
pub async fn remove_framework(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(framework_id): Path<String>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    let owner = dashboard_owner(&state, &headers).await?;
    let audit = writer_audit(&state, &owner, peer, &headers)?;
    frameworks::remove(&state.db, &owner.license.account_id, &framework_id, &audit)
        .await
        .map_err(|err| missing(err, &framework_id))?;
    Ok(StatusCode::NO_CONTENT)
}
