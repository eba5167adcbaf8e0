//! `/admin/v1/licenses…`: licences as the vendor's billing, CRM and support systems make,
//! find and change them, on the use cases the operator's `license` commands call.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use tidemark_domain::license::License;
use tidemark_domain::now_millis;
use tidemark_domain::paging::Keyset;
use tidemark_domain::text::Email;
use tidemark_domain::time::parse_rfc3339;
use tidemark_domain::vendor::{permissions_for, Permission};
use tidemark_services::licensing::{
    self, Creation, Edited, IdempotencyClaim, LicenseEdit, LicenseFilter, LicenseRequest,
    LicenseStateFilter,
};
use tidemark_services::ServiceError;
use tidemark_wire::admin::{
    AdminLicense, CreateLicenseRequest, CreatedLicense, LicensePage, OfflineFileRequest,
    StateChangeRequest, UpdateLicenseRequest,
};
use tidemark_wire::ErrorBody;

use super::caller::{caller, Caller};
use crate::http::body::{read_body, read_json, require_json};
use crate::http::error::ApiError;
use crate::state::AppState;

/// Request bodies here are small.
const BODY_LIMIT: usize = 64 * 1024;
const DEFAULT_LIMIT: i64 = 50;
const MAX_LIMIT: i64 = 200;
/// A suspension's reason, kept in the audit log.
const MAX_REASON_CHARS: usize = 500;

/// The licence as the API shows it now (licence events show it as it was).
pub fn view(l: &License) -> AdminLicense {
    tidemark_domain::license_events::license_view(l, now_millis())
}

fn etag(l: &License) -> String {
    format!("\"{}.{}\"", l.id, l.version)
}

/// The licence as JSON with its `ETag`.
fn answer(status: StatusCode, l: &License) -> Response {
    let mut res = (status, Json(view(l))).into_response();
    if let Ok(v) = HeaderValue::from_str(&etag(l)) {
        res.headers_mut().insert(header::ETAG, v);
    }
    res
}

fn no_license(id: &str) -> ApiError {
    ApiError::Missing(format!(
        "No licence {id:?}. `GET /admin/v1/licenses` lists them."
    ))
}

fn missing(id: &str) -> impl FnOnce(ServiceError) -> ApiError + '_ {
    move |err| match err {
        ServiceError::NotFound => no_license(id),
        other => other.into(),
    }
}

/// The version `If-Match` names: `None` when the header is absent or `*`; `422` when it is not
/// an entity tag at all; `412` when it is one but names no version of this licence (another
/// licence's tag, a weak one).
fn if_match(headers: &HeaderMap, id: &str) -> Result<Option<i64>, ApiError> {
    let Some(value) = headers.get(header::IF_MATCH) else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("").trim();
    if text == "*" {
        return Ok(None);
    }
    let quoted = text.strip_prefix("W/").unwrap_or(text);
    let Some(tag) = quoted
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .filter(|t| !t.is_empty())
    else {
        return Err(invalid(format!(
            "If-Match must be this licence's ETag as a GET answers it (\"{id}.<version>\"), \
             or *"
        )));
    };
    let weak = quoted.len() != text.len();
    tag.strip_prefix(id)
        .and_then(|t| t.strip_prefix('.'))
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|_| !weak)
        .map(Some)
        .ok_or_else(|| {
            ApiError::PreconditionFailed(format!(
                "If-Match names no version of licence {id}: send its ETag as a GET answers it \
                 (\"{id}.<version>\")."
            ))
        })
}

/// The optional `If-Match` header of a change.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[expect(
    dead_code,
    reason = "documents the header; handlers read it from the header map"
)]
struct IfMatch {
    /// The licence's `ETag` as a GET answered it (`"lcn_….<version>"`), or `*`.
    #[param(
        rename = "If-Match",
        pattern = "^(\\*|\"lcn_[A-Za-z0-9]{1,64}\\.[0-9]{1,18}\")$"
    )]
    if_match: Option<String>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct LicenseQuery {
    /// `active`, `expired` or `suspended`.
    #[param(pattern = "^(active|expired|suspended)$")]
    state: Option<String>,
    /// `individual`, `team`, `agency` or `enterprise`.
    #[param(pattern = "^(individual|team|agency|enterprise)$")]
    tier: Option<String>,
    /// The holder's e-mail address (case-insensitive, exact).
    #[param(max_length = 254)]
    email: Option<String>,
    /// The customer's account (`acct_…`).
    #[param(max_length = 64)]
    account_id: Option<String>,
    /// Only licences expiring before this RFC 3339 time (with `state=active`: the ones to
    /// renew).
    expires_before: Option<String>,
    /// `next_cursor` of the previous page.
    #[param(max_length = 128)]
    cursor: Option<String>,
    /// 1 to 200; default 50.
    #[param(minimum = 1, maximum = 200)]
    limit: Option<i64>,
}

