//! Turning request parts into domain values, each failure one [`ApiError`].

use axum::body::Body;
use axum::http::{header, HeaderMap};
use serde::de::DeserializeOwned;
use tidemark_domain::input::{parse_json, JsonError};
use tidemark_domain::secrets::{ApiKeyError, Credential, LicenseKeyHash};
use tidemark_domain::Millis;
use tidemark_store::licenses::{
    find_key_owner_and_writes, find_license_by_lookup, KeyOwner, License, Writes,
};
use tidemark_store::publishers::find_ci_token_owner_and_writes;
use tidemark_store::Db;

use crate::http::error::ApiError;

pub const LICENSE_HASH_HEADER: &str = "x-license-key-hash";
pub const API_KEY_HEADER: &str = "x-api-key";

/// Refuses anything but `application/json` (parameters such as `charset` are allowed).
pub fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"));
    if is_json {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType)
    }
}

/// Reads at most `limit` bytes of body.
pub async fn read_body(body: Body, limit: usize) -> Result<axum::body::Bytes, ApiError> {
    axum::body::to_bytes(body, limit)
        .await
        .map_err(|err| unread_body(&err, limit))
}

/// SHA-256 (hex) of a body read chunk by chunk, keeping none of it; `None` past `limit`
/// bytes (the rest is not read).
pub async fn hash_body(body: Body, limit: usize) -> Result<Option<String>, ApiError> {
    use http_body_util::BodyExt as _;
    use sha2::Digest as _;
    let mut body = body;
    let mut hasher = sha2::Sha256::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|err| unread_body(&err, limit))?;
        if let Some(data) = frame.data_ref() {
            seen += data.len();
            if seen > limit {
                return Ok(None);
            }
            hasher.update(data);
        }
    }
    Ok(Some(hex::encode(hasher.finalize())))
}

/// Why a body could not be read: it stopped arriving (408), it passed the length limit
/// (413), or the connection broke.
fn unread_body(err: &axum::Error, limit: usize) -> ApiError {
    let causes = || std::iter::successors(std::error::Error::source(err), |e| e.source());
    let too_large = causes().any(|s| s.is::<http_body_util::LengthLimitError>());
    let stalled = causes().any(|s| s.is::<tower_http::timeout::TimeoutError>());
    if stalled {
        ApiError::RequestTimeout(
            "The request body stopped arriving; send it again (a repeated push is answered \
             like the first and costs nothing)."
                .into(),
        )
    } else if too_large {
        ApiError::PayloadTooLarge(format!(
            "The request body is larger than the limit of {} MiB.",
            limit / (1024 * 1024)
        ))
    } else {
        ApiError::InvalidJson("The request body could not be read.".into())
    }
}

/// Reads and drops a request body that is refused before it is read (at most `limit`
/// bytes, never more than one chunk in memory). Clients send their whole body before they
/// read the answer: closing on them mid-body turns a clear `503` or `401` into a reset
/// connection. A client that asked `Expect: 100-continue` has sent nothing yet and is
/// answered at once.
pub async fn discard_body(headers: &HeaderMap, body: Body, limit: usize) {
    use http_body_util::BodyExt as _;
    let waits_for_us = headers
        .get(header::EXPECT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
    if waits_for_us {
        return;
    }
    let mut body = body;
    let mut seen = 0;
    while let Some(Ok(frame)) = body.frame().await {
        seen += frame.data_ref().map_or(0, |d| d.len());
        if seen > limit {
            break;
        }
    }
}

pub fn json_error(err: JsonError) -> ApiError {
    match err {
        JsonError::Syntax(msg) => ApiError::InvalidJson(msg),
        JsonError::Shape(field) => ApiError::InvalidRequest(field.message),
    }
}

/// A JSON request body: 415 for another media type, 413 over `limit`, 400 if it is not
/// JSON, 422 naming the field when it is JSON of the wrong shape.
pub async fn read_json<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<T, ApiError> {
    require_json(headers)?;
    let bytes = read_body(body, limit).await?;
    parse_json(&bytes).map_err(json_error)
}

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
    match credential(headers)? {
        Credential::ApiKey(key) => find_key_owner_and_writes(db, &key.hash(), window_start).await?,
        Credential::CiToken(token) => {
            find_ci_token_owner_and_writes(db, &token.hash(), now, window_start).await?
        }
    }
    .ok_or(ApiError::InvalidApiKey)
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
