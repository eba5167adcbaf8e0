//! `GET /v1/keys`: the public keys that verify licence verdicts.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use tidemark_wire::verdict::KeySet;

use crate::http::error::ApiError;
use crate::state::AppState;

/// Clients may keep the document this long; a rotation announces a key days before it signs.
const CACHE_SECONDS: u32 = 300;

/// The verdict-signing keys
///
/// A JWKS of Ed25519 keys (`kty` `OKP`, `alg` `EdDSA`), each with its validity window: a key
/// is published when it is created, signs from `signs_from` (after an overlap, so clients
/// learn it first), stops signing at `signs_until` and leaves the set at `retires_at`, when
/// nothing it signed is valid any more. `signatures` holds one compact JWS of the key list per
/// key: a client accepts a new key only from a signature it verifies with a key it already
/// trusts. Also served at `/.well-known/tidemark-keys.json`. No authentication.
#[utoipa::path(
    get,
    path = "/v1/keys",
    tag = "license",
    responses(
        (status = 200, description = "The published keys, signed by themselves", body = KeySet,
            headers(("Cache-Control" = String, description = "public, max-age=300"))),
    )
)]
pub async fn get_signing_keys(
    State(state): State<AppState>,
) -> Result<impl IntoResponse, ApiError> {
    let keys = state
        .signer
        .key_set(&state.db)
        .await
        .map_err(ApiError::internal)?;
    Ok((
        [(
            header::CACHE_CONTROL,
            format!("public, max-age={CACHE_SECONDS}"),
        )],
        Json(keys),
    ))
}