fn invalid(text: impl Into<String>) -> ApiError {
    ApiError::InvalidRequest(text.into())
}

impl LicenseQuery {
    fn parse(uri: &Uri) -> Result<(LicenseFilter, Option<Keyset>, i64), ApiError> {
        let q = axum::extract::Query::<LicenseQuery>::try_from_uri(uri)
            .map(|q| q.0)
            .map_err(|e| invalid(format!("the query is not one this endpoint reads ({e})")))?;
        let state = match q.state.as_deref() {
            None => None,
            Some("active") => Some(LicenseStateFilter::Active),
            Some("expired") => Some(LicenseStateFilter::Expired),
            Some("suspended") => Some(LicenseStateFilter::Suspended),
            Some(_) => return Err(invalid("state must be active, expired or suspended")),
        };
        let tier =
            match q.tier.as_deref() {
                None => None,
                Some(t) => Some(tidemark_wire::Tier::parse(t).ok_or_else(|| {
                    invalid("tier must be individual, team, agency or enterprise")
                })?),
            };
        let email = match q.email.as_deref() {
            None => None,
            Some(e) => Some(Email::parse(e).map_err(|e| invalid(e.message))?),
        };
        let account_id = match q.account_id.as_deref() {
            None => None,
            Some(a) => Some(
                tidemark_wire::ids::AccountId::parse(a)
                    .ok_or_else(|| invalid("account_id must be an account id (acct_…)"))?,
            ),
        };
        let expires_before = q
            .expires_before
            .as_deref()
            .map(|t| parse_rfc3339("expires_before", t))
            .transpose()
            .map_err(invalid)?;
        let cursor = match q.cursor.as_deref() {
            None => None,
            Some(c) => Some(Keyset::parse(c, "lcn_").ok_or_else(|| {
                invalid("cursor must be a next_cursor this API returned, as it was given")
            })?),
        };
        let limit = match q.limit {
            None => DEFAULT_LIMIT,
            Some(l) if (1..=MAX_LIMIT).contains(&l) => l,
            Some(_) => return Err(invalid(format!("limit must be 1 to {MAX_LIMIT}"))),
        };
        let filter = LicenseFilter {
            state,
            tier,
            email: email.map(|e| e.as_str().to_owned()),
            account_id,
            expires_before,
        };
        Ok((filter, cursor, limit))
    }
}

/// List licences
///
/// Oldest first, a page at a time (keyset: a licence made meanwhile never shifts a page
/// already read); every filter given must match.
#[utoipa::path(
    get,
    path = "/admin/v1/licenses",
    tag = "licenses",
    security(("vendor_token" = [])),
    params(LicenseQuery),
    responses(
        (status = 200, description = "A page of licences", body = LicensePage),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: an unknown or malformed parameter, or a cursor this API did not return", body = ErrorBody),
        (status = 429, description = "`rate_limit_exceeded`", body = ErrorBody),
    )
)]
pub async fn list_licenses(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<LicensePage>, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Read])?;
    let (filter, cursor, limit) = LicenseQuery::parse(&uri)?;
    let after = cursor.as_ref().map(|c| (c.at, c.id.as_str()));
    let (rows, more) = licensing::page(&state.db, &filter, after, limit).await?;
    let next_cursor = more
        .then(|| {
            rows.last().map(|l| {
                Keyset {
                    at: l.created_at,
                    id: l.id.clone(),
                }
                .encode()
            })
        })
        .flatten();
    Ok(Json(LicensePage {
        licenses: rows.iter().map(view).collect(),
        next_cursor,
    }))
}

/// The `Idempotency-Key` header: 1 to 255 visible ASCII characters.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("");
    if text.is_empty() || text.len() > 255 || !text.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid(
            "Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID, an order id)",
        ));
    }
    Ok(Some(text.to_owned()))
}

