//! Request bodies read within limits, each failure one [`ApiError`]: the media type (415),
//! the size (413), a stalled upload (408), JSON that is not JSON (400) or of the wrong shape
//! (422, naming the field). `/v1`, SCIM and the admin API read their bodies here.

use axum::body::Body;
use axum::http::{header, HeaderMap};
use serde::de::DeserializeOwned;
use tidemark_domain::input::{parse_json, JsonError};

use crate::http::error::ApiError;

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
