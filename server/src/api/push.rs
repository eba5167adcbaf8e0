//! `POST /v1/dashboard/push`: auth → license → body → one transaction → `201`.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use tidemark_domain::ci_identity::apply_trusted_git;
use tidemark_domain::now_millis;
use tidemark_domain::push::{PushError, ValidPush, MAX_BODY_BYTES, MAX_FINDINGS};
use tidemark_domain::rate::RollingLimit;
use tidemark_store::licenses::{KeyOwner, Via};
use tidemark_store::pushes::{
    rate_after, record_push, PushContext, PushOutcome, RateStatus, RawReplay, StoredScan,
};
use tidemark_wire::ids::AccountId;
use tidemark_wire::{ErrorBody, PushRequest, PushResponse};

use super::extract::{
    authenticate_writer, discard_body, ensure_active, ensure_dashboard_license, hash_body,
    json_error, read_body, require_json,
};
use super::push_budget::{Busy, Reservation};
use crate::http::error::ApiError;
use crate::http::metrics::PushCounted;
use crate::state::AppState;

static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// Push a scan
///
/// Appends a scan to the history of the project named by `project_label` in the key's
/// account, creating the project if the tier's cap allows. `score_delta` is this score minus
/// the previous scan's (0 for the first), read and written atomically so concurrent CI jobs
/// chain exactly. Re-sending a line's latest push (same JSON value) is a replay: `201`
/// with the original answer, nothing appended, no write budget used. While the account's
/// write budget is spent, only a byte-identical retry is recognised (the body is hashed as it
/// arrives, never parsed); anything else is `429` before its body is parsed.
///
/// Every response carries `RateLimit-Policy` (`"writes";q=<limit>;w=60`); once the account is
/// known, also `RateLimit` (`"writes";r=<remaining>;t=<seconds to reset>`), as in the IETF
/// RateLimit header fields draft.
#[utoipa::path(
    post,
    path = "/v1/dashboard/push",
    tag = "dashboard",
    security(("api_key" = []), ("ci_push_token" = [])),
    request_body(content = PushRequest, content_type = "application/json",
        description = "At most 16 MiB and 50,000 findings"),
    responses(
        (status = 201, description = "Appended (or replayed)", body = PushResponse),
        (status = 400, description = "`invalid_json`", body = ErrorBody),
        (status = 401, description = "`missing_api_key`, `malformed_api_key` (activate again) or `invalid_api_key` (unknown, revoked, or a named key past its expiry, the message saying when; a keyless CI push token expired or its publisher removed)", body = ErrorBody),
        (status = 403, description = "`insufficient_tier` (no hosted_dashboard feature), `license_inactive`, or `project_not_allowed` (a keyless CI push token for a project its publisher does not name)", body = ErrorBody),
        (status = 409, description = "`project_limit_reached` (new label, cap reached) or `project_archived`", body = ErrorBody),
        (status = 413, description = "`payload_too_large`: over 16 MiB or 50,000 findings", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: the message names the field (for a keyless CI push, also a `git` field that contradicts the job's token)", body = ErrorBody),
        (status = 429, description = "`rate_limit_exceeded`: over the account's writes per minute", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 408, description = "`request_timeout`: the body stopped arriving, or the request outlasted the API's time limit (`TIDEMARK_API_TIMEOUT_SECONDS`)", body = ErrorBody),
        (status = 503, description = "`server_busy`: the server holds as many push bodies as its memory budget allows (`TIDEMARK_PUSH_BUDGET_MIB`), or this account holds half of them; refused before the body is read", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
    )
)]
pub async fn push_scan(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let limit = RollingLimit::per_minute(state.config.limits.writes_per_minute);
    let (mut res, rate) = match push(&state, &limit, &headers, body).await {
        Ok((answer, stored, rate)) => {
            let outcome = match stored {
                Stored::Created => "created",
                Stored::Replayed => "replayed",
            };
            let counted = PushCounted { outcome, code: "" };
            (
                (StatusCode::CREATED, Extension(counted), Json(answer)).into_response(),
                Some(rate),
            )
        }
        Err((err, rate)) => {
            // `server_busy` and `request_timeout` are refusals the client retries; only an
            // internal error is ours to fix.
            let outcome = if matches!(err, ApiError::Internal(_)) {
                "failed"
            } else {
                "refused"
            };
            let counted = PushCounted {
                outcome,
                code: err.code(),
            };
            let mut res = err.into_response();
            res.extensions_mut().insert(counted);
            (res, rate)
        }
    };
    let h = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&format!("\"writes\";q={};w=60", limit.limit)) {
        h.insert(RATELIMIT_POLICY.clone(), v);
    }
    if let Some(rate) = rate {
        if let Ok(v) = HeaderValue::from_str(&format!(
            "\"writes\";r={};t={}",
            rate.remaining, rate.reset_secs
        )) {
            h.insert(RATELIMIT.clone(), v);
        }
    }
    res
}

