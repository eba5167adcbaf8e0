//! `/v1/projects/{project_id}/findings…` and `/v1/projects/{project_id}/gate`: a project's
//! tracked findings and their triage, and its quality gate, for scripts and CI. Reads take
//! the API key or a keyless CI push token (scoped like exports); changes take the API key
//! only, so a branch's CI job cannot loosen its own gate or wave its findings through.

use std::net::SocketAddr;
use tidemark_wire::ids::{AccountId, FindingId, ProjectId};

use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, Uri};
use axum::Json;
use serde::Deserialize;
use tidemark_domain::audit::{Actor, AuditContext};
use tidemark_domain::findings::{triage_batch, FindingsCursor, TriageChange};
use tidemark_domain::gate::QualityGate;
use tidemark_domain::now_millis;
use tidemark_services::findings::TrackedQuery;
use tidemark_services::lines::{self, LineRef, NoLine};
use tidemark_services::triage::Triager;
use tidemark_services::ServiceError;
use tidemark_services::{findings, projects};
use tidemark_store::findings::TriageEach;
use tidemark_store::licenses::{KeyOwner, Via};
use tidemark_wire::findings::{
    BatchTriageRequest, BatchTriageResponse, FindingState, FindingsPage, TrackedFinding,
    TriageRequest,
};
use tidemark_wire::{ErrorBody, ProjectGate, Severity};

use super::exports::reader;
use super::extract::read_json;
use crate::http::client_ip::client_ip;
use crate::http::error::ApiError;
use crate::state::AppState;

const BODY_LIMIT: usize = 64 * 1024;
const DEFAULT_LIMIT: i64 = 100;
const MAX_LIMIT: i64 = 500;

/// The query of a findings listing.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FindingsQuery {
    /// A branch name, or `pr:<number>` for a pull request; default: the project's default branch.
    #[param(
        min_length = 1,
        max_length = 255,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
    )]
    branch: Option<String>,
    /// Default: all three.
    state: Option<FindingState>,
    /// Default: all.
    severity: Option<Severity>,
    /// The previous page's `next_cursor`, as given (opaque).
    #[param(pattern = "^[A-Za-z0-9_-]{1,128}$")]
    cursor: Option<String>,
    /// Default 100.
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
}

fn invalid(message: String) -> ApiError {
    ApiError::InvalidRequest(message)
}

impl FindingsQuery {
    fn parse(uri: &Uri) -> Result<FindingsQuery, ApiError> {
        axum::extract::Query::<FindingsQuery>::try_from_uri(uri)
            .map(|q| q.0)
            .map_err(|e| {
                invalid(format!(
                    "the query is not one this endpoint reads ({e}): state is open, triaged or \
                     fixed; severity critical, high, medium or low; limit 1-500"
                ))
            })
    }

    fn tracked_query(&self) -> Result<TrackedQuery, ApiError> {
        let limit = match self.limit {
            None => DEFAULT_LIMIT,
            Some(l) if (1..=MAX_LIMIT).contains(&l) => l,
            Some(_) => {
                return Err(invalid(format!(
                    "limit must be a whole number from 1 to {MAX_LIMIT}"
                )))
            }
        };
        let after = match self.cursor.as_deref() {
            None => None,
            Some(c) => Some(FindingsCursor::parse(c).ok_or_else(|| {
                invalid("cursor must be a next_cursor this API returned, as it was given".into())
            })?),
        };
        Ok(TrackedQuery {
            state: self.state,
            severity: self.severity,
            after,
            limit,
        })
    }
}

/// Who changes something through `/v1`: the API key's owner, named by the key's prefix.
pub(super) fn writer_audit(
    state: &AppState,
    owner: &KeyOwner,
    peer: SocketAddr,
    headers: &HeaderMap,
) -> Result<AuditContext, ApiError> {
    let Via::ApiKey { prefix, .. } = &owner.via else {
        return Err(ApiError::ApiKeyRequired);
    };
    Ok(AuditContext {
        actor: Actor::ApiKey {
            key_prefix: prefix.clone(),
        },
        client_ip: Some(
            client_ip(peer.ip(), headers, &state.config.http.trusted_proxies).to_string(),
        ),
        at: now_millis(),
    })
}

