//! `GET /v1/projects/{project_id}/posture`: a branch's compliance posture per framework, as its
//! latest scan stands now and as each scan in a range stood when pushed. Reads take the API key
//! or a keyless CI push token, scoped like the other project reads.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use axum::Json;
use serde::Deserialize;
use tidemark_domain::{now_millis, to_rfc3339};
use tidemark_store::posture::PostureRow;
use tidemark_wire::posture::{
    FrameworkPosture, PosturePoint, PostureRange, ProjectPosture, SectionPosture,
};
use tidemark_wire::ErrorBody;

use super::exports::reader;
use super::findings::line_named;
use crate::http::error::ApiError;
use crate::state::AppState;

/// The query of a posture read.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PostureQuery {
    /// A branch name, or `pr:<number>` for a pull request; default: the project's default branch.
    #[param(
        min_length = 1,
        max_length = 255,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
    )]
    branch: Option<String>,
    /// One framework id as scans name it (`cis-aws-2.0`); default: every framework of the
    /// branch's latest scan.
    #[param(min_length = 1, max_length = 128)]
    framework: Option<String>,
    /// How far back the history goes; default `90d`.
    #[param(inline)]
    range: Option<PostureRange>,
}

impl PostureQuery {
    fn parse(uri: &Uri) -> Result<PostureQuery, ApiError> {
        let query = axum::extract::Query::<PostureQuery>::try_from_uri(uri)
            .map(|q| q.0)
            .map_err(|e| {
                ApiError::InvalidRequest(format!(
                    "the query is not one this endpoint reads ({e}): range is 7d, 30d, 90d, \
                     365d or all"
                ))
            })?;
        // What a push could have named; anything else is refused before the database sees it.
        if let Some(branch) = &query.branch {
            tidemark_domain::input::bounded_text("branch", branch, 255)
                .map_err(|e| ApiError::InvalidRequest(e.message))?;
        }
        if let Some(framework) = &query.framework {
            tidemark_domain::input::bounded_text("framework", framework, 128)
                .map_err(|e| ApiError::InvalidRequest(e.message))?;
        }
        Ok(query)
    }
}

fn point(row: &PostureRow) -> PosturePoint {
    PosturePoint {
        scan_id: row.scan_id.to_string(),
        scanned_at: to_rfc3339(row.scanned_at),
        counts: row.tally().into(),
        drifted: row.drifted(),
    }
}

/// A project's compliance posture
///
/// Per framework the branch's latest scan named: its requirements (each rule, judged over every
/// resource it was checked on) passed, failed, triaged (failing, every failing finding set aside
/// as accepted risk or false positive; never counted as passed) and not evaluated (only
/// skipped), with the share passing, now and per section (a rule's number up to its first dot);
/// and each scan in the range as it stood when pushed, with the requirements that drifted (passed
/// in the branch's previous scan, failed in that one). A rule id is a framework id, a dash and
/// the rule's number; a rule of no framework the scan named is in no framework's posture.
#[utoipa::path(
    get,
    path = "/v1/projects/{project_id}/posture",
    tag = "posture",
    security(("api_key" = []), ("ci_push_token" = [])),
    params(("project_id" = String, Path, description = "The project's id (from a push response) or its label"), PostureQuery),
    responses(
        (status = 200, description = "The branch's posture", body = ProjectPosture),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier` or `license_inactive`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such project (or branch) in the key's account", body = ErrorBody),
        (status = 422, description = "`invalid_request`: an unknown range, or a branch or framework no push could name", body = ErrorBody),
    )
)]
pub async fn get_posture(
    State(state): State<AppState>,
    Path(project): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<ProjectPosture>, ApiError> {
    let query = PostureQuery::parse(&uri)?;
    let (owner, project_id) = reader(&state, &headers, &project).await?;
    let account_id = &owner.license.account_id;
    let branch = query.branch.as_deref();
    let line = line_named(&state, account_id, &project_id, branch).await?;
    let now = now_millis();
    let days = query.range.unwrap_or_default().days();
    let framework = query.framework.as_deref();
    let posture = tidemark_services::posture::line_posture(
        &state.db,
        account_id,
        &project_id,
        &line.id,
        framework,
        days,
        now,
    )
    .await?;
    let frameworks = posture
        .map(|p| {
            let (scan_id, scanned_at) = (p.scan_id.to_string(), to_rfc3339(p.scanned_at));
            p.frameworks
                .into_iter()
                .map(|f| FrameworkPosture {
                    framework: f.framework,
                    current: PosturePoint {
                        scan_id: scan_id.clone(),
                        scanned_at: scanned_at.clone(),
                        counts: f.tally.into(),
                        drifted: f.drifted,
                    },
                    sections: f
                        .sections
                        .into_iter()
                        .map(|(section, t)| SectionPosture {
                            section,
                            counts: t.into(),
                        })
                        .collect(),
                    history: f.history.iter().map(point).collect(),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Json(ProjectPosture {
        project_id: project_id.to_string(),
        branch: line.name.clone(),
        frameworks,
    }))
}