/// Whether a push that was answered `201` wrote a scan or repeated one (same content, same
/// project, within the replay window).
enum Stored {
    Created,
    Replayed,
}

type PushResult = Result<(PushResponse, Stored, RateStatus), (ApiError, Option<RateStatus>)>;

async fn push(
    state: &AppState,
    limit: &RollingLimit,
    headers: &HeaderMap,
    body: Body,
) -> PushResult {
    let now = now_millis();
    // The credential and the account's write budget in one read.
    let (owner, writes) =
        match authenticate_writer(&state.db, headers, now, limit.window_start(now)).await {
            Ok(found) => found,
            Err(err) => {
                discard_body(headers, body, MAX_BODY_BYTES).await;
                return Err((err, None));
            }
        };
    let account_id = owner.license.account_id.clone();
    let rate = rate_after(limit, now, writes);
    // Past authentication every answer reports the account's budget (unless the database
    // is what failed since: its figure may no longer be the database's).
    let refuse = |err: ApiError| {
        let rate = (!matches!(err, ApiError::DatabaseUnavailable)).then_some(rate);
        (err, rate)
    };
    let (push, reservation, raw_body_hash) =
        match check_and_parse(state, &owner, headers, body, limit, rate).await {
            Ok(Admitted::Push(push, reservation, raw)) => (*push, reservation, raw),
            Ok(Admitted::Replayed(scan, rate)) => {
                return Ok(accepted(state, *scan, Stored::Replayed, rate))
            }
            Err(err) => return Err(refuse(err)),
        };

    let label = push.label().to_owned();
    let pushed_by = serde_json::to_string(&owner.pushed_by()).ok();
    let (key_id, write_limit) = (owner.key_id.clone(), *limit);
    let (project_cap, account) = (owner.license.project_cap(), account_id.clone());
    // Settings shows "last used" to the minute: no need to write it on every push.
    let touch_key = owner.last_used_at.is_none_or(|t| now - t >= 60_000);
    let features = owner.license.features();
    let custom_frameworks = features.contains(&tidemark_wire::Feature::CustomFrameworks);
    let drift_detection = features.contains(&tidemark_wire::Feature::DriftDetection);
    let outcome = state
        .db
        .detached(|db| async move {
            // Held until the write is done: the parsed push is in memory until then, even
            // when the client has stopped waiting.
            let _held = reservation;
            let ctx = PushContext {
                account_id: account,
                key_id,
                project_cap,
                write_limit,
                now,
                touch_key,
                raw_body_hash: Some(raw_body_hash),
                pushed_by,
                custom_frameworks,
                drift_detection,
            };
            record_push(&db, ctx, push).await
        })
        .await
        .map_err(|e| (ApiError::from(e), None))?;
    let tier = owner.license.tier.as_str();
    match outcome {
        PushOutcome::Appended(scan, rate) => {
            state
                .validator
                .activity
                .pushed(&owner.license.account_id, now);
            Ok(accepted(state, scan, Stored::Created, rate))
        }
        PushOutcome::Replayed(scan, rate) => Ok(accepted(state, scan, Stored::Replayed, rate)),
        PushOutcome::ProjectLimitReached { cap, rate } => {
            let projects = if cap == 1 { "project" } else { "projects" };
            Err((
                ApiError::ProjectLimitReached(format!(
                    "The {tier} tier allows {cap} active {projects}, and all are in use, so the \
                     new project {:?} cannot be created. Archive a project in the dashboard or \
                     upgrade your plan.",
                    label
                )),
                Some(rate),
            ))
        }
        PushOutcome::ProjectArchived { project_id, rate } => {
            Err((ApiError::ProjectArchived(project_id.into()), Some(rate)))
        }
        // Rotated or suspended after authentication, before the write: refused like a request
        // that came a moment later.
        PushOutcome::KeyRevoked => Err((ApiError::InvalidApiKey, None)),
        PushOutcome::LicenseInactive => Err((license_inactive_now(state, &account_id).await, None)),
        PushOutcome::RateLimited {
            retry_after_secs,
            rate,
        } => Err((rate_limited(limit, retry_after_secs), Some(rate))),
    }
}

