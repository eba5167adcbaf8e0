//! `/v1/license/*`: validation, activation and the enumeration-safe resend.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use tidemark_domain::now_millis;
use tidemark_domain::rate::RollingLimit;
use tidemark_domain::secrets::LicenseKeyHash;
use tidemark_domain::signing::{MachineFingerprint, FINGERPRINT_RULE};
use tidemark_domain::text::{Email, MachineName};
use tidemark_store::rate;
use tidemark_wire::{
    ActivateRequest, ActivateResponse, ErrorBody, ResendRequest, ResendResponse, ValidateResponse,
};

use super::extract::{ensure_active, license_from_header, license_hash, read_json};
use crate::http::client_ip::client_ip;
use crate::http::error::ApiError;
use crate::http::metrics::AnsweredEarly;
use crate::state::AppState;
use tidemark_services::licensing::{self, Activation, ResendLimit, Validation, Validator};

/// The optional header that binds a verdict to one machine.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)] // documents the header; the handlers read it from the header map
struct MachineFingerprintHeader {
    /// This machine's fingerprint (`tidemark fingerprint`), bound into `verdict` so that a
    /// cache copied to another machine is refused there.
    #[param(
        rename = "X-Machine-Fingerprint",
        min_length = 1,
        max_length = 128,
        pattern = "^[A-Za-z0-9._:+/=-]{1,128}$"
    )]
    x_machine_fingerprint: Option<String>,
}

/// Names the machine a verdict is bound to (optional).
pub const MACHINE_FINGERPRINT_HEADER: &str = "x-machine-fingerprint";

/// Small JSON bodies (activate, resend) never need more.
const SMALL_BODY_LIMIT: usize = 64 * 1024;

pub const RESEND_MESSAGE: &str = "If a license exists for this address, it has been sent.";

/// Validate a license
///
/// Identifies the license by the SHA-256 of its key; the key itself is never sent. A known
/// license that is expired or suspended answers `200` with `valid: false`, empty `features`
/// and null bundle fields.
#[utoipa::path(
    post,
    path = "/v1/license/validate",
    tag = "license",
    security(("license_key_hash" = [])),
    params(MachineFingerprintHeader),
    responses(
        (status = 200, description = "The license's current state, and `verdict`: the same signed (EdDSA) with the offline grace's end, verifiable with the keys at /v1/keys", body = ValidateResponse),
        (status = 400, description = "`invalid_license_hash`: header missing or not 64 hex characters", body = ErrorBody),
        (status = 404, description = "`license_not_found`: no license has this key", body = ErrorBody),
        (status = 422, description = "`invalid_request`: `X-Machine-Fingerprint` is not 1 to 128 characters of letters, digits and . _ : + / = -", body = ErrorBody),
    )
)]
pub async fn validate_license(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (hash, machine) = question(&headers)?;
    let client = client_version(&headers);
    match state
        .validator
        .validate(&state.db, &hash, machine.clone())
        .await?
    {
        Validation::Answer(body) => {
            state.validator.count(&hash, machine.as_ref(), client);
            Ok(json_body(body))
        }
        Validation::UnknownLicense => Err(ApiError::LicenseNotFound),
    }
}

/// The path [`validate_license`] is routed at (also [`answer_cached_validation`]'s).
pub const VALIDATE_PATH: &str = "/v1/license/validate";

/// What a validation asks: which licence, and for which machine if one is named.
fn question(headers: &HeaderMap) -> Result<(LicenseKeyHash, Option<MachineFingerprint>), ApiError> {
    Ok((license_hash(headers)?, machine_fingerprint(headers)?))
}

/// Answers a validation the cache already holds before the request reaches the router.
///
/// Every scanner run asks this, many times a second across a fleet, and a kept answer is
/// ready bytes; what a request pays on its way to the handler (the layers only the dashboard
/// needs: its assets, island scripts, secrets shown once; routing; the `/v1` deadline's timer;
/// the app state cloned for the handler) would otherwise be most of its cost. This layer sits
/// inside the ones every response needs (request id, access log, metrics, panics, security
/// headers, compression), so the answer is the one the handler gives, header for header
/// (`tests/license_api.rs` pins that). Anything else, including any request the handler would
/// refuse, goes on to the router unchanged.
pub async fn answer_cached_validation(
    State(validator): State<Arc<Validator>>,
    req: Request,
    next: Next,
) -> Response {
    if req.method() == Method::POST && req.uri().path() == VALIDATE_PATH {
        if let Ok((hash, machine)) = question(req.headers()) {
            if let Some(body) = validator.kept_answer(&hash, machine.as_ref()) {
                validator.count(&hash, machine.as_ref(), client_version(req.headers()));
                let mut res = json_body(body);
                // What the `/v1` router adds to every answer (`security_headers::no_store`).
                res.headers_mut()
                    .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                res.extensions_mut().insert(AnsweredEarly(VALIDATE_PATH));
                return res;
            }
        }
    }
    next.run(req).await
}

fn json_body(body: Bytes) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// The client the request's `User-Agent` names, if it names one plainly.
pub fn client_version(
    headers: &HeaderMap,
) -> Option<tidemark_domain::client_version::ClientVersion> {
    let agent = headers.get(header::USER_AGENT)?.to_str().ok()?;
    tidemark_domain::client_version::ClientVersion::from_user_agent(agent)
}