/// Create a licence
///
/// Makes the customer's account and its licence; the holder becomes the account's first
/// admin. Send an `Idempotency-Key` (an order or checkout id): a retried call with the same
/// key and body answers the licence the first made (`Idempotent-Replayed: true`) and makes
/// none; the same key with another body is `422`. Keys are kept 24 hours per token. Entitlement
/// overrides and `max_projects` need the `sales` or `admin` role.
#[utoipa::path(
    post,
    path = "/admin/v1/licenses",
    tag = "licenses",
    security(("vendor_token" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "1 to 255 visible ASCII characters")),
    request_body(content = CreateLicenseRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "The licence, with its key (shown here only)", body = CreatedLicense,
            headers(("ETag" = String, description = "The licence's version"), ("Location" = String, description = "The licence"))),
        (status = 400, description = "`invalid_json`", body = ErrorBody),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 403, description = "`insufficient_role`", body = ErrorBody),
        (status = 413, description = "`payload_too_large`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: an unknown field (named), a bad value, or an Idempotency-Key used with another body", body = ErrorBody),
        (status = 429, description = "`rate_limit_exceeded`", body = ErrorBody),
    )
)]
pub async fn create_license(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::CreateLicense])?;
    let key = idempotency_key(&headers)?;
    require_json(&headers)?;
    let bytes = read_body(body, BODY_LIMIT).await?;
    let request: CreateLicenseRequest =
        tidemark_domain::input::parse_json(&bytes).map_err(crate::http::body::json_error)?;
    let mut needed = Vec::new();
    if !request.features_added.is_empty() || !request.features_removed.is_empty() {
        needed.push(Permission::SetFeatures);
    }
    if request.max_projects.is_some() {
        needed.push(Permission::SetMaxProjects);
    }
    if request.max_machines.is_some() {
        needed.push(Permission::SetSeats);
    }
    who.require(&needed)?;
    let license_request = LicenseRequest {
        email: Email::parse(&request.email).map_err(|e| invalid(e.message))?,
        tier: request.tier,
        expires_at: request
            .expires_at
            .as_deref()
            .map(|t| parse_rfc3339("expires_at", t))
            .transpose()
            .map_err(invalid)?
            .map(|at| {
                if at <= now_millis() {
                    Err(invalid("expires_at must be in the future"))
                } else {
                    Ok(at)
                }
            })
            .transpose()?,
        max_projects: request.max_projects,
        max_machines: request
            .max_machines
            .or_else(|| state.config.limits.default_seats.for_tier(request.tier)),
        features_added: request.features_added,
        features_removed: request.features_removed,
    };
    let claim = key.map(|key| IdempotencyClaim {
        token_id: who.token.id.clone(),
        key,
        request_sha256: tidemark_domain::secrets::sha256_hex(&bytes),
    });
    let created = licensing::create_once(
        &state.db,
        &state.license_keys,
        license_request,
        claim,
        &who.audit,
    )
    .await
    .map_err(|err| match err {
        ServiceError::Conflict(text) => ApiError::InvalidRequest(text),
        other => other.into(),
    })?;
    let (made, replayed) = match created {
        Creation::Created(made) => (made, false),
        Creation::Earlier(made) => (made, true),
    };
    let license = licensing::find(&state.db, &made.license_id).await?;
    let mut res = (
        StatusCode::CREATED,
        Json(CreatedLicense {
            license: view(&license),
            license_key: made.license_key,
        }),
    )
        .into_response();
    let h = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&etag(&license)) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&format!("/admin/v1/licenses/{}", license.id)) {
        h.insert(header::LOCATION, v);
    }
    if replayed {
        h.insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(res)
}

/// A licence
///
/// With its `ETag`, for a change that must not overwrite another (`If-Match`).
#[utoipa::path(
    get,
    path = "/admin/v1/licenses/{license_id}",
    tag = "licenses",
    security(("vendor_token" = [])),
    params(("license_id" = String, Path, description = "`lcn_…`")),
    responses(
        (status = 200, description = "The licence", body = AdminLicense,
            headers(("ETag" = String, description = "The licence's version"))),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
        (status = 429, description = "`rate_limit_exceeded`", body = ErrorBody),
    )
)]
pub async fn get_license(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Read])?;
    let license = licensing::find(&state.db, &id)
        .await
        .map_err(missing(&id))?;
    Ok(answer(StatusCode::OK, &license))
}