/// A stored (or replayed) push: wake the senders it queued work for, and answer.
fn accepted(
    state: &AppState,
    scan: StoredScan,
    stored: Stored,
    rate: RateStatus,
) -> (PushResponse, Stored, RateStatus) {
    if scan.webhooks_queued {
        state.webhook_wakeup.notify_one();
    }
    if scan.alerts_queued {
        state.mail_wakeup.notify_one();
    }
    let dashboard_url = format!(
        "{}/projects/{}/scans/{}",
        state.config.http.dashboard_url, scan.project_id, scan.scan_id
    );
    let answer = PushResponse {
        project_id: scan.project_id.into(),
        scan_id: scan.scan_id.into(),
        score_delta: scan.score_delta,
        dashboard_url,
        gate: scan.gate,
        branch: scan.branch,
        pull_request: scan.pull_request,
        base: scan.base,
    };
    (answer, stored, rate)
}

/// What a push's body came to before the write transaction.
enum Admitted {
    /// A valid push, the room its body takes, and the SHA-256 of its bytes.
    Push(Box<ValidPush>, Reservation, String),
    /// While the write budget is spent: a byte-identical retry of one of the account's lines'
    /// latest scans, answered without parsing.
    Replayed(Box<StoredScan>, RateStatus),
}

/// The license may push, and then either the write budget is spent (only a byte-identical
/// retry is answered, everything else is `429` before the body is parsed or kept), or the
/// replica has room for the body and the body is a valid push.
async fn check_and_parse(
    state: &AppState,
    owner: &KeyOwner,
    headers: &HeaderMap,
    body: Body,
    limit: &RollingLimit,
    rate: RateStatus,
) -> Result<Admitted, ApiError> {
    if let Err(err) = ensure_dashboard_license(&owner.license).and_then(|()| require_json(headers))
    {
        discard_body(headers, body, MAX_BODY_BYTES).await;
        return Err(err);
    }
    let account_id = &owner.license.account_id;
    if rate.remaining == 0 {
        return spent_budget(state, account_id, limit, rate, body).await;
    }
    let reservation = match reserve_body(state, account_id, headers) {
        Ok(reservation) => reservation,
        Err(err) => {
            discard_body(headers, body, MAX_BODY_BYTES).await;
            return Err(err);
        }
    };
    let bytes = read_body(body, MAX_BODY_BYTES).await?;
    let raw_body_hash = tidemark_domain::secrets::sha256_hex(&bytes);
    let push = ValidPush::parse(&bytes).map_err(push_error)?;
    let push = keyless_checks(owner, push)?;
    Ok(Admitted::Push(Box::new(push), reservation, raw_body_hash))
}

fn push_error(e: PushError) -> ApiError {
    match e {
        PushError::Json(e) => json_error(e),
        PushError::TooManyFindings(n) => ApiError::PayloadTooLarge(format!(
            "A push may carry at most {MAX_FINDINGS} findings; this one has {n}. Split the scan or \
             push the failing findings only."
        )),
    }
}