/// The optional `X-Machine-Fingerprint` header, bound into the verdict.
fn machine_fingerprint(headers: &HeaderMap) -> Result<Option<MachineFingerprint>, ApiError> {
    let Some(value) = headers.get(MACHINE_FINGERPRINT_HEADER) else {
        return Ok(None);
    };
    let text = value.to_str().map_err(|_| {
        ApiError::InvalidRequest(format!("X-Machine-Fingerprint {FINGERPRINT_RULE}"))
    })?;
    MachineFingerprint::parse(text)
        .map(Some)
        .map_err(ApiError::InvalidRequest)
}

/// Activate a machine
///
/// Issues a new API key for one machine or CI secret. The key is in this response only;
/// the server keeps just its hash. An account may hold many active keys.
#[utoipa::path(
    post,
    path = "/v1/license/activate",
    tag = "license",
    security(("license_key_hash" = [])),
    params(MachineFingerprintHeader),
    request_body(content = ActivateRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "A new API key, shown once", body = ActivateResponse),
        (status = 400, description = "`invalid_license_hash`, or `invalid_json`", body = ErrorBody),
        (status = 403, description = "`license_inactive`: the license is expired or suspended; or `seat_limit_reached`: every seat of the license is held by another machine (a machine is its X-Machine-Fingerprint, else its name; one that holds a seat activates again without a new one)", body = ErrorBody),
        (status = 404, description = "`license_not_found`", body = ErrorBody),
        (status = 413, description = "`payload_too_large`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: `machine` missing, empty, over 128 characters or with control characters, or a malformed `X-Machine-Fingerprint`", body = ErrorBody),
        (status = 408, description = "`request_timeout`: the body stopped arriving, or the request outlasted the API's time limit (`TIDEMARK_API_TIMEOUT_SECONDS`)", body = ErrorBody),
    )
)]
pub async fn activate_license(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<ActivateResponse>), ApiError> {
    let hash = license_hash(&headers)?;
    let machine_fp = machine_fingerprint(&headers)?;
    let license = license_from_header(&state.db, &headers).await?;
    let request: ActivateRequest = read_json(&headers, body, SMALL_BODY_LIMIT).await?;
    let machine =
        MachineName::parse(&request.machine).map_err(|e| ApiError::InvalidRequest(e.message))?;
    ensure_active(&license)?;
    match state
        .validator
        .activate(&state.db, &hash, &license, &machine, machine_fp)
        .await?
    {
        Activation::Activated(activated) => Ok((StatusCode::CREATED, Json(activated))),
        Activation::SeatLimit { limit } => Err(ApiError::SeatLimitReached(
            tidemark_domain::seats::seat_limit_message(limit),
        )),
    }
}

/// Re-send a license by e-mail
///
/// Always answers the same for a valid address, whether or not a license exists, and takes
/// the same path either way: the request is queued in a durable outbox and a background
/// sender looks the address up and mails every license registered to it (key, tier,
/// expiry). Limited per source IP: more than the limit per rolling minute starts a ban
/// (default 3 per minute, 15-minute ban) during which every request gets `429`.
#[utoipa::path(
    post,
    path = "/v1/license/resend",
    tag = "license",
    request_body(content = ResendRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "Queued (or nothing to send; the answer is the same)", body = ResendResponse),
        (status = 400, description = "`invalid_json`", body = ErrorBody),
        (status = 413, description = "`payload_too_large`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: not an e-mail address", body = ErrorBody),
        (status = 429, description = "`rate_limit_exceeded`; `Retry-After` gives the seconds left of the ban", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until the ban ends"))),
        (status = 408, description = "`request_timeout`: the body stopped arriving, or the request outlasted the API's time limit (`TIDEMARK_API_TIMEOUT_SECONDS`)", body = ErrorBody),
    )
)]
pub async fn resend_license(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<ResendResponse>, ApiError> {
    let config = &state.config;
    let ip = client_ip(peer.ip(), &headers, &config.http.trusted_proxies);
    let bucket = format!("resend:{}", tidemark_domain::rate::rate_subject(ip));
    let now = now_millis();
    let limited = |retry_after_secs: u64| ApiError::RateLimited {
        limit: "resend",
        message: format!(
            "Too many license resend requests from this address: the limit is {} per minute, \
             and exceeding it blocks the address for {} minutes. Try again in {} seconds.",
            config.limits.resend_per_minute,
            config.limits.resend_ban_seconds.div_ceil(60),
            retry_after_secs
        ),
        retry_after_secs,
    };
    // During a ban every request is refused, even one that would be invalid.
    if let Some(secs) = rate::ban_remaining(&state.db, &bucket, now).await? {
        return Err(limited(secs));
    }
    let request: ResendRequest = read_json(&headers, body, SMALL_BODY_LIMIT).await?;
    let email = Email::parse(&request.email).map_err(|e| ApiError::InvalidRequest(e.message))?;
    let limit = ResendLimit {
        per_minute: RollingLimit::per_minute(config.limits.resend_per_minute),
        ban_ms: i64::from(config.limits.resend_ban_seconds) * 1000,
    };
    let decision = licensing::queue_resend(&state.db, bucket, &email, limit, now).await?;
    if let rate::BanDecision::Refuse { retry_after_secs } = decision {
        return Err(limited(retry_after_secs));
    }
    state.mail_wakeup.notify_one();
    Ok(Json(ResendResponse {
        ok: true,
        message: RESEND_MESSAGE.to_owned(),
    }))
}