/// Reads the licence, checks the caller may make `edit` of it, and applies it guarded by the
/// version read (and by `If-Match`, when sent). Without `If-Match`, a licence changed between
/// the read and the write is read and checked again, a few times, before `409`.
async fn apply(
    state: &AppState,
    who: &Caller,
    id: &str,
    asked_version: Option<i64>,
    edit: LicenseEdit,
) -> Result<Response, ApiError> {
    for _ in 0..3 {
        let current = licensing::find(&state.db, id).await.map_err(missing(id))?;
        if asked_version.is_some_and(|v| v != current.version) {
            return Err(stale(id));
        }
        who.require(&permissions_for(&edit, &current, now_millis()))?;
        let edited = licensing::edit_license(
            &state.db,
            id,
            Some(current.version),
            edit.clone(),
            &who.audit,
        )
        .await
        .map_err(missing(id))?;
        match edited {
            Edited::Done(license) => return Ok(answer(StatusCode::OK, &license)),
            Edited::Stale(_) if asked_version.is_some() => return Err(stale(id)),
            Edited::Stale(_) => continue,
        }
    }
    Err(ApiError::Conflict(format!(
        "Licence {id} kept changing while this call was being answered; nothing was changed. \
         Read it again and retry."
    )))
}

fn stale(id: &str) -> ApiError {
    ApiError::PreconditionFailed(format!(
        "Licence {id} has changed since the ETag you sent: nothing was changed. Read it again \
         (GET answers its current ETag) and retry."
    ))
}

/// Change a licence
///
/// Only the fields sent change; the answer is the licence as it now is. Validation, verdicts
/// and every feature check follow at once (within the validation cache's two seconds). With
/// `If-Match` (the ETag of a GET), a licence changed since is `412` and nothing changes.
/// Tier and expiry: `sales`, `billing`, `admin`; overrides and `max_projects`: `sales`,
/// `admin`; `support` may move the expiry later by at most 30 days.
#[utoipa::path(
    patch,
    path = "/admin/v1/licenses/{license_id}",
    tag = "licenses",
    security(("vendor_token" = [])),
    params(("license_id" = String, Path, description = "`lcn_…`"), IfMatch),
    request_body(content = UpdateLicenseRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The licence as it now is", body = AdminLicense,
            headers(("ETag" = String, description = "The licence's new version"))),
        (status = 400, description = "`invalid_json`", body = ErrorBody),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 403, description = "`insufficient_role`: the message names the role the change needs", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
        (status = 409, description = "`conflict`: changed by another call meanwhile (no If-Match was sent); retry", body = ErrorBody),
        (status = 412, description = "`precondition_failed`: If-Match names another version of the licence", body = ErrorBody),
        (status = 413, description = "`payload_too_large`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: an unknown field (named), a bad value, or a feature both added and removed", body = ErrorBody),
        (status = 429, description = "`rate_limit_exceeded`", body = ErrorBody),
    )
)]
pub async fn update_license(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Read])?;
    let request: UpdateLicenseRequest = read_json(&headers, body, BODY_LIMIT).await?;
    let version = if_match(&headers, &id)?;
    let edit = LicenseEdit {
        tier: request.tier,
        expires_at: request
            .expires_at
            .as_deref()
            .map(|t| parse_rfc3339("expires_at", t))
            .transpose()
            .map_err(invalid)?,
        max_projects: request.max_projects,
        max_machines: request.max_machines,
        seat_release_after_days: request.seat_release_after_days,
        features_added: request.features_added.map(dedup),
        features_removed: request.features_removed.map(dedup),
        suspended: None,
    };
    if edit.is_empty() {
        return Err(invalid(
            "nothing to change: send tier, expires_at, max_projects, max_machines, \
             seat_release_after_days, features_added or features_removed",
        ));
    }
    apply(&state, &who, &id, version, edit).await
}

fn dedup(mut features: Vec<tidemark_wire::Feature>) -> Vec<tidemark_wire::Feature> {
    features.sort();
    features.dedup();
    features
}

async fn set_suspended(
    state: AppState,
    peer: SocketAddr,
    id: String,
    headers: HeaderMap,
    body: Body,
    suspend: bool,
) -> Result<Response, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[if suspend {
        Permission::Suspend
    } else {
        Permission::Resume
    }])?;
    let request: StateChangeRequest = read_json(&headers, body, BODY_LIMIT).await?;
    let version = if_match(&headers, &id)?;
    let reason = request.reason.trim();
    if reason.is_empty()
        || reason.chars().count() > MAX_REASON_CHARS
        || reason.chars().any(char::is_control)
    {
        return Err(invalid(format!(
            "reason must be 1 to {MAX_REASON_CHARS} characters without control characters"
        )));
    }
    let edit = LicenseEdit {
        suspended: Some((suspend, Some(reason.to_owned()))),
        ..LicenseEdit::default()
    };
    apply(&state, &who, &id, version, edit).await
}

