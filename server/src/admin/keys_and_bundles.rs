//! `/admin/v1/bundles` and `/admin/v1/signing-keys…`: publishing the rule bundle scanners
//! download, and the verdict-signing keys' schedule and rotation, on the use cases
//! `bundle publish` and `signing-key list|rotate` call. Admin only, except reading keys.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::Json;
use serde::Deserialize;
use tidemark_domain::vendor::Permission;
use tidemark_services::signing_keys::{self, KeySchedule};
use tidemark_wire::admin::{AdminBundle, RotateSigningKeyRequest, SigningKeyInfo, SigningKeyList};
use tidemark_wire::ErrorBody;

use super::caller::caller;
use crate::http::body::{read_body, read_json};
use crate::http::error::ApiError;
use crate::state::AppState;

/// The largest bundle accepted over HTTP.
const MAX_BUNDLE_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct BundleQuery {
    /// The file name scanners save it under (letters, digits, `.`, `-`, `_`; default
    /// `bundle`).
    #[param(min_length = 1, max_length = 128, pattern = "^[A-Za-z0-9._-]{1,128}$")]
    name: Option<String>,
}

/// Publish a bundle
///
/// The body (`application/octet-stream`, at most 64 MiB) becomes the latest bundle: every
/// valid licence's validation names it from now on (within the validation cache's window).
#[utoipa::path(
    post,
    path = "/admin/v1/bundles",
    tag = "bundles",
    security(("vendor_token" = [])),
    params(BundleQuery),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses(
        (status = 201, description = "Published", body = AdminBundle),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 403, description = "`insufficient_role`: admin only", body = ErrorBody),
        (status = 413, description = "`payload_too_large`: over 64 MiB", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`: not application/octet-stream", body = ErrorBody),
        (status = 422, description = "`invalid_request`: an empty body, or a bad name", body = ErrorBody),
    )
)]
pub async fn publish_bundle(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Result<(StatusCode, Json<AdminBundle>), ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Administer])?;
    let q = axum::extract::Query::<BundleQuery>::try_from_uri(&uri)
        .map(|q| q.0)
        .map_err(|e| {
            ApiError::InvalidRequest(format!("the query is not one this endpoint reads ({e})"))
        })?;
    let name = q.name.unwrap_or_else(|| "bundle".to_owned());
    let name_ok = (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if !name_ok {
        return Err(ApiError::InvalidRequest(
            "name must be 1 to 128 of letters, digits, '.', '-' and '_'".into(),
        ));
    }
    let octets = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/octet-stream"));
    if !octets {
        return Err(ApiError::UnsupportedMediaType);
    }
    let bytes = read_body(body, MAX_BUNDLE_BYTES).await?;
    if bytes.is_empty() {
        return Err(ApiError::InvalidRequest("the bundle is empty".into()));
    }
    let published = tidemark_services::bundles::publish(
        &state.db,
        &state.config.http.base_url,
        &name,
        &bytes,
        &who.audit,
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(AdminBundle {
            bundle_id: published.bundle_id,
            bundle_url: published.bundle_url,
            bundle_checksum: published.bundle_checksum,
            size_bytes: published.size_bytes,
        }),
    ))
}

fn key_list(schedule: KeySchedule) -> SigningKeyList {
    SigningKeyList {
        keys: schedule
            .keys
            .into_iter()
            .map(|k| SigningKeyInfo {
                kid: k.kid,
                generation: k.generation,
                stage: k.stage.to_owned(),
                published_at: k.published_at,
                signs_from: k.signs_from,
                signs_until: k.signs_until,
                retires_at: k.retires_at,
            })
            .collect(),
        added: schedule.added,
        retired: schedule.retired,
    }
}

/// The verdict-signing keys
///
/// Every published key with its schedule (announced, signing, verifying); keys whose time has
/// come are retired first (their private halves destroyed), as `signing-key list` does.
#[utoipa::path(
    get,
    path = "/admin/v1/signing-keys",
    tag = "signing keys",
    security(("vendor_token" = [])),
    responses(
        (status = 200, description = "The keys", body = SigningKeyList),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 429, description = "`rate_limit_exceeded`", body = ErrorBody),
    )
)]
pub async fn list_signing_keys(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Json<SigningKeyList>, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Read])?;
    let schedule = signing_keys::schedule(&state.db, &state.signer, &who.audit).await?;
    Ok(Json(key_list(schedule)))
}

/// Rotate the verdict-signing key
///
/// Adds a key, published at once and signing after the overlap (`0`: at once, when the
/// current key is compromised); the current key retires once nothing it signed can still be
/// valid.
#[utoipa::path(
    post,
    path = "/admin/v1/signing-keys/rotate",
    tag = "signing keys",
    security(("vendor_token" = [])),
    request_body(content = RotateSigningKeyRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The keys, with the one added", body = SigningKeyList),
        (status = 400, description = "`invalid_json`", body = ErrorBody),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 403, description = "`insufficient_role`: admin only", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: an unknown field or a bad overlap", body = ErrorBody),
    )
)]
pub async fn rotate_signing_key(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<SigningKeyList>, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Administer])?;
    let request: RotateSigningKeyRequest = read_json(&headers, body, 4 * 1024).await?;
    let overlap = match request.overlap.as_deref() {
        Some(text) => crate::config::parse_overlap(text)
            .map_err(|e| ApiError::InvalidRequest(format!("overlap: {e}")))?,
        None => state.config.keys.signing_key_overlap_ms,
    };
    let schedule = signing_keys::rotate(&state.db, &state.signer, overlap, &who.audit).await?;
    Ok(Json(key_list(schedule)))
}