/// A keyless CI push: only to the projects its publisher names, and its git context is what
/// the job's token vouched for (filled in where the body is silent; `422` naming the field
/// where the body says otherwise).
fn keyless_checks(owner: &KeyOwner, push: ValidPush) -> Result<ValidPush, ApiError> {
    let Via::Ci {
        projects,
        identity,
        trusted_git,
    } = &owner.via
    else {
        return Ok(push);
    };
    if !owner.may_use_project(push.label()) {
        return Err(ApiError::ProjectNotAllowed(format!(
            "The trusted publisher for {} may push to {}, not to project {:?}. Add the project \
             to the publisher in Settings, or push to one it names.",
            identity.repository,
            projects.as_deref().unwrap_or_default().join(", "),
            push.label()
        )));
    }
    let mut request = push.into_request();
    request.git = apply_trusted_git(trusted_git, request.git.take())
        .map_err(|e| ApiError::InvalidRequest(e.message))?;
    ValidPush::from_request(request).map_err(push_error)
}

/// The write budget is spent: the body is hashed as it streams, never kept or parsed, and
/// only a byte-identical retry of one of the account's lines' latest scans is answered (as
/// the replay it is); anything else is `429`.
async fn spent_budget(
    state: &AppState,
    account_id: &AccountId,
    limit: &RollingLimit,
    rate: RateStatus,
    body: Body,
) -> Result<Admitted, ApiError> {
    let refused = || rate_limited(limit, rate.reset_secs);
    let Some(raw) = hash_body(body, MAX_BODY_BYTES).await? else {
        // Longer than any push that was stored, so no retry of one.
        return Err(refused());
    };
    match tidemark_store::pushes::replay_by_raw_hash(&state.db, account_id, &raw).await? {
        Some(RawReplay::Replay(scan)) => Ok(Admitted::Replayed(scan, rate)),
        Some(RawReplay::Archived { project_id }) => {
            Err(ApiError::ProjectArchived(project_id.into()))
        }
        None => Err(refused()),
    }
}

/// `429 rate_limit_exceeded`: the account's write budget is spent for `retry_after_secs`.
fn rate_limited(limit: &RollingLimit, retry_after_secs: u64) -> ApiError {
    ApiError::RateLimited {
        limit: "writes",
        message: format!(
            "Dashboard writes are limited to {} per minute per account. Retry after \
             {retry_after_secs} seconds, and space out parallel CI jobs that push.",
            limit.limit
        ),
        retry_after_secs,
    }
}

/// Seconds a push refused for lack of room is told to wait: about how long a large push
/// takes to arrive and be written.
const BUSY_RETRY_SECS: u64 = 2;

/// Room for the body before a byte of it is read: what `Content-Length` announces, or the
/// largest push when it does not say.
fn reserve_body(
    state: &AppState,
    account_id: &AccountId,
    headers: &HeaderMap,
) -> Result<Reservation, ApiError> {
    let announced = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(MAX_BODY_BYTES as u64);
    state
        .push_budget
        .reserve(account_id, announced)
        .map_err(|busy| {
            let whose = match busy {
                Busy::Replica => "The server is receiving as many pushes as it can hold",
                Busy::Account => {
                    "This account is sending as many pushes at once as one account may"
                }
            };
            ApiError::ServerBusy {
                message: format!(
                    "{whose}. Retry after {BUSY_RETRY_SECS} seconds (a repeated push is \
                     answered like the first and costs nothing)."
                ),
                retry_after_secs: BUSY_RETRY_SECS,
            }
        })
}

/// The `403 license_inactive` for a license found inactive inside the write transaction,
/// explained as the license says now.
async fn license_inactive_now(state: &AppState, account_id: &AccountId) -> ApiError {
    match tidemark_store::licenses::find_license_for_account(&state.db, account_id).await {
        Ok(Some(license)) => ensure_active(&license).err(),
        _ => None,
    }
    .unwrap_or_else(|| {
        ApiError::LicenseInactive(
            "The license stopped being active while this push was being written; renew it, or \
             ask your operator to resume it."
                .into(),
        )
    })
}