/// A project's tracked findings
///
/// Each finding is one rule on one resource, followed across its branch's scans: when it was
/// first seen, last seen and fixed (the first later scan without it failing), how often it came
/// back, and its triage. Most severe first, then oldest first.
#[utoipa::path(
    get,
    path = "/v1/projects/{project_id}/findings",
    tag = "findings",
    security(("api_key" = []), ("ci_push_token" = [])),
    params(("project_id" = String, Path, description = "The project's id (from a push response) or its label"), FindingsQuery),
    responses(
        (status = 200, description = "A page of findings", body = FindingsPage),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier` or `license_inactive`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such project (or branch) in the key's account", body = ErrorBody),
        (status = 422, description = "`invalid_request`: an unknown state or severity, a limit outside 1–500, a cursor this API did not give, or a branch no push could name", body = ErrorBody),
    )
)]
pub async fn list_findings(
    State(state): State<AppState>,
    Path(project_id): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<FindingsPage>, ApiError> {
    let query = FindingsQuery::parse(&uri)?;
    let tracked = query.tracked_query()?;
    let branch = query.branch.as_deref();
    if let Some(branch) = branch {
        // What a push could have named; anything else (control characters, megabytes) is
        // refused before the database sees it.
        tidemark_domain::input::bounded_text("branch", branch, 255)
            .map_err(|e| ApiError::InvalidRequest(e.message))?;
    }
    let (owner, project_id) = reader(&state, &headers, &project_id).await?;
    let account_id = &owner.license.account_id;
    let line = line_named(&state, account_id, &project_id, branch).await?;
    let now = now_millis();
    let (rows, next_cursor) = findings::page(&state.db, &line.id, &tracked, now).await?;
    Ok(Json(FindingsPage {
        findings: rows.iter().map(|r| r.to_wire(now)).collect(),
        next_cursor,
    }))
}

/// One tracked finding
#[utoipa::path(
    get,
    path = "/v1/projects/{project_id}/findings/{finding_id}",
    tag = "findings",
    security(("api_key" = []), ("ci_push_token" = [])),
    params(
        ("project_id" = String, Path, description = "The project's id (from a push response) or its label"),
        ("finding_id" = String, Path, description = "`fnd_…`, from a findings listing"),
    ),
    responses(
        (status = 200, description = "The finding", body = TrackedFinding),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier` or `license_inactive`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such project or finding in the key's account", body = ErrorBody),
    )
)]
pub async fn get_finding(
    State(state): State<AppState>,
    Path((project_id, finding_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Json<TrackedFinding>, ApiError> {
    let (owner, project_id) = reader(&state, &headers, &project_id).await?;
    let Some(finding_id) = FindingId::parse(&finding_id) else {
        return Err(ApiError::no_finding(&project_id, &finding_id));
    };
    let row = findings::find(
        &state.db,
        &owner.license.account_id,
        &project_id,
        &finding_id,
    )
    .await
    .map_err(|err| match err {
        ServiceError::NotFound => ApiError::no_finding(&project_id, &finding_id),
        other => other.into(),
    })?;
    Ok(Json(row.to_wire(now_millis())))
}

/// The API key's owner and how the audit log names them, or why they may not change things.
async fn changer(
    state: &AppState,
    peer: SocketAddr,
    headers: &HeaderMap,
    project: &str,
) -> Result<(KeyOwner, AuditContext, ProjectId), ApiError> {
    let (owner, project_id) = reader(state, headers, project).await?;
    let audit = writer_audit(state, &owner, peer, headers)?;
    Ok((owner, audit, project_id))
}

async fn change_triage(
    state: &AppState,
    (owner, audit, project_id): (KeyOwner, AuditContext, ProjectId),
    finding_id: &str,
    change: Option<TriageChange>,
) -> Result<Json<TrackedFinding>, ApiError> {
    let Some(finding_id) = FindingId::parse(finding_id) else {
        return Err(ApiError::no_finding(&project_id, finding_id));
    };
    let row = tidemark_services::triage::set_one(
        &state.db,
        &owner.license.account_id,
        &project_id,
        &finding_id,
        change,
        Triager::ApiKey,
        &audit,
    )
    .await
    .map_err(|err| match err {
        ServiceError::NotFound => ApiError::no_finding(&project_id, &finding_id),
        other => other.into(),
    })?;
    Ok(Json(row.to_wire(now_millis())))
}

/// Triage a finding
///
/// Sets the finding aside as `accepted_risk`, `false_positive` or `wont_fix`, with a reason
/// and an optional expiry (then it is open again). A triaged finding never counts as new to
/// the gate, stays triaged in later scans that still have it, and is exported in SARIF as a
/// suppression. Replaces any earlier triage; in the audit log as `api-key:<prefix>`.
#[utoipa::path(
    put,
    path = "/v1/projects/{project_id}/findings/{finding_id}/triage",
    tag = "findings",
    security(("api_key" = [])),
    params(
        ("project_id" = String, Path, description = "The project's id (from a push response) or its label"),
        ("finding_id" = String, Path, description = "`fnd_…`, from a findings listing"),
    ),
    request_body(content = TriageRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The finding, triaged", body = TrackedFinding),
        (status = 400, description = "`invalid_json`", body = ErrorBody),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier`, `license_inactive`, or `api_key_required`: a CI push token only pushes and reads", body = ErrorBody),
        (status = 404, description = "`not_found`: no such project or finding in the key's account", body = ErrorBody),
        (status = 413, description = "`payload_too_large`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: an unknown state, a blank or over-long reason, or an expiry that is not a future date or time", body = ErrorBody),
    )
)]
pub async fn put_triage(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path((project_id, finding_id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<TrackedFinding>, ApiError> {
    let who = changer(&state, peer, &headers, &project_id).await?;
    // No such finding is 404 whatever the body says.
    // An unknown finding is "not found" before its body is read.
    let found = match FindingId::parse(&finding_id) {
        Some(id) => findings::find(&state.db, &who.0.license.account_id, &who.2, &id)
            .await
            .map(Some)
            .or_else(|err| match err {
                ServiceError::NotFound => Ok(None),
                other => Err(other),
            })?,
        None => None,
    };
    if found.is_none() {
        return Err(ApiError::no_finding(&who.2, &finding_id));
    }
    let request: TriageRequest = read_json(&headers, body, BODY_LIMIT).await?;
    let change = triage_change(&request)?;
    change_triage(&state, who, &finding_id, Some(change)).await
}

fn triage_change(request: &TriageRequest) -> Result<TriageChange, ApiError> {
    // A form's empty date field means "no expiry"; in JSON that is a missing `expires_at` (or
    // null), and an empty string is not a date the schema allows.
    if request
        .expires_at
        .as_deref()
        .is_some_and(|e| e.trim().is_empty())
    {
        return Err(ApiError::InvalidRequest(
            "expires_at must be a date (2027-03-01) or an RFC 3339 time; leave it out for no expiry"
                .to_owned(),
        ));
    }
    TriageChange::parse(
        request.state,
        &request.reason,
        request.expires_at.as_deref(),
        now_millis(),
    )
    .map_err(|e| ApiError::InvalidRequest(e.message))
}

/// Triage several findings
///
/// One triage (state, reason, optional expiry) for up to 100 findings of the project, as if
/// each were triaged on its own: each has its own history entry and audit event. All or
/// nothing: when any id is not one of the project's findings the answer is `404` naming it
/// and nothing changes. Replaces earlier triages, as for one finding.
#[utoipa::path(
    post,
    path = "/v1/projects/{project_id}/findings/triage",
    tag = "findings",
    security(("api_key" = [])),
    params(
        ("project_id" = String, Path, description = "The project's id (from a push response) or its label"),
    ),
    request_body(content = BatchTriageRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The findings, triaged, in the order named", body = BatchTriageResponse),
        (status = 400, description = "`invalid_json`", body = ErrorBody),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier`, `license_inactive`, or `api_key_required`: a CI push token only pushes and reads", body = ErrorBody),
        (status = 404, description = "`not_found`: no such project, or one of the ids is no finding of it (nothing was changed)", body = ErrorBody),
        (status = 413, description = "`payload_too_large`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: no ids, more than 100, one that is not a finding id, an unknown state, a blank or over-long reason, or an expiry that is not a future date or time", body = ErrorBody),
    )
)]
pub async fn triage_many(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(project_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<BatchTriageResponse>, ApiError> {
    let (owner, audit, project_id) = changer(&state, peer, &headers, &project_id).await?;
    let request: BatchTriageRequest = read_json(&headers, body, BODY_LIMIT).await?;
    let named: Vec<String> = request.finding_ids.iter().map(|id| id.0.clone()).collect();
    let ids = triage_batch(&named).map_err(|e| ApiError::InvalidRequest(e.message))?;
    let change = triage_change(&request.triage())?;
    let each = tidemark_services::triage::set_many(
        &state.db,
        &owner.license.account_id,
        &project_id,
        ids,
        Some(change),
        Triager::ApiKey,
        &audit,
    )
    .await?;
    let now = now_millis();
    let mut findings = Vec::with_capacity(each.len());
    for (id, outcome) in each {
        match outcome {
            TriageEach::Done(row) | TriageEach::Refused(row) => findings.push(row.to_wire(now)),
            TriageEach::NotFound => return Err(ApiError::no_finding(&project_id, &id)),
        }
    }
    Ok(Json(BatchTriageResponse { findings }))
}

/// Undo a finding's triage
///
/// The finding is open again (or stays fixed); the change is in its history and the audit log.
#[utoipa::path(
    delete,
    path = "/v1/projects/{project_id}/findings/{finding_id}/triage",
    tag = "findings",
    security(("api_key" = [])),
    params(
        ("project_id" = String, Path, description = "The project's id (from a push response) or its label"),
        ("finding_id" = String, Path, description = "`fnd_…`, from a findings listing"),
    ),
    responses(
        (status = 200, description = "The finding, untriaged", body = TrackedFinding),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier`, `license_inactive`, or `api_key_required`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such project or finding in the key's account", body = ErrorBody),
    )
)]
pub async fn delete_triage(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path((project_id, finding_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Json<TrackedFinding>, ApiError> {
    let who = changer(&state, peer, &headers, &project_id).await?;
    change_triage(&state, who, &finding_id, None).await
}

fn project_gate(gate: Option<&QualityGate>) -> ProjectGate {
    ProjectGate {
        min_score: gate.and_then(QualityGate::min_score),
        max_drop: gate.and_then(QualityGate::max_drop),
        new_findings_at: gate.and_then(QualityGate::new_findings_at),
    }
}

/// A project's quality gate
///
/// Its conditions; all null when the project has no gate (every push passes).
#[utoipa::path(
    get,
    path = "/v1/projects/{project_id}/gate",
    tag = "gates",
    security(("api_key" = []), ("ci_push_token" = [])),
    params(("project_id" = String, Path, description = "The project's id (from a push response) or its label")),
    responses(
        (status = 200, description = "The gate", body = ProjectGate),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier` or `license_inactive`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such project in the key's account", body = ErrorBody),
    )
)]
pub async fn get_gate(
    State(state): State<AppState>,
    Path(project_id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<ProjectGate>, ApiError> {
    let (owner, project_id) = reader(&state, &headers, &project_id).await?;
    let account_id = &owner.license.account_id;
    let missing = |err| match err {
        ServiceError::NotFound => ApiError::no_project(&project_id),
        other => other.into(),
    };
    projects::find(&state.db, account_id, &project_id)
        .await
        .map_err(missing)?;
    let gate = projects::gate(&state.db, account_id, &project_id).await?;
    Ok(Json(project_gate(gate.as_ref())))
}

/// Set a project's quality gate
///
/// Replaces every condition: a null or missing one is not checked; all null removes the gate.
/// Scans already pushed keep their verdicts; the next push is judged by this. In the audit log
/// as `api-key:<prefix>`.
#[utoipa::path(
    put,
    path = "/v1/projects/{project_id}/gate",
    tag = "gates",
    security(("api_key" = [])),
    params(("project_id" = String, Path, description = "The project's id (from a push response) or its label")),
    request_body(content = ProjectGate, content_type = "application/json"),
    responses(
        (status = 200, description = "The gate as now set", body = ProjectGate),
        (status = 400, description = "`invalid_json`", body = ErrorBody),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier`, `license_inactive`, or `api_key_required`: a CI push token cannot change a gate", body = ErrorBody),
        (status = 404, description = "`not_found`: no such project in the key's account", body = ErrorBody),
        (status = 413, description = "`payload_too_large`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: a score outside 0–100, an unknown severity or field", body = ErrorBody),
    )
)]
pub async fn put_gate(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(project_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<ProjectGate>, ApiError> {
    let (owner, audit, project_id) = changer(&state, peer, &headers, &project_id).await?;
    let request: ProjectGate = read_json(&headers, body, BODY_LIMIT).await?;
    let gate = QualityGate::new(request.min_score, request.max_drop, request.new_findings_at)
        .map_err(|e| ApiError::InvalidRequest(e.to_string()))?;
    projects::set_gate(
        &state.db,
        &owner.license.account_id,
        &project_id,
        gate,
        &audit,
    )
    .await
    .map_err(|err| match err {
        ServiceError::NotFound => ApiError::no_project(&project_id),
        other => other.into(),
    })?;
    Ok(Json(project_gate(gate.as_ref())))
}

/// The line a project read names, or `not_found` saying whether the project or its branch is
/// missing.
pub(super) async fn line_named(
    state: &AppState,
    account_id: &AccountId,
    project_id: &ProjectId,
    branch: Option<&str>,
) -> Result<LineRef, ApiError> {
    match lines::named(&state.db, account_id, project_id, branch).await? {
        Ok(line) => Ok(line),
        Err(NoLine::Branch) => Err(ApiError::no_branch(project_id, branch)),
        Err(NoLine::Project) => Err(ApiError::no_project(project_id)),
    }
}
