//! `GET /v1/projects/{project_id}/scans/{scan_id}/report`: a scan's compliance report for an
//! auditor, as a printable page, a Prowler-shaped CSV, or JSON signed with the installation's
//! published keys (issue 47). Reads take the API key or a keyless CI push token, scoped like
//! the other exports.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use serde::Deserialize;
use tidemark_wire::ids::ScanId;
use tidemark_wire::report::SignedReport;
use tidemark_wire::ErrorBody;

use super::exports::reader;
use crate::http::download::serve;
use crate::http::error::ApiError;
use crate::state::AppState;
use tidemark_services::exports::report::{scan_report, ReportFormat};
use tidemark_services::exports::ScanFindings;

/// A printable HTML page.
#[derive(utoipa::ToSchema)]
#[schema(value_type = String)]
#[expect(
    dead_code,
    reason = "only describes the response in the OpenAPI document"
)]
struct HtmlPage(String);

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReportQuery {
    /// `html` (default), `csv` or `json` (signed).
    #[param(pattern = "^(html|csv|json)$")]
    format: Option<String>,
}

/// A scan's compliance report
///
/// Per framework the scan named (and each custom framework of the account, as `custom:<id>`):
/// every requirement with its status, the resources and messages behind each failure, and each
/// triage that holds now (who, why, when, until when); the scan's provenance (cloud account,
/// branch, pull request, commit, the API key or keyless CI identity that pushed it) and the
/// posture summary. `format=html` is a page that prints cleanly to PDF; `format=csv` a
/// `;`-separated compliance CSV in Prowler's shape (one row per requirement and failing
/// resource; status `PASS`, `FAIL`, `MUTED` for a set-aside failure, `MANUAL` for one not
/// evaluated); `format=json` a `SignedReport`: `report` is the report's JSON text, and
/// `signature` a compact JWS (`typ` `tidemark-report+jwt`, EdDSA, `kid` of a key in
/// `/v1/keys`) whose payload's `report_sha256` is the SHA-256 of `report`'s UTF-8 bytes, so
/// it can be checked offline (`tidemark report verify FILE`).
#[utoipa::path(
    get,
    path = "/v1/projects/{project_id}/scans/{scan_id}/report",
    tag = "exports",
    security(("api_key" = []), ("ci_push_token" = [])),
    params(
        ("project_id" = String, Path, description = "From a push response"),
        ("scan_id" = String, Path, description = "From a push response"),
        ReportQuery,
    ),
    responses(
        (status = 200, description = "The report", content(
            (HtmlPage = "text/html"),
            (String = "text/csv"),
            (SignedReport = "application/json"),
        )),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier` or `license_inactive`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such project or scan in the key's account", body = ErrorBody),
        (status = 410, description = "`scan_thinned`: housekeeping removed this scan's findings (its row stays in the history)", body = ErrorBody),
        (status = 422, description = "`invalid_request`: a format other than html, csv or json", body = ErrorBody),
    )
)]
pub async fn get_scan_report(
    State(state): State<AppState>,
    Path((project_id, scan_id)): Path<(String, String)>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, ApiError> {
    let query = axum::extract::Query::<ReportQuery>::try_from_uri(&uri)
        .map(|q| q.0)
        .map_err(|e| {
            ApiError::InvalidRequest(format!("the query is not one this endpoint reads ({e})"))
        })?;
    let format = match query.format.as_deref() {
        None => ReportFormat::Html,
        Some(f) => ReportFormat::parse(f)
            .ok_or_else(|| ApiError::InvalidRequest("format: html, csv or json".to_owned()))?,
    };
    let (owner, project_id) = reader(&state, &headers, &project_id).await?;
    let scan_id =
        ScanId::parse(&scan_id).ok_or_else(|| ApiError::no_scan(&project_id, &scan_id))?;
    let account_id = &owner.license.account_id;
    let found = scan_report(
        &state.db,
        &state.signer,
        account_id,
        &project_id,
        &scan_id,
        format,
    )
    .await?;
    match found {
        ScanFindings::File(file) => Ok(serve(file)),
        ScanFindings::Missing => Err(ApiError::no_scan(&project_id, &scan_id)),
        ScanFindings::Thinned => Err(ApiError::ScanThinned),
    }
}
