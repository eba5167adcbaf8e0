//! Turning request parts into domain values, each failure one [`ApiError`].

use axum::http::{header, HeaderMap};
use tidemark_domain::secrets::{ApiKeyError, Credential, LicenseKeyHash};
use tidemark_domain::Millis;
use tidemark_store::licenses::{
    find_key_owner_and_writes, find_license_by_lookup, KeyOwner, License, Writes,
};
use tidemark_store::publishers::find_ci_token_owner_and_writes;
use tidemark_store::Db;

pub use crate::http::body::{
    discard_body, hash_body, json_error, read_body, read_json, require_json,
};
use crate::http::error::ApiError;

pub const LICENSE_HASH_HEADER: &str = "x-license-key-hash";
pub const API_KEY_HEADER: &str = "x-api-key";

pub fn license_hash(headers: &HeaderMap) -> Result<LicenseKeyHash, ApiError> {
    let value = headers
        .get(LICENSE_HASH_HEADER)
        .and_then(|v| v.to_str().ok())
        .ok_or(ApiError::InvalidLicenseHash)?;
    LicenseKeyHash::parse(value.trim()).map_err(|_| ApiError::InvalidLicenseHash)
}

/// The license named by `X-License-Key-Hash`, whatever its state.
pub async fn license_from_header(db: &Db, headers: &HeaderMap) -> Result<License, ApiError> {
    let hash = license_hash(headers)?;
    find_license_by_lookup(db, &hash.lookup())
        .await?
        .ok_or(ApiError::LicenseNotFound)
}

/// `403 license_inactive` (saying since when and what to do) unless the license is in force.
pub fn ensure_active(license: &License) -> Result<(), ApiError> {
    let state = license.state(tidemark_domain::now_millis());
    if state.is_active() {
        Ok(())
    } else {
        Err(ApiError::LicenseInactive(state.explain()))
    }
}

/// What a key needs to reach the dashboard's data (push and exports alike): a live license
/// whose tier has the hosted dashboard. 403 `license_inactive` or `insufficient_tier`.
pub fn ensure_dashboard_license(license: &License) -> Result<(), ApiError> {
    ensure_active(license)?;
    if !license
        .features()
        .contains(&tidemark_wire::Feature::HostedDashboard)
    {
        return Err(ApiError::InsufficientTier(license.tier));
    }
    Ok(())
}

/// The account behind `X-API-Key` (or `Authorization: Bearer`): an API key, or a keyless CI
/// push token. 401 `missing_api_key`, `malformed_api_key` or `invalid_api_key`.
pub async fn authenticate(db: &Db, headers: &HeaderMap) -> Result<KeyOwner, ApiError> {
    // A window that starts after every write: no budget to read.
    let now = tidemark_domain::now_millis();
    Ok(authenticate_writer(db, headers, now, Millis::MAX).await?.0)
}

/// [`authenticate`], and the account's writes since `window_start` (the write budget's
/// window), in one read: what a push needs before it reads its body.
pub async fn authenticate_writer(
    db: &Db,
    headers: &HeaderMap,
    now: Millis,
    window_start: Millis,
) -> Result<(KeyOwner, Writes), ApiError> {
    let (owner, writes) = match credential(headers)? {
        Credential::ApiKey(key) => find_key_owner_and_writes(db, &key.hash(), window_start).await?,
        Credential::CiToken(token) => {
            find_ci_token_owner_and_writes(db, &token.hash(), now, window_start).await?
        }
    }
    .ok_or(ApiError::InvalidApiKey)?;
    tidemark_domain::api_keys::check_expiry(owner.expires_at, now)
        .map_err(ApiError::ExpiredApiKey)?;
    Ok((owner, writes))
}

/// The credential in `X-API-Key` or `Authorization: Bearer`, not yet looked up.
fn credential(headers: &HeaderMap) -> Result<Credential, ApiError> {
    let header = match headers.get(API_KEY_HEADER) {
        Some(v) => Some(v.to_str().map_err(|_| ApiError::MalformedApiKey)?),
        None => match headers.get(header::AUTHORIZATION) {
            None => None,
            Some(v) => {
                let v = v.to_str().map_err(|_| ApiError::MalformedApiKey)?;
                let (scheme, token) = v.trim().split_once(' ').unwrap_or((v, ""));
                if !scheme.eq_ignore_ascii_case("bearer") {
                    return Err(ApiError::MalformedApiKey);
                }
                Some(token)
            }
        },
    };
    Credential::parse(header.map(str::trim)).map_err(|e| match e {
        ApiKeyError::Missing => ApiError::MissingApiKey,
        ApiKeyError::Malformed => ApiError::MalformedApiKey,
    })
}
