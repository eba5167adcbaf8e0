//! `/admin/v1/tokens…`: the vendor's tokens, managed by an `admin` token (the first one comes
//! from `tidemark-server vendor-token create` on the host).

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use tidemark_domain::time::parse_rfc3339;
use tidemark_domain::to_rfc3339;
use tidemark_domain::vendor::{Permission, TokenName, VendorRole};
use tidemark_services::vendor::{self, VendorTokenRow};
use tidemark_services::ServiceError;
use tidemark_wire::admin::{
    CreateVendorTokenRequest, CreatedVendorToken, VendorRoleName, VendorTokenInfo, VendorTokenList,
};
use tidemark_wire::ErrorBody;

use super::caller::caller;
use crate::http::body::read_json;
use crate::http::error::ApiError;
use crate::state::AppState;

pub fn role_name(role: VendorRole) -> VendorRoleName {
    match role {
        VendorRole::Admin => VendorRoleName::Admin,
        VendorRole::Sales => VendorRoleName::Sales,
        VendorRole::Support => VendorRoleName::Support,
        VendorRole::Billing => VendorRoleName::Billing,
        VendorRole::Read => VendorRoleName::Read,
    }
}

fn role_of(name: VendorRoleName) -> VendorRole {
    match name {
        VendorRoleName::Admin => VendorRole::Admin,
        VendorRoleName::Sales => VendorRole::Sales,
        VendorRoleName::Support => VendorRole::Support,
        VendorRoleName::Billing => VendorRole::Billing,
        VendorRoleName::Read => VendorRole::Read,
    }
}

pub fn info(t: &VendorTokenRow) -> VendorTokenInfo {
    VendorTokenInfo {
        id: t.id.clone(),
        name: t.name.clone(),
        role: role_name(t.role),
        prefix: t.prefix.clone(),
        created_at: to_rfc3339(t.created_at),
        created_by: t.created_by.clone(),
        expires_at: t.expires_at.map(to_rfc3339),
        last_used_at: t.last_used_at.map(to_rfc3339),
        revoked_at: t.revoked_at.map(to_rfc3339),
    }
}

/// List vendor tokens
///
/// Live tokens first, newest first; never a token itself.
#[utoipa::path(
    get,
    path = "/admin/v1/tokens",
    tag = "tokens",
    security(("vendor_token" = [])),
    responses(
        (status = 200, description = "The tokens", body = VendorTokenList),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 403, description = "`insufficient_role`: admin only", body = ErrorBody),
    )
)]
pub async fn list_tokens(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Json<VendorTokenList>, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Administer])?;
    let tokens = vendor::list_tokens(&state.db).await?;
    Ok(Json(VendorTokenList {
        tokens: tokens.iter().map(info).collect(),
    }))
}

/// Make a vendor token
///
/// The token is in this answer only; Tidemark keeps its hash. Its calls are audited as
/// `vendor:<name>`.
#[utoipa::path(
    post,
    path = "/admin/v1/tokens",
    tag = "tokens",
    security(("vendor_token" = [])),
    request_body(content = CreateVendorTokenRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "The token (shown here only)", body = CreatedVendorToken),
        (status = 400, description = "`invalid_json`", body = ErrorBody),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 403, description = "`insufficient_role`: admin only", body = ErrorBody),
        (status = 409, description = "`conflict`: a live token has this name", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: an unknown field (named), a bad name or expiry", body = ErrorBody),
    )
)]
pub async fn create_token(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<CreatedVendorToken>), ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Administer])?;
    let request: CreateVendorTokenRequest = read_json(&headers, body, 16 * 1024).await?;
    let name = TokenName::parse(&request.name).map_err(ApiError::InvalidRequest)?;
    let expires_at = request
        .expires_at
        .as_deref()
        .map(|t| parse_rfc3339("expires_at", t))
        .transpose()
        .map_err(ApiError::InvalidRequest)?;
    let made = vendor::create_token(
        &state.db,
        &name,
        role_of(request.role),
        expires_at,
        &who.audit,
    )
    .await
    .map_err(|err| match err {
        ServiceError::Conflict(text) => ApiError::Conflict(text),
        other => other.into(),
    })?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedVendorToken {
            token: made.token.expose().to_owned(),
            info: info(&made.row),
        }),
    ))
}

/// Revoke a vendor token
///
/// Its next call is refused, on every replica.
#[utoipa::path(
    delete,
    path = "/admin/v1/tokens/{token_id}",
    tag = "tokens",
    security(("vendor_token" = [])),
    params(("token_id" = String, Path, description = "`vtk_…`")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 403, description = "`insufficient_role`: admin only", body = ErrorBody),
        (status = 404, description = "`not_found`: no such live token", body = ErrorBody),
    )
)]
pub async fn revoke_token(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Administer])?;
    vendor::revoke_token(&state.db, &id, &who.audit)
        .await
        .map_err(|err| match err {
            ServiceError::NotFound => ApiError::Missing(format!("No live token {id:?}.")),
            other => other.into(),
        })?;
    Ok(StatusCode::NO_CONTENT)
}
