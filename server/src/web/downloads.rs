//! The dashboard's download links: the same files, for the signed-in member's account. Not
//! signed in, `require_viewer_for_pages` has already sent the browser to sign in.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use tidemark_wire::ids::{ProjectId, ScanId};

use tidemark_services::exports::report::{scan_report, ReportFormat};
use tidemark_services::exports::{self as export, File, FindingsFormat, ScanFindings};
use tidemark_services::ServiceError;

use crate::http::download::serve;
use crate::state::AppState;

type Viewer = Option<Extension<app::auth::Viewer>>;

/// A scan whose findings housekeeping removed (410).
struct Thinned;

/// A file, none (404), or gone (410).
type Answer = Result<Option<File>, Thinned>;

fn answer(found: Result<Answer, ServiceError>) -> Response {
    match found {
        Ok(Ok(Some(file))) => serve(file),
        Ok(Ok(None)) => (StatusCode::NOT_FOUND, "Not found in this account.").into_response(),
        // The same body as /v1's (`scan_thinned`), for scripts reading either.
        Ok(Err(Thinned)) => crate::http::error::ApiError::ScanThinned.into_response(),
        Err(err) => {
            tidemark_services::log_unavailable(&err);
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "The service is unavailable right now. Try again shortly.",
            )
                .into_response()
        }
    }
}

async fn findings(
    state: &AppState,
    viewer: Viewer,
    (project_id, scan_id): (String, String),
    format: FindingsFormat,
) -> Response {
    let Some(Extension(viewer)) = viewer else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    // Ids that cannot exist are "not found" before the database sees them.
    let (Some(project_id), Some(scan_id)) =
        (ProjectId::parse(&project_id), ScanId::parse(&scan_id))
    else {
        return answer(Ok(Ok(None)));
    };
    let found = export::scan_findings(
        &state.db,
        &viewer.account_id,
        &project_id,
        &scan_id,
        format,
        &state.config.http.dashboard_url,
    )
    .await;
    answer(found.map_err(ServiceError::from).map(found_file))
}

fn found_file(found: ScanFindings) -> Answer {
    match found {
        ScanFindings::File(file) => Ok(Some(file)),
        ScanFindings::Missing => Ok(None),
        ScanFindings::Thinned => Err(Thinned),
    }
}

pub async fn findings_sarif(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(ids): Path<(String, String)>,
) -> Response {
    findings(&state, viewer, ids, FindingsFormat::Sarif).await
}

pub async fn findings_csv(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(ids): Path<(String, String)>,
) -> Response {
    findings(&state, viewer, ids, FindingsFormat::Csv).await
}

pub async fn history_csv(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(project_id): Path<String>,
) -> Response {
    let Some(Extension(viewer)) = viewer else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let Some(project_id) = ProjectId::parse(&project_id) else {
        return answer(Ok(Ok(None)));
    };
    answer(
        export::project_history(&state.db, &viewer.account_id, &project_id)
            .await
            .map_err(ServiceError::from)
            .map(Ok),
    )
}

/// The scan's compliance report (issue 47): the page, the CSV or the signed JSON.
async fn report(
    state: &AppState,
    viewer: Viewer,
    (project_id, scan_id): (String, String),
    format: ReportFormat,
) -> Response {
    let Some(Extension(viewer)) = viewer else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let (Some(project_id), Some(scan_id)) =
        (ProjectId::parse(&project_id), ScanId::parse(&scan_id))
    else {
        return answer(Ok(Ok(None)));
    };
    let found = scan_report(
        &state.db,
        &state.signer,
        &viewer.account_id,
        &project_id,
        &scan_id,
        format,
    )
    .await;
    answer(found.map(found_file))
}

pub async fn report_html(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(ids): Path<(String, String)>,
) -> Response {
    report(&state, viewer, ids, ReportFormat::Html).await
}

pub async fn report_csv(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(ids): Path<(String, String)>,
) -> Response {
    report(&state, viewer, ids, ReportFormat::Csv).await
}

pub async fn report_json(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(ids): Path<(String, String)>,
) -> Response {
    report(&state, viewer, ids, ReportFormat::Signed).await
}

/// The findings inbox's view as CSV (`/findings.csv?<the view's filters>`).
pub async fn inbox_csv(
    State(state): State<AppState>,
    viewer: Viewer,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Response {
    let Some(Extension(viewer)) = viewer else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let pairs: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let filter = app::model::InboxFilter::from_lookup(|k| pairs.get(k).cloned());
    let projects = match tidemark_services::projects::heads(&state.db, &viewer.account_id).await {
        Ok(rows) => rows
            .into_iter()
            .filter(|p| p.archived_at.is_none())
            .map(|p| (p.id.to_string(), p.label))
            .collect::<Vec<_>>(),
        Err(err) => return answer(Err(err)),
    };
    let now = tidemark_domain::now_millis();
    let query = match app::api::inbox::inbox_query(&filter, None, &projects, now) {
        Ok(q) => q,
        Err(err) => {
            return (StatusCode::UNPROCESSABLE_ENTITY, err.to_string()).into_response();
        }
    };
    answer(
        tidemark_services::findings::inbox_csv(&state.db, &viewer.account_id, &query, now)
            .await
            .map(|file| Ok(Some(file))),
    )
}
