//! `GET /v1/bundles/{bundle_id}`: the compliance-profile bundle, for valid licenses only.

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use tidemark_services::ServiceError;
use tidemark_wire::ErrorBody;

use super::extract::{ensure_active, license_from_header};
use crate::http::error::ApiError;
use crate::state::AppState;

/// A bundle file, byte for byte.
// Named only so that the `200` body is documented as binary rather than as an array of numbers.
#[derive(utoipa::ToSchema)]
#[schema(value_type = String, format = Binary)]
#[expect(
    dead_code,
    reason = "only describes the response in the OpenAPI document"
)]
struct BundleBytes(Vec<u8>);

/// Download a bundle
///
/// Serves exactly the bytes whose SHA-256 is the `bundle_checksum` of the validation result.
#[utoipa::path(
    get,
    path = "/v1/bundles/{bundle_id}",
    tag = "license",
    security(("license_key_hash" = [])),
    params(("bundle_id" = String, Path, description = "From `bundle_url`")),
    responses(
        (status = 200, description = "The bundle file", content_type = "application/octet-stream", body = BundleBytes),
        (status = 400, description = "`invalid_license_hash`", body = ErrorBody),
        (status = 403, description = "`license_inactive`", body = ErrorBody),
        (status = 404, description = "`license_not_found`, or `not_found` for an unknown bundle", body = ErrorBody),
    )
)]
pub async fn download_bundle(
    State(state): State<AppState>,
    Path(bundle_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let license = license_from_header(&state.db, &headers).await?;
    ensure_active(&license)?;
    let (bundle, bytes) = tidemark_services::bundles::content(&state.db, &bundle_id)
        .await
        .map_err(|err| match err {
            ServiceError::NotFound => ApiError::no_bundle(&bundle_id),
            other => other.into(),
        })?;
    let safe_name: String = bundle
        .file_name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        .collect();
    let mut res = bytes.into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{safe_name}\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    if let Ok(v) = HeaderValue::from_str(&format!("\"sha256:{}\"", bundle.sha256)) {
        h.insert(header::ETAG, v);
    }
    Ok(res)
}
