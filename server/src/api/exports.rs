//! `GET /v1/projects/{project_id}/…`: a scan's findings as SARIF 2.1.0 or CSV and a project's
//! history as CSV, for CI with its API key. Scoped to the key's account: another account's
//! ids are `404`, like ids that do not exist.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use tidemark_services::ServiceError;
use tidemark_store::licenses::KeyOwner;
use tidemark_wire::ids::{ProjectId, ScanId};
use tidemark_wire::ErrorBody;

use super::extract::{authenticate, ensure_dashboard_license};
use crate::http::download::serve;
use crate::http::error::ApiError;
use crate::state::AppState;
use tidemark_services::exports::{self as export, FindingsFormat};

/// A CSV file (RFC 4180, UTF-8, a header row first).
#[derive(utoipa::ToSchema)]
#[schema(value_type = String)]
#[expect(
    dead_code,
    reason = "only describes the response in the OpenAPI document"
)]
struct CsvFile(String);

/// A SARIF 2.1.0 log: the schema at https://json.schemastore.org/sarif-2.1.0.json (OASIS).
#[derive(utoipa::ToSchema)]
#[schema(value_type = Object)]
#[expect(
    dead_code,
    reason = "only describes the response in the OpenAPI document"
)]
struct SarifLog(serde_json::Value);

/// The same gate as pushing: a live license with the hosted dashboard; a keyless CI push
/// token reads only the projects its publisher may push (`404` for the others, as for
/// another account's). `project` is a project id or, for people and scripts that know the
/// label, the label; the answer carries the id.
pub(super) async fn reader(
    state: &AppState,
    headers: &HeaderMap,
    project: &str,
) -> Result<(KeyOwner, ProjectId), ApiError> {
    let owner = authenticate(&state.db, headers).await?;
    ensure_dashboard_license(&owner.license)?;
    let project_id = tidemark_services::projects::named_by(&state.db, &owner, project)
        .await
        .map_err(|err| match err {
            ServiceError::NotFound => ApiError::no_project(project),
            other => other.into(),
        })?;
    Ok((owner, project_id))
}

async fn findings(
    state: &AppState,
    headers: &HeaderMap,
    project_id: &str,
    scan_id: &str,
    format: FindingsFormat,
) -> Result<Response, ApiError> {
    let (owner, project_id) = reader(state, headers, project_id).await?;
    let scan_id = ScanId::parse(scan_id).ok_or_else(|| ApiError::no_scan(&project_id, scan_id))?;
    match export::scan_findings(
        &state.db,
        &owner.license.account_id,
        &project_id,
        &scan_id,
        format,
        &state.config.http.dashboard_url,
    )
    .await?
    {
        export::ScanFindings::File(file) => Ok(serve(file)),
        export::ScanFindings::Missing => Err(ApiError::no_scan(&project_id, &scan_id)),
        export::ScanFindings::Thinned => Err(ApiError::ScanThinned),
    }
}

/// A scan's findings as SARIF
///
/// One SARIF 2.1.0 run: a result per finding (`kind` `fail` for FAIL and WARN, `review` for
/// ERROR, `pass`, `notApplicable` for SKIP; `level` from the severity: critical and high
/// `error`, medium `warning`, low `note`), located at its resource as a logical location,
/// with `partialFingerprints["tidemarkFinding/v1"]` equal for the same rule and resource in
/// every scan. Rules are the scan's rule ids, tagged with their framework.
#[utoipa::path(
    get,
    path = "/v1/projects/{project_id}/scans/{scan_id}/findings.sarif",
    tag = "exports",
    security(("api_key" = []), ("ci_push_token" = [])),
    params(
        ("project_id" = String, Path, description = "From a push response"),
        ("scan_id" = String, Path, description = "From a push response"),
    ),
    responses(
        (status = 200, description = "The SARIF log (a download)", content_type = "application/sarif+json", body = SarifLog),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier` or `license_inactive`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such project or scan in the key's account", body = ErrorBody),
        (status = 410, description = "`scan_thinned`: housekeeping removed this scan's findings (its row stays in the history)", body = ErrorBody),
    )
)]
pub async fn get_findings_sarif(
    State(state): State<AppState>,
    Path((project_id, scan_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    findings(
        &state,
        &headers,
        &project_id,
        &scan_id,
        FindingsFormat::Sarif,
    )
    .await
}

/// A scan's findings as CSV
///
/// RFC 4180 CSV with a header row: `rule_id,resource,status,severity,message,remediation`,
/// in the scanner's order. A text cell that a spreadsheet would run as a formula (starting
/// with `=`, `+`, `-`, `@`, tab or carriage return) starts with an apostrophe.
#[utoipa::path(
    get,
    path = "/v1/projects/{project_id}/scans/{scan_id}/findings.csv",
    tag = "exports",
    security(("api_key" = []), ("ci_push_token" = [])),
    params(
        ("project_id" = String, Path, description = "From a push response"),
        ("scan_id" = String, Path, description = "From a push response"),
    ),
    responses(
        (status = 200, description = "The findings (a download)", content_type = "text/csv", body = CsvFile),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier` or `license_inactive`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such project or scan in the key's account", body = ErrorBody),
        (status = 410, description = "`scan_thinned`: housekeeping removed this scan's findings (its row stays in the history)", body = ErrorBody),
    )
)]
pub async fn get_findings_csv(
    State(state): State<AppState>,
    Path((project_id, scan_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    findings(&state, &headers, &project_id, &scan_id, FindingsFormat::Csv).await
}

/// A project's history as CSV
///
/// Every scan, oldest first, with a header row:
/// `scanned_at,scan_id,score,score_delta,passed,failed,critical,high,medium,low,gate_status,gate_reasons,received_at,branch,pull_request,commit`
/// (times in RFC 3339 UTC; `gate_reasons` joined with `; `). Streamed: a long history starts
/// arriving at once.
#[utoipa::path(
    get,
    path = "/v1/projects/{project_id}/history.csv",
    tag = "exports",
    security(("api_key" = []), ("ci_push_token" = [])),
    params(("project_id" = String, Path, description = "From a push response")),
    responses(
        (status = 200, description = "The history (a download)", content_type = "text/csv", body = CsvFile),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier` or `license_inactive`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such project in the key's account", body = ErrorBody),
    )
)]
pub async fn get_history_csv(
    State(state): State<AppState>,
    Path(project_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (owner, project_id) = reader(&state, &headers, &project_id).await?;
    export::project_history(&state.db, &owner.license.account_id, &project_id)
        .await?
        .map(serve)
        .ok_or_else(|| ApiError::no_project(&project_id))
}