/// Suspend a licence
///
/// Validation answers `valid: false` and pushes are refused until it is resumed; the reason
/// is kept in the audit log. Suspending a suspended licence changes nothing.
#[utoipa::path(
    post,
    path = "/admin/v1/licenses/{license_id}/suspend",
    tag = "licenses",
    security(("vendor_token" = [])),
    params(("license_id" = String, Path, description = "`lcn_…`"), IfMatch),
    request_body(content = StateChangeRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The licence as it now is", body = AdminLicense),
        (status = 400, description = "`invalid_json`", body = ErrorBody),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 403, description = "`insufficient_role`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
        (status = 409, description = "`conflict`: changed by other calls meanwhile, again and again (no If-Match was sent); retry", body = ErrorBody),
        (status = 412, description = "`precondition_failed`: If-Match names another version", body = ErrorBody),
        (status = 413, description = "`payload_too_large`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
        (status = 422, description = "`invalid_request`", body = ErrorBody),
    )
)]
pub async fn suspend_license(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    set_suspended(state, peer, id, headers, body, true).await
}

/// Resume a licence
///
/// Lifts a suspension; the reason is kept in the audit log.
#[utoipa::path(
    post,
    path = "/admin/v1/licenses/{license_id}/resume",
    tag = "licenses",
    security(("vendor_token" = [])),
    params(("license_id" = String, Path, description = "`lcn_…`"), IfMatch),
    request_body(content = StateChangeRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The licence as it now is", body = AdminLicense),
        (status = 400, description = "`invalid_json`", body = ErrorBody),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 403, description = "`insufficient_role`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
        (status = 409, description = "`conflict`: changed by other calls meanwhile, again and again (no If-Match was sent); retry", body = ErrorBody),
        (status = 412, description = "`precondition_failed`: If-Match names another version", body = ErrorBody),
        (status = 413, description = "`payload_too_large`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
        (status = 422, description = "`invalid_request`", body = ErrorBody),
    )
)]
pub async fn resume_license(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    set_suspended(state, peer, id, headers, body, false).await
}

/// Resend a licence
///
/// Mails the holder every licence registered to their address (key, tier, expiry), through
/// the same outbox as the scanner's resend.
#[utoipa::path(
    post,
    path = "/admin/v1/licenses/{license_id}/resend",
    tag = "licenses",
    security(("vendor_token" = [])),
    params(("license_id" = String, Path, description = "`lcn_…`")),
    responses(
        (status = 202, description = "Queued"),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 403, description = "`insufficient_role`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
    )
)]
pub async fn resend_license(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Resend])?;
    licensing::resend(&state.db, &id, &who.audit)
        .await
        .map_err(missing(&id))?;
    state.mail_wakeup.notify_one();
    Ok(StatusCode::ACCEPTED)
}

/// An offline licence file
///
/// A signed file for an air-gapped machine (`tidemark activate --offline FILE`), running
/// `days` days (never past the licence's expiry), bound to `machine` when given. It runs until
/// it expires: there is no revoking it.
#[utoipa::path(
    post,
    path = "/admin/v1/licenses/{license_id}/offline-file",
    tag = "licenses",
    security(("vendor_token" = [])),
    params(("license_id" = String, Path, description = "`lcn_…`")),
    request_body(content = OfflineFileRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The file", body = tidemark_wire::verdict::OfflineLicenseFile),
        (status = 400, description = "`invalid_json`", body = ErrorBody),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 403, description = "`insufficient_role`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
        (status = 413, description = "`payload_too_large`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: days out of range or past the expiry, a malformed machine, or an inactive licence", body = ErrorBody),
    )
)]
pub async fn offline_file(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<tidemark_wire::verdict::OfflineLicenseFile>, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::OfflineFile])?;
    let request: OfflineFileRequest = read_json(&headers, body, BODY_LIMIT).await?;
    let machine = request
        .machine
        .as_deref()
        .map(tidemark_domain::signing::MachineFingerprint::parse)
        .transpose()
        .map_err(ApiError::InvalidRequest)?;
    licensing::find(&state.db, &id)
        .await
        .map_err(missing(&id))?;
    let file = licensing::issue_offline_file(
        &state.db,
        state.signer.clone(),
        state.config.http.base_url.clone(),
        id,
        machine,
        request.days,
        who.audit.clone(),
    )
    .await?
    .map_err(|err| match crate::telemetry::fault_in(&err) {
        Some(_) => ApiError::internal(err),
        None => match err.downcast_ref::<tidemark_domain::seats::SeatsFull>() {
            Some(full) => ApiError::SeatLimitReached(full.to_string()),
            None => ApiError::InvalidRequest(format!("{err:#}")),
        },
    })?;
    Ok(Json(file))
}
